"""Lesions as records and the patient timeline page: what a clinician sees, who may see it."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from consult.models import (
    Consultation,
    ConsultationStatus,
    Lesion,
    LesionDossier,
    LesionMeasurement,
    Plan,
)
from consult.review.report import report_context
from consult.review.selectors import review_state_get
from consult.services.consultations import consultation_start
from consult.services.dossiers import case_import, dossier_submit, dossier_update
from mdtboard.audit.hashing import payload_hash
from tests.fixtures.consultations import system_plan
from tests.page_text import page_text
from tests.paths import REPO

pytestmark = pytest.mark.django_db


def _restaging_case() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "tests/cases/hcc-40.json").read_text("utf-8"))
    data.pop("expected")
    return data


@pytest.fixture
def dossier(clinician: Any, team: Any) -> LesionDossier:
    raw = json.dumps(_restaging_case()).encode()
    result = case_import(actor=clinician, team=team, raw=raw, filename="hcc-40.json")
    assert result.dossier is not None, result.errors
    return result.dossier


def _timeline(client: Any, dossier: LesionDossier) -> Any:
    return client.get(reverse("consult:patient-timeline", args=[dossier.patient.pk]))


def test_imported_lesions_become_records_of_the_patient(dossier: LesionDossier) -> None:
    lesions = {lesion.lesion_id: lesion for lesion in dossier.patient.lesions.all()}
    assert set(lesions) == {"L1", "L2", "L3"}
    assert lesions["L1"].is_index
    assert lesions["L3"].site == "left adrenal gland"
    assert not lesions["L3"].target
    assert [m.viable_enhancing_mm for m in lesions["L1"].measurements.order_by("date")] == [
        60,
        52,
        50,
        54,
    ]


def test_timeline_shows_treatment_imaging_response_and_labs(
    client: Any, clinician: Any, dossier: LesionDossier
) -> None:
    # given a clinician of the patient's team
    client.force_login(clinician)
    # when they open the patient's timeline
    response = _timeline(client, dossier)
    # then the treatment, each scan with its computed response, and the lab trends show
    assert response.status_code == 200
    text = page_text(response.content.decode())
    assert "atezolizumab + bevacizumab" in text
    assert "ongoing" in text
    assert "Response by mRECIST (computed)" in text
    assert "PD (progressive disease)" in text
    assert "new: L3" in text
    assert "sum of target lesions = L1 54 mm + L2 18 mm = 72 mm" in text
    assert "Key laboratory values" in text
    html = response.content.decode()
    assert 'class="trend"' in html
    assert 'aria-label="AFP (ng/mL):' in html


def test_colleague_sees_the_timeline_outsider_and_rater_do_not(
    client: Any, dossier: LesionDossier, colleague: Any, outsider: Any, rater: Any
) -> None:
    client.force_login(colleague)
    assert _timeline(client, dossier).status_code == 200
    client.force_login(outsider)
    assert _timeline(client, dossier).status_code == 404
    client.force_login(rater)
    assert _timeline(client, dossier).status_code == 403


def test_patient_list_links_to_the_timeline(
    client: Any, clinician: Any, dossier: LesionDossier
) -> None:
    client.force_login(clinician)
    page = client.get(reverse("consult:patient-list")).content.decode()
    assert reverse("consult:patient-timeline", args=[dossier.patient.pk]) in page


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (
            lambda d: d["lesions"][2]["measurements"][0].update(modality="PET-CT", deauville=7),
            "Deauville score 7 is outside the five-point scale (1-5)",
        ),
        (
            lambda d: d["diagnosis"].update(date="2026-03-01"),
            "before the diagnosis date 2026-03-01",
        ),
        (
            lambda d: d["lesions"][0]["measurements"][1].update(
                longest_diameter_cm=6.6, longest_diameter_mm=None
            ),
            "millimetres",
        ),
    ],
)
def test_bad_lesion_input_saves_nothing(
    clinician: Any, team: Any, change: Any, phrase: str
) -> None:
    data = copy.deepcopy(_restaging_case())
    change(data)
    result = case_import(
        actor=clinician, team=team, raw=json.dumps(data).encode(), filename="bad.json"
    )
    assert result.dossier is None
    assert any(phrase in error.message for error in result.errors), result.errors
    assert not LesionDossier.objects.exists()
    assert not Lesion.objects.exists()
    assert not LesionMeasurement.objects.exists()


def test_editing_a_dossier_keeps_the_records_in_line(
    clinician: Any, dossier: LesionDossier
) -> None:
    # given the clinician removes the new adrenal lesion from the dossier
    data = copy.deepcopy(dossier.data)
    data["lesions"] = data["lesions"][:2]
    dossier_update(actor=clinician, dossier=dossier, data=data)
    # then its reading recorded by this dossier is gone; the others stay
    assert not LesionMeasurement.objects.filter(lesion__lesion_id="L3").exists()
    assert LesionMeasurement.objects.filter(lesion__lesion_id="L1").count() == 4


def _completed(clinician: Any, dossier: LesionDossier) -> Consultation:
    snapshot = dossier_submit(actor=clinician, dossier=dossier)
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    document = system_plan(snapshot.data)
    Consultation.objects.filter(pk=consultation.pk).update(
        status=ConsultationStatus.COMPLETED, finished_at=timezone.now()
    )
    Plan.objects.create(
        consultation=consultation, payload=document, content_hash=payload_hash(document)
    )
    return Consultation.objects.get(pk=consultation.pk)


def test_report_appendix_shows_the_course_from_the_snapshot(
    clinician: Any, dossier: LesionDossier
) -> None:
    # given a completed consultation on the restaging dossier
    consultation = _completed(clinician, dossier)
    # when the report is rendered with the course chosen for its appendix
    state = review_state_get(consultation=consultation)
    context = report_context(
        state=state,
        decided=state.decided,
        paper="a4",
        generated=timezone.now(),
        appendix=["timeline"],
    )
    text = page_text(render_to_string("review/report.html", context))
    # then its appendix carries the course with the computed response and its arithmetic
    assert "Appendix: course over time (from the dossier snapshot)" in text
    assert "Response by mRECIST (computed)" in text
    assert "new lesion(s): L3 -> progression" in text
    assert "atezolizumab + bevacizumab" in text


def test_plan_page_shows_the_computed_response_and_the_timeline_shows_the_plan(
    client: Any, clinician: Any, dossier: LesionDossier
) -> None:
    consultation = _completed(clinician, dossier)
    client.force_login(clinician)
    page = page_text(
        client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    )
    assert "Response at restaging (computed)" in page
    assert "PD by mRECIST on 2026-10-12" in page
    assert "new lesions: L3" in page
    timeline = page_text(_timeline(client, dossier).content.decode())
    assert "Plan: Lenvatinib" in timeline
    assert "response PD (mRECIST)" in timeline
