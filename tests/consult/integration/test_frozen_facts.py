"""Derived facts are computed once, when the dossier is submitted, and frozen with its snapshot:
a calculator that changes afterwards changes nothing a clinician reads of that snapshot (plan
page, PDF, plan JSON, FHIR CarePlan, case record), until a clinician recomputes them, which is
audited and makes a new snapshot."""

from __future__ import annotations

import importlib
import io
import json
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.db import DatabaseError, connection, transaction
from django.urls import reverse
from pypdf import PdfReader

import clinical.frozen
from clinical.calculators.derive import CALCULATORS_BY_CANCER_TYPE
from clinical.results import CalcResult
from consult.models import DossierSnapshot, FactsOrigin
from consult.review import services as review_services
from consult.services.consultations import consultation_run, consultation_start
from consult.services.dossiers import DossierError, snapshot_recompute
from mdtboard.audit.models import AuditEvent
from mdtboard.core.dbroles import database_owner
from tests.fixtures.consultations import completed, signed_off, submitted
from tests.fixtures.seed import load_seed
from tests.page_text import page_text

pytestmark = pytest.mark.django_db

# What a calculator changed after submission says of pub-hcc-01 (whose BCLC stage is A): a
# value no calculator gives, so that seeing it anywhere means the facts were computed again.
LATER = "stage-by-a-later-calculator"


def _later_bclc(case: Any) -> CalcResult:
    return CalcResult(
        name="bclc", value=LATER, inputs_used={}, inputs_missing=[], source="a later version"
    )


NEXT_VERSION = "test-next+000000000000"


def _change_calculators(monkeypatch: pytest.MonkeyPatch) -> None:
    """The BCLC calculator changes (and with it the version of the code that computes facts)."""
    monkeypatch.setitem(CALCULATORS_BY_CANCER_TYPE["hcc"], "bclc", _later_bclc)
    monkeypatch.setattr(clinical.frozen, "FACTS_VERSION", NEXT_VERSION)


def _pdf_text(consultation: Any, clinician: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(review_services, "_enqueue_report", lambda report_id: None)
    report = review_services.report_request(actor=clinician, consultation=consultation, paper="a4")
    assert review_services.report_render(report_id=report.pk) == "done"
    report.refresh_from_db()
    data = review_services.report_path(report).read_bytes()
    pages = PdfReader(io.BytesIO(data)).pages
    return " ".join(" ".join(page.extract_text() for page in pages).split())


@pytest.mark.slow
def test_a_calculator_changed_after_submission_changes_nothing_shown_of_the_snapshot(
    client: Any, clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a signed plan on pub-hcc-01, whose snapshot froze BCLC stage A
    consultation = completed(clinician, team, "pub-hcc-01.json")
    snapshot = consultation.snapshot
    assert snapshot.frozen.derived["bclc"].value == "A"
    assert consultation.plan.payload["staging"]["bclc"] == "A"
    signed_off(clinician, consultation)
    # when the BCLC calculator changes afterwards
    _change_calculators(monkeypatch)
    client.force_login(clinician)
    # then the plan page shows the frozen stage
    page = page_text(client.get(reverse("consult:plan-detail", args=[consultation.pk])).text)
    assert "BCLC stage: A" in page
    assert LATER not in page
    # the PDF report, its derived facts included, shows it too
    pdf = _pdf_text(consultation, clinician, monkeypatch)
    assert "BCLC stage A" in pdf
    assert LATER not in pdf
    assert snapshot.facts_version in pdf
    # and so do the exports: the plan JSON, the FHIR CarePlan, the case record
    plan = client.get(reverse("consult:plan-json", args=[consultation.pk])).json()
    assert plan["staging"]["bclc"] == "A"
    careplan = client.get(reverse("consult:plan-careplan", args=[consultation.pk])).text
    notes = " ".join(n["text"] for n in json.loads(careplan)["note"])
    assert "BCLC stage A" in notes
    assert f"dossier snapshot {snapshot.number}" in notes
    record = client.get(reverse("review:case-record", args=[consultation.pk])).json()
    frozen = record["dossier_snapshot"]["derived_facts"]
    assert frozen["results"]["bclc"]["value"] == "A"
    assert frozen["version"] == snapshot.facts_version
    for export in (json.dumps(plan), careplan, json.dumps(record)):
        assert LATER not in export


def test_the_dossier_page_shows_the_frozen_facts_and_offers_a_recompute_when_outdated(
    client: Any, clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a dossier submitted (BCLC stage A frozen), then the calculators change
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    _change_calculators(monkeypatch)
    client.force_login(clinician)
    # when the clinician opens it
    html = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).text
    # then it shows the stage frozen at submission, says so, and offers to recompute
    row = html.split('id="derived-bclc"', 1)[1].split("</tr>", 1)[0]
    assert "<strong>A</strong>" in row
    assert LATER not in html
    assert "Frozen with snapshot 1" in page_text(html)
    assert "The calculators have changed since these facts were computed" in page_text(html)
    assert reverse("consult:dossier-recompute", args=[dossier.pk]) in html

    # when the clinician recomputes
    response = client.post(reverse("consult:dossier-recompute", args=[dossier.pk]))
    assert response.status_code == 302
    # then a new snapshot holds today's values, and the first keeps its own
    first, second = dossier.snapshots.order_by("number")
    assert first.frozen.derived["bclc"].value == "A"
    assert second.frozen.derived["bclc"].value == LATER
    assert second.content_hash == first.content_hash
    assert second.facts_origin == FactsOrigin.RECOMPUTE
    assert second.facts_version == NEXT_VERSION
    # the audit log says who recomputed what (the names of the facts, not their values)
    event = AuditEvent.objects.get(action="dossier.recompute", object_id=str(dossier.pk))
    assert event.actor_id == clinician.pk
    assert event.payload["changed"] == ["bclc"]
    assert event.payload["from_snapshot"] == first.pk
    assert LATER not in json.dumps(event.payload)
    # and the page no longer offers it
    after = page_text(client.get(response["Location"]).text)
    assert "Facts recomputed as snapshot 2" in after
    assert "The calculators have changed" not in after
    assert "Frozen with snapshot 2" in after


def test_a_recompute_with_unchanged_calculators_is_refused_with_a_reason(
    clinician: Any, team: Any
) -> None:
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    with pytest.raises(DossierError, match="would change nothing"):
        snapshot_recompute(actor=clinician, dossier=dossier)
    assert dossier.snapshots.count() == 1


def test_a_clinician_of_another_team_cannot_recompute(
    client: Any,
    clinician: Any,
    team: Any,
    outsider: Any,
    rater: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    _change_calculators(monkeypatch)
    for user, status in ((outsider, 404), (rater, 403)):
        client.force_login(user)
        url = reverse("consult:dossier-recompute", args=[dossier.pk])
        assert client.post(url).status_code == status
    assert dossier.snapshots.count() == 1


def test_a_draft_shows_facts_computed_now_and_says_they_are_not_frozen(
    client: Any, clinician: Any, dossier: Any
) -> None:
    client.force_login(clinician)
    text = page_text(client.get(reverse("consult:dossier-detail", args=[dossier.pk])).text)
    assert "Computed now from the draft" in text
    assert "Recompute facts" not in text


@pytest.mark.django_db(transaction=True)
def test_snapshots_made_before_facts_were_frozen_are_backfilled(clinician: Any, team: Any) -> None:
    # given a snapshot as older versions wrote it: no frozen facts
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    current = dossier.snapshots.get()
    old = DossierSnapshot.objects.create(
        dossier=dossier,
        number=2,
        data=current.data,
        content_hash=current.content_hash,
        submitted_by=clinician,
    )
    assert old.facts == {}
    # when the data migration runs (as migrations do: as the tables' owner)
    migration = importlib.import_module("consult.migrations.0008_backfill_snapshot_facts")
    with database_owner(), transaction.atomic(), connection.schema_editor() as editor:
        migration.backfill(django_apps, editor)
    # then the old snapshot has facts, marked as backfilled, and the other is left as it was
    old.refresh_from_db()
    assert old.facts_origin == FactsOrigin.BACKFILL
    assert old.frozen.derived["bclc"].value == "A"
    assert old.facts_version == clinical.frozen.FACTS_VERSION
    current_again = DossierSnapshot.objects.get(pk=current.pk)
    assert current_again.facts_origin == FactsOrigin.SUBMISSION
    assert current_again.facts == current.facts
    # and the table is append-only again, even to its owner
    with (
        database_owner(),
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
    ):
        DossierSnapshot.objects.filter(pk=old.pk).update(facts_version="x")


@pytest.mark.django_db(transaction=True)
def test_a_consultation_deliberates_on_the_facts_frozen_at_submission(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a dossier submitted with BCLC stage A, then a calculator that would say otherwise
    load_seed()
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    _change_calculators(monkeypatch)
    # when the board deliberates on its snapshot
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    # then the plan's staging is the frozen one, and nothing the later calculator said
    consultation.refresh_from_db()
    plan = consultation.plan.payload
    assert plan["staging"]["bclc"] == "A"
    assert LATER not in json.dumps(plan)
