"""The team's recorded decision becomes the comparator plan of rating studies in one step,
recorded as what it is: made from the system's plan, so not an independent comparator (rating
asks review for the decision; review knows nothing of rating)."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

import pytest

from consult.rating.blinding import blind_plan
from consult.rating.models import ComparatorPlan
from consult.rating.services import RatingServiceError, comparator_from_mdt_decision
from consult.review import services
from consult.review.selectors import review_state_get
from consult.review.services import Attendee, ComponentEdit
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _amend_to_ablation(consultation: Any, actor: Any) -> Any:
    """The MDT puts ablation first and rules the board's first item out."""
    components = review_state_get(consultation=consultation).current.payload["recommendation"][
        "components"
    ]
    first = components[0]
    edits = [
        ComponentEdit(
            source=None,
            role="primary",
            position=1,
            modality="ablation",
            description="Microwave ablation of the segment VI lesion",
            agents=[],
            dose_adjustments=[],
            when="",
        ),
        ComponentEdit(
            source=0,
            role="rejected",
            position=None,
            modality=first["modality"],
            description=first["description"],
            agents=list(first.get("agents") or []),
            dose_adjustments=[],
            when="",
        ),
    ]
    return services.plan_amend(
        actor=actor,
        consultation=consultation,
        edits=edits,
        reason="Patient declines surgery",
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )


def _meeting(consultation: Any, actor: Any, final: str = "Ablation; no surgery") -> Any:
    return services.meeting_record(
        actor=actor,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[Attendee("Dr A", "Hepatology"), Attendee("Dr B", "Interventional radiology")],
        final_decision=final,
        dissent="",
        responsible_id=actor.pk,
    )


def _decide(consultation: Any, actor: Any, decision: str, reason: str = "", base: int = 1) -> Any:
    return services.review_decide(
        actor=actor,
        consultation=consultation,
        decision=decision,
        reason=reason,
        reason_kind="clinical" if decision == "reject" else "",
        idempotency_key=uuid.uuid4(),
        base_version=base,
    )


def _sign_off(consultation: Any, actor: Any, version: int) -> Any:
    return services.plan_sign_off(
        actor=actor, consultation=consultation, version=version, confirmed=True
    )


def test_an_amended_signed_off_decision_becomes_the_comparator_once(
    clinician: Any, team: Any
) -> None:
    # given a plan the MDT amended, recorded and signed off
    consultation = completed(clinician, team)
    version = _amend_to_ablation(consultation, clinician)
    _meeting(consultation, clinician)
    _sign_off(consultation, clinician, version=2)
    amended = version.payload["recommendation"]["components"]
    # when a clinician turns the decision into the comparator, twice (a double click)
    first = comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    again = comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    # then one comparator exists: the amended pathway, in the meeting's words
    assert again.pk == first.pk
    assert ComparatorPlan.objects.count() == 1
    assert (first.number, first.source, first.derived_decision) == (1, "mdt_decision", "amend")
    # and it says it was made from the system's plan: not an independent comparator
    assert not first.independent
    assert first.provenance == "the team's decision on the system's plan (amended it)"
    payload = first.payload
    assert payload["recommendation"]["summary"] == "Ablation; no surgery"
    pathway = [c["description"] for c in payload["recommendation"]["components"]]
    assert pathway[0] == "Microwave ablation of the segment VI lesion"
    assert [c["description"] for c in amended] == pathway
    # the option the MDT ruled out is there with the MDT's reason, without a give-away prefix
    reasons = {r["option"]: r["reason"] for r in payload["rejected_options"]}
    board_first = consultation.plan.payload["recommendation"]["components"][0]["description"]
    assert reasons[board_first] == "Patient declines surgery"
    # and nothing a rater could tell the people's plan by: no review note, no amendment record
    assert "amendment" not in payload
    assert all(g["gate"] != "amendment_not_rechecked" for g in payload["safety"]["gates"])
    blind = blind_plan(payload)
    shown = repr(blind)
    assert "MDT" not in shown
    assert "amendment" not in shown.lower()
    # audited once, naming the decision it came from
    events = AuditEvent.objects.filter(action="comparator.create")
    assert events.count() == 1
    decision = review_state_get(consultation=consultation).decision
    assert events.get().payload["source_ref"] == f"review.decision:{decision.pk}:plan-v2"


def test_a_corrected_meeting_record_makes_a_new_comparator_version(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    _decide(consultation, clinician, "accept")
    _meeting(consultation, clinician, final="Resection")
    first = comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    assert first.derived_decision == "accept"
    # the accepted plan is the board's version 1
    assert [c["description"] for c in first.payload["recommendation"]["components"]] == [
        c["description"]
        for c in consultation.plan.payload["recommendation"]["components"]
        if c["role"] in ("primary", "alternative")
    ]
    _meeting(consultation, clinician, final="Resection with antiviral cover")
    second = comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    assert (first.number, second.number) == (1, 2)
    assert second.payload["recommendation"]["summary"] == "Resection with antiviral cover"
    # the earlier version is kept as raters may have scored it
    first.refresh_from_db()
    assert first.payload["recommendation"]["summary"] == "Resection"


def test_no_comparator_without_a_decision_and_a_meeting_or_from_a_rejection(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    with pytest.raises(RatingServiceError, match="decision"):
        comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    _decide(consultation, clinician, "accept")
    with pytest.raises(RatingServiceError, match="meeting"):
        comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    _meeting(consultation, clinician)
    services.review_reopen(
        actor=clinician,
        consultation=consultation,
        reason="The team met again and rejected it",
        idempotency_key=uuid.uuid4(),
    )
    # a reopened decision is not the team's decision any more
    with pytest.raises(RatingServiceError, match="decision"):
        comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    _decide(consultation, clinician, "reject", reason="Wrong stage")
    _meeting(consultation, clinician)
    with pytest.raises(RatingServiceError, match="comparator page"):
        comparator_from_mdt_decision(actor=clinician, consultation=consultation)
    assert not ComparatorPlan.objects.exists()
    assert not AuditEvent.objects.filter(action="comparator.create").exists()
