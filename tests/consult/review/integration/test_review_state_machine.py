"""Issue 25: decisions move forward only (accept / amend / reject, then the meeting, then the
sign-off); changing one is an explicit, audited reopening; one decision per review cycle, held
by the database as well as the state machine; twenty tabs record one accept."""

from __future__ import annotations

import importlib
import threading
import uuid
from datetime import date
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django_fsm import FSMField

from consult.review import services
from consult.review.models import ClinicianReview, PlanReview, ReviewReopen, ReviewStage
from consult.review.selectors import review_state_get
from consult.review.services import Attendee, ReviewError
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _decide(consultation: Any, actor: Any, decision: str, key: Any = None, **more: Any) -> Any:
    return services.review_decide(
        actor=actor,
        consultation=consultation,
        decision=decision,
        reason=more.pop("reason", "Not a surgical candidate" if decision == "reject" else ""),
        reason_kind=more.pop("reason_kind", "clinical" if decision == "reject" else ""),
        idempotency_key=key or uuid.uuid4(),
        base_version=more.pop("base", 1),
    )


def _reopen(consultation: Any, actor: Any, reason: str = "The team met again") -> Any:
    return services.review_reopen(
        actor=actor, consultation=consultation, reason=reason, idempotency_key=uuid.uuid4()
    )


def _meeting(consultation: Any, actor: Any) -> Any:
    return services.meeting_record(
        actor=actor,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[Attendee("Dr A", "Hepatology")],
        final_decision="As decided",
        dissent="",
        responsible_id=actor.pk,
    )


def test_the_database_trigger_allows_exactly_the_state_machines_transitions() -> None:
    # given the state machine on the model and the transitions the migration's trigger allows
    migration = importlib.import_module("consult.review.migrations.0003_review_state_machine")
    field = PlanReview._meta.get_field("stage")
    assert isinstance(field, FSMField)
    graph = {
        (str(source), str(t.target))
        for t in field.get_all_transitions(PlanReview)
        for source in ([t.source] if isinstance(t.source, str) else t.source)
    }
    # then they are the same moves, and only a reopening starts a new cycle
    assert {(a, b) for a, b, _ in migration.TRANSITIONS} == graph
    assert {(a, b) for a, b, step in migration.TRANSITIONS if step} == {
        (a, b) for a, b in graph if b == ReviewStage.AWAITING
    }


def test_a_rejected_plan_is_accepted_only_after_a_reopening_with_a_reason(
    clinician: Any, colleague: Any, team: Any
) -> None:
    # given a plan the team rejected
    consultation = completed(clinician, team)
    rejected = _decide(consultation, clinician, "reject")
    # when a colleague tries to accept it
    with pytest.raises(ReviewError, match="reopen the decision") as refused:
        _decide(consultation, colleague, "accept")
    # then it is refused, naming the decision that stands, and nothing changed
    assert "rejected version 1" in str(refused.value)
    assert ClinicianReview.objects.count() == 1
    assert review_state_get(consultation=consultation).stage == ReviewStage.REJECTED
    # a reopening needs its reason
    with pytest.raises(ReviewError, match="reason"):
        _reopen(consultation, colleague, reason="  ")
    # with the reason, the review awaits a new decision, and the accept is recorded
    _reopen(consultation, colleague, reason="New imaging: resectable after all")
    accepted = _decide(consultation, colleague, "accept")
    state = review_state_get(consultation=consultation)
    assert (state.stage, state.cycle) == (ReviewStage.ACCEPTED, 1)
    assert state.decision is not None
    assert state.decision.pk == accepted.pk
    # and the record keeps all of it, in order, audited
    assert [type(e).__name__ for e in state.history] == [
        "ClinicianReview",
        "ReviewReopen",
        "ClinicianReview",
    ]
    assert (rejected.cycle, accepted.cycle) == (0, 1)
    reopen = AuditEvent.objects.get(action="plan.review.reopen")
    assert reopen.payload["decision"] == rejected.pk


def test_the_meeting_comes_after_the_decision_and_a_reopening_asks_for_it_again(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    with pytest.raises(ReviewError, match="before the meeting"):
        _meeting(consultation, clinician)
    _decide(consultation, clinician, "accept")
    _meeting(consultation, clinician)
    assert review_state_get(consultation=consultation).stage == ReviewStage.MEETING
    _reopen(consultation, clinician)
    _decide(consultation, clinician, "reject")
    # the meeting record is kept, but the new decision needs its meeting before sign-off
    state = review_state_get(consultation=consultation)
    assert state.meeting is not None
    assert state.stage == ReviewStage.REJECTED
    with pytest.raises(ReviewError, match="meeting"):
        services.plan_sign_off(
            actor=clinician, consultation=consultation, version=1, confirmed=True
        )
    _meeting(consultation, clinician)
    services.plan_sign_off(actor=clinician, consultation=consultation, version=1, confirmed=True)
    assert review_state_get(consultation=consultation).stage == ReviewStage.SIGNED
    with pytest.raises(ReviewError, match="signed off"):
        _reopen(consultation, clinician)


def test_the_database_refuses_a_move_the_state_machine_does_not_make(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    _decide(consultation, clinician, "accept")
    review = PlanReview.objects.get(consultation=consultation)
    # straight from a decision to the sign-off, skipping the meeting
    with pytest.raises(DatabaseError, match="not a transition"), transaction.atomic():
        PlanReview.objects.filter(pk=review.pk).update(stage=ReviewStage.SIGNED)
    # back to awaiting review without starting a new cycle (a reopening without its record)
    with pytest.raises(DatabaseError, match="not a transition"), transaction.atomic():
        PlanReview.objects.filter(pk=review.pk).update(stage=ReviewStage.AWAITING)
    # a second decision in the same cycle
    with pytest.raises(IntegrityError), transaction.atomic():
        ClinicianReview.objects.create(
            consultation=consultation,
            decision="reject",
            reason="x",
            plan_number=1,
            plan_hash=consultation.plan.content_hash,
            reviewer=clinician,
            idempotency_key=uuid.uuid4(),
            cycle=0,
        )
    # a reopening, once recorded, stays as it was
    reopen = _reopen(consultation, clinician)
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        ReviewReopen.objects.filter(pk=reopen.pk).update(reason="changed")
    review.refresh_from_db()
    assert (review.stage, review.cycle) == (ReviewStage.AWAITING, 1)


@pytest.mark.django_db(transaction=True)
def test_twenty_one_tabs_record_one_accept(clinician: Any, colleague: Any, team: Any) -> None:
    # given 21 copies of the review form, each drawn in its own tab (its own key)
    consultation = completed(clinician, team)
    start = threading.Barrier(21)
    outcomes: list[Any] = []

    def accept(actor: Any) -> None:
        try:
            start.wait()
            outcomes.append(_decide(consultation, actor, "accept").pk)
        except ReviewError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [
        threading.Thread(target=accept, args=(clinician if i % 2 else colleague,))
        for i in range(21)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then one accept is recorded; the 20 others are told the decision is already recorded
    assert ClinicianReview.objects.count() == 1
    accepted = ClinicianReview.objects.get()
    assert outcomes.count(accepted.pk) == 1
    refused = [o for o in outcomes if isinstance(o, str)]
    assert len(refused) == 20
    assert all("decision on this plan is recorded" in o for o in refused)
    assert AuditEvent.objects.filter(action="plan.review.accept").count() == 1
