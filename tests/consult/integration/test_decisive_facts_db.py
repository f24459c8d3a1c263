"""Decisive facts on a consultation run through the database retriever, as a clinician starts it
(issue 23): the plan of an early HCC at ECOG 0 says that at ECOG 1 it would be BCLC C and the
pathway would change, as the offline plan of the same case does."""

from __future__ import annotations

from typing import Any

import pytest

from consult.services.consultations import consultation_run, consultation_start
from tests.fixtures.consultations import submitted
from tests.fixtures.seed import load_seed


@pytest.mark.django_db(transaction=True)
def test_a_consultation_reports_the_performance_status_that_would_change_its_pathway(
    clinician: Any, team: Any
) -> None:
    load_seed()
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    consultation.refresh_from_db()
    plan = consultation.plan.payload
    decisive = plan["decisive_facts"]
    assert plan["variations_tried"] >= 1
    assert any("ECOG 1" in str(d) and "BCLC" in str(d) for d in decisive), decisive
