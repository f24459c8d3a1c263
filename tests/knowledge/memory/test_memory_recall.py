"""A consultation recalls similar past cases from its second round: the Coordinator's residual
context records them under "Long-term memory", the plan lists them, the board and the plan
page show them, and the memory counts the use. With the memory empty nothing changes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from consult.learning import case_text
from consult.models import AgentMessage
from consult.services.consultations import consultation_run, consultation_start
from knowledge.memory.models import ExperienceEntry, ExperienceUse
from knowledge.memory.services import EntryDraft, experience_record
from tests.consult.integration.test_consultations import load_seed, submitted
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db(transaction=True)
CASE = "pub-hcc-03.json"  # BCLC C with untreated varices: the board needs a second round


def _remember(case: dict[str, Any]) -> ExperienceEntry:
    return experience_record(
        draft=EntryDraft(
            source="review_amend",
            source_ref="review:900001",
            cancer_type="hcc",
            case_summary=case_text(case),
            question=str(case["question"]),
            plan="Pathway: band ligation of the varices; then atezolizumab with bevacizumab.",
            initial_hypothesis="Atezolizumab with bevacizumab first.",
            error_reflection=(
                "Reason: Mr Example's endoscopy at St Elsewhere showed grade 3 varices; they had "
                "to be treated before bevacizumab."
            ),
            signals={"removed": [], "added": ["procedure"], "safety": True},
        )
    )


def _run(clinician: Any, team: Any) -> Any:
    consultation = consultation_start(
        actor=clinician, dossier=submitted(clinician, team, CASE), enqueue=False
    )
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    consultation.refresh_from_db()
    return consultation


def test_a_similar_past_case_informs_the_second_round_and_the_plan(
    client: Any, clinician: Any, team: Any
) -> None:
    # given a ChainKB entry learnt from a case like this one
    load_seed()
    entry = _remember(json.loads((PUBLIC_CASES / CASE).read_text()))
    # when the board deliberates
    consultation = _run(clinician, team)
    plan = consultation.plan.payload
    # then the plan lists the past case that informed it
    assert plan["rounds"] >= 2
    assert [p["entry_id"] for p in plan["informed_by"]] == [entry.pk]
    assert plan["informed_by"][0]["label"] == f"ChainKB #{entry.pk}"
    # and round 2's residual context records it under "Long-term memory" (round 1's does not)
    residuals = {
        m.round: m.payload["synthesis"]["residual"]["long_term_memory"]
        for m in AgentMessage.objects.filter(consultation=consultation, kind="synthesis")
    }
    assert residuals[1] == "No similar past case."
    assert f"ChainKB #{entry.pk}" in residuals[2]
    assert "band ligation of the varices" in residuals[2]
    assert "Put in: procedure. The correction concerned safety." in residuals[2]
    # but never the reviewer's free text about the other patient (it may identify them)
    assert "Mr Example" not in residuals[2]
    assert "St Elsewhere" not in residuals[2]
    # and the recall was journaled once, and counted by the memory
    assert AgentMessage.objects.filter(consultation=consultation, kind="experience").count() == 1
    assert ExperienceUse.objects.filter(entry=entry, consultation_ref=consultation.pk).exists()
    entry.refresh_from_db()
    assert entry.times_used == 1
    # and the board and the plan page show it
    client.force_login(clinician)
    board = client.get(reverse("consult:consultation-board", args=[consultation.pk]))
    assert "Past cases that informed this plan" in board.content.decode()
    assert f"ChainKB #{entry.pk}" in board.content.decode()
    assert "Mr Example" not in board.content.decode()
    page = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    assert 'id="informed-by"' in page
    assert "Consensus weights" in page


def test_with_the_memory_empty_the_plan_is_the_one_without_memory(
    clinician: Any, team: Any
) -> None:
    load_seed()
    consultation = _run(clinician, team)
    plan = consultation.plan.payload
    assert plan["informed_by"] == []
    assert ExperienceUse.objects.count() == 0


@pytest.mark.django_db
def test_the_pdf_report_names_the_past_cases_and_the_weight_version(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a plan that past cases informed, from a consultation that used weight version w2
    from consult.models import Consultation
    from consult.review import services
    from consult.review.report import report_html
    from tests.consult.review.planned import planned

    monkeypatch.setattr(services, "_enqueue_report", lambda report_id: None)

    def informed(plan: dict[str, Any]) -> None:
        plan["informed_by"] = [
            {
                "entry_id": 41,
                "kind": "correct",
                "label": "CorrectKB #41",
                "summary": "hcc. derived: bclc A",
                "lesson": "Accepted: resection.",
                "similarity": 0.93,
            }
        ]

    consultation = planned(clinician, team, "pub-hcc-01.json", edit=informed)
    Consultation.objects.filter(pk=consultation.pk).update(
        config={**consultation.config, "weight_version": "w2", "weight_offsets": {"safety": 0.2}}
    )
    consultation.refresh_from_db()
    report = services.report_request(actor=clinician, consultation=consultation, paper="a4")
    # when its report is written
    html, _ = report_html(report=report)
    # then it names the past case and the weights the board used
    assert "Past cases that informed this plan" in html
    assert "CorrectKB #41" in html
    assert "w2:" in html
    assert "safety +0.20" in html
