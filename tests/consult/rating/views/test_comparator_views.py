"""Clinicians record the human MDT plan for their team's dossiers: by hand or as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from consult.rating.models import ComparatorPlan
from mdtboard.audit.models import AuditEvent
from tests.consult.rating.support import COMPARATOR
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


@pytest.fixture
def dossier(clinician: Any, team: Any) -> Any:
    return completed(clinician, team, "pub-hcc-01.json").dossier


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _entry(**fields: str) -> dict[str, str]:
    data = {
        "intent": "curative",
        "c1-role": "primary",
        "c1-modality": "surgery",
        "c1-description": "Laparoscopic resection of segment VI",
        "c2-role": "primary",
        "c2-modality": "antiviral",
        "c2-description": "Entecavir 0.5 mg daily",
        "c3-role": "alternative",
        "c3-modality": "ablation",
        "c3-description": "Microwave ablation",
        "c3-when": "if surgery is declined",
        "precautions": "Renal function before entecavir\nNo NSAIDs after surgery",
        "not_advised": "Sorafenib: not indicated at BCLC A",
        "m1-phase": "intermediate_3_12m",
        "m1-what": "Liver MRI and AFP",
        "m1-interval": "every 3 months",
        "m1-anchor": "mRECIST",
        "minutes": "35",
    }
    data.update(fields)
    return data


def test_a_clinician_enters_the_mdt_plan_section_by_section(clinician: Any, dossier: Any) -> None:
    client = _client(clinician)
    # when the clinician fills in the form
    response = client.post(reverse("rating:comparator-edit", args=[dossier.pk]), _entry())
    # then version 1 is saved as mdtboard.plan/1 and shown as raters will see it
    comparator = ComparatorPlan.objects.get(dossier=dossier)
    assert response.status_code == 302
    assert comparator.number == 1
    assert comparator.minutes_to_write == 35
    components = comparator.payload["recommendation"]["components"]
    assert [(c["role"], c["modality"]) for c in components] == [
        ("primary", "surgery"),
        ("primary", "antiviral"),
        ("alternative", "ablation"),
    ]
    assert comparator.payload["rejected_options"] == [
        {"option": "Sorafenib", "reason": "not indicated at BCLC A"}
    ]
    page = client.get(response["Location"]).content.decode()
    assert "Microwave ablation" in page
    assert "Chosen if:</strong> Surgery is declined" in page
    # the clinician did not attest writing it without the system's plan: the record says so
    assert not comparator.attested_blind
    assert "not attested as written without the system" in page
    assert AuditEvent.objects.filter(action="comparator.create").exists()
    # when they edit it, then a second version is kept beside the first
    client.post(
        reverse("rating:comparator-edit", args=[dossier.pk]),
        _entry(**{"c1-description": "Open resection"}),
    )
    assert list(
        ComparatorPlan.objects.filter(dossier=dossier).values_list("number", flat=True)
    ) == [2, 1]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"c3-when": ""}, "Treatments, entry 3, when: is required."),
        ({"c1-role": "", "c2-role": ""}, "Treatments, entry 1, role: is required"),
        ({"c4-role": "primary"}, "Treatment row 4: describe the treatment, or clear the row."),
        ({"minutes": "soon"}, "Time taken: a whole number of minutes"),
        ({"m1-phase": ""}, "Follow-up, entry 1, phase: is required"),
    ],
)
def test_an_incomplete_form_is_refused_and_nothing_saved(
    clinician: Any, dossier: Any, fields: dict[str, str], message: str
) -> None:
    response = _client(clinician).post(
        reverse("rating:comparator-edit", args=[dossier.pk]), _entry(**fields)
    )
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ComparatorPlan.objects.exists()
    # what was typed is still there to correct
    assert "Laparoscopic resection of segment VI" in response.content.decode()


def test_a_plan_is_imported_as_json_and_a_bad_one_lists_its_errors(
    clinician: Any, dossier: Any
) -> None:
    client = _client(clinician)
    url = reverse("rating:comparator-import", args=[dossier.pk])
    bad = {**COMPARATOR, "monitoring": [{"phase": "soon", "what": ""}]}
    response = client.post(url, {"text": json.dumps(bad)})
    assert response.status_code == 422
    html = response.content.decode()
    assert "$.monitoring[0].phase" in html
    assert "$.monitoring[0].what" in html
    assert not ComparatorPlan.objects.exists()
    upload = SimpleUploadedFile("mdt.json", json.dumps(COMPARATOR).encode(), "application/json")
    response = client.post(url, {"file": upload, "minutes": "20"})
    assert response.status_code == 302
    comparator = ComparatorPlan.objects.get()
    assert comparator.source == "imported"
    assert comparator.minutes_to_write == 20


def test_another_teams_clinician_finds_no_such_dossier(outsider: Any, dossier: Any) -> None:
    client = _client(outsider)
    assert client.get(reverse("rating:comparator-edit", args=[dossier.pk])).status_code == 404
    response = client.post(reverse("rating:comparator-edit", args=[dossier.pk]), _entry())
    assert response.status_code == 404
    assert not ComparatorPlan.objects.exists()
    assert (
        f"dossier-{dossier.pk}"
        not in client.get(reverse("rating:comparator-list")).content.decode()
    )
