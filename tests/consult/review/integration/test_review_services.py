"""The team's decision on a plan: versions, idempotency, stale forms, sign-off, audit."""

from __future__ import annotations

import threading
import uuid
from datetime import date
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from consult.models import Plan
from consult.review import services
from consult.review.models import ClinicianReview, PlanVersion, SignOff
from consult.review.selectors import review_state_get
from consult.review.services import Attendee, ComponentEdit, ReviewError, ReviewForbidden
from mdtboard.audit.hashing import canonical_json, payload_hash
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_verify
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _edits(consultation: Any, **changes: Any) -> list[ComponentEdit]:
    """The current components as the amend form sends them back, the first one changed."""
    components = review_state_get(consultation=consultation).current.payload["recommendation"][
        "components"
    ]
    edits = []
    for index, c in enumerate(components):
        edit = ComponentEdit(
            source=index,
            role=c["role"],
            position=c.get("order") if c["role"] == "primary" else c.get("rank"),
            modality=c["modality"],
            description=c["description"],
            agents=list(c.get("agents") or []),
            dose_adjustments=list(c.get("dose_adjustments") or []),
            when=c.get("when") or "",
        )
        if index == 0:
            edit = ComponentEdit(**{**edit.__dict__, **changes})
        edits.append(edit)
    return edits


def _amend(consultation: Any, actor: Any, base: int = 1, key: Any = None, **changes: Any) -> Any:
    return services.plan_amend(
        actor=actor,
        consultation=consultation,
        edits=_edits(consultation, **changes),
        reason="Patient prefers ablation after counselling",
        idempotency_key=key or uuid.uuid4(),
        base_version=base,
    )


def test_amend_makes_version_2_and_leaves_version_1_byte_identical(
    clinician: Any, team: Any
) -> None:
    # given the board's plan, its stored bytes and hash
    consultation = completed(clinician, team)
    before = Plan.objects.get(consultation=consultation)
    stored = canonical_json(before.payload)
    # when a clinician changes the first pathway item
    version = _amend(consultation, clinician, description="Laparoscopic segmentectomy VI")
    # then version 2 exists, hashed over its own content, and says what it amends
    assert (version.number, version.based_on) == (2, 1)
    assert version.content_hash == payload_hash(version.payload)
    assert version.content_hash != before.content_hash
    assert version.payload["amendment"]["based_on_hash"] == before.content_hash
    first = version.payload["recommendation"]["components"][0]
    assert first["description"] == "Laparoscopic segmentectomy VI"
    assert first["evidence"] == before.payload["recommendation"]["components"][0]["evidence"]
    # and version 1 is byte for byte what it was, with the same hash
    after = Plan.objects.get(consultation=consultation)
    assert canonical_json(after.payload) == stored
    assert after.content_hash == before.content_hash == payload_hash(after.payload)
    # and the changed item is marked as not checked by the safety gate
    unchecked = [
        g for g in version.payload["safety"]["gates"] if g["gate"] == "amendment_not_rechecked"
    ]
    assert unchecked[0]["status"] == "unknown"
    assert unchecked[0]["applies_to"] == ["Laparoscopic segmentectomy VI"]
    # and the team's decision is "amended", on version 2
    review = ClinicianReview.objects.get(consultation=consultation)
    assert (review.decision, review.plan_number) == ("amend", 2)


def test_plan_versions_and_reviews_cannot_be_changed_in_the_database(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    version = _amend(consultation, clinician, description="Changed")
    for model, pk in ((PlanVersion, version.pk), (Plan, consultation.plan.pk)):
        # the app's database role may not update them (and the owner would meet the trigger)
        with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
            model.objects.filter(pk=pk).update(content_hash="0" * 64)


def test_an_alternative_needs_its_when_and_nothing_is_saved_on_error(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    with pytest.raises(ReviewError) as error:
        _amend(consultation, clinician, role="alternative", when="")
    assert any("when" in e for e in error.value.errors)
    assert not PlanVersion.objects.exists()
    assert not ClinicianReview.objects.exists()


def test_the_same_submission_twice_saves_one_review_and_one_version(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    amend_key = uuid.uuid4()
    v2 = _amend(consultation, clinician, key=amend_key, description="Laparoscopic resection")
    again = _amend(consultation, clinician, key=amend_key, description="Laparoscopic resection")
    assert again.pk == v2.pk
    assert PlanVersion.objects.count() == 1
    assert ClinicianReview.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_presses_of_the_button_save_one_review(clinician: Any, team: Any) -> None:
    # given two requests carrying the same form's key, arriving together
    consultation = completed(clinician, team)
    key = uuid.uuid4()
    start = threading.Barrier(2)
    outcomes: list[Any] = []

    def press() -> None:
        try:
            start.wait()
            outcomes.append(
                services.review_decide(
                    actor=clinician,
                    consultation=consultation,
                    decision="reject",
                    reason="Not a surgical candidate",
                    reason_kind="clinical",
                    idempotency_key=key,
                    base_version=1,
                ).pk
            )
        except Exception as exc:  # noqa: BLE001 - recorded and asserted below
            outcomes.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=press) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then one review exists, and both requests were answered with it
    assert ClinicianReview.objects.count() == 1
    assert outcomes == [ClinicianReview.objects.get().pk] * 2


def test_a_form_filled_against_an_older_version_is_refused(
    clinician: Any, colleague: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    _amend(consultation, colleague, description="Colleague's change")
    services.review_reopen(
        actor=colleague,
        consultation=consultation,
        reason="More changes to discuss",
        idempotency_key=uuid.uuid4(),
    )
    with pytest.raises(ReviewError, match="now version 2"):
        services.review_decide(
            actor=clinician,
            consultation=consultation,
            decision="accept",
            reason="",
            idempotency_key=uuid.uuid4(),
            base_version=1,
        )


def test_reject_needs_a_reason(clinician: Any, team: Any) -> None:
    consultation = completed(clinician, team)
    with pytest.raises(ReviewError, match="reason"):
        services.review_decide(
            actor=clinician,
            consultation=consultation,
            decision="reject",
            reason="  ",
            idempotency_key=uuid.uuid4(),
            base_version=1,
        )


def _sign_off(consultation: Any, actor: Any, version: int = 1) -> Any:
    return services.plan_sign_off(
        actor=actor, consultation=consultation, version=version, confirmed=True
    )


def _meeting(consultation: Any, actor: Any, responsible: Any) -> Any:
    return services.meeting_record(
        actor=actor,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[Attendee("Dr A", "Hepatobiliary surgery"), Attendee("Dr B", "Radiology")],
        final_decision="Resection",
        dissent="Radiology preferred ablation",
        responsible_id=responsible.pk,
    )


def test_only_the_responsible_clinician_signs_off_and_then_the_review_is_closed(
    clinician: Any, colleague: Any, admin_user: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    # sign-off needs a decision and a meeting first
    with pytest.raises(ReviewError, match="decision"):
        _sign_off(consultation, clinician)
    services.review_decide(
        actor=admin_user,  # an administrator may review
        consultation=consultation,
        decision="accept",
        reason="",
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )
    with pytest.raises(ReviewError, match="meeting"):
        _sign_off(consultation, clinician)
    _meeting(consultation, clinician, responsible=colleague)
    # but only the clinician the meeting named signs, and never an administrator
    with pytest.raises(ReviewForbidden, match="responsible clinician"):
        _sign_off(consultation, clinician)
    with pytest.raises(ReviewForbidden):
        _sign_off(consultation, admin_user)
    # and only once they confirmed, naming the version they sign
    with pytest.raises(ReviewError, match="Confirm"):
        services.plan_sign_off(
            actor=colleague, consultation=consultation, version=1, confirmed=False
        )
    with pytest.raises(ReviewError, match="version 1"):
        services.plan_sign_off(
            actor=colleague, consultation=consultation, version=2, confirmed=True
        )
    assert not SignOff.objects.exists()
    signed = _sign_off(consultation, colleague)
    assert (signed.plan_number, signed.plan_hash) == (1, consultation.plan.content_hash)
    # after which nothing about the review changes
    with pytest.raises(ReviewError, match="signed off"):
        _amend(consultation, clinician, base=1, description="Too late")
    with pytest.raises(ReviewError, match="signed off"):
        _meeting(consultation, clinician, responsible=clinician)
    assert SignOff.objects.count() == 1


def test_the_responsible_clinician_must_be_of_the_team(
    clinician: Any, outsider: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    with pytest.raises(ReviewError, match="responsible clinician"):
        _meeting(consultation, clinician, responsible=outsider)


def test_every_review_action_is_audited_in_an_unbroken_chain(clinician: Any, team: Any) -> None:
    consultation = completed(clinician, team)
    _amend(consultation, clinician, description="Changed")
    _meeting(consultation, clinician, responsible=clinician)
    _sign_off(consultation, clinician, version=2)
    services.case_record_export(actor=clinician, consultation=consultation)
    services.plan_version_export(actor=clinician, consultation=consultation, number=2)
    actions = list(
        AuditEvent.objects.filter(actor=clinician).values_list("action", flat=True).order_by("id")
    )
    assert actions[-5:] == [
        "plan.review.amend",
        "plan.meeting.record",
        "plan.sign_off",
        "consultation.record.export",
        "plan.export",
    ]
    assert audit_verify().ok


def test_case_record_holds_snapshot_events_versions_reviews_and_meeting(
    clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    _amend(consultation, clinician, description="Changed")
    _meeting(consultation, clinician, responsible=clinician)
    record = services.case_record(consultation=consultation)
    assert record["format"] == "mdtboard.case-record/1"
    assert record["dossier_snapshot"]["content_hash"] == consultation.snapshot.content_hash
    assert record["dossier_snapshot"]["data"]["case_id"] == "pub-hcc-01"
    assert [v["number"] for v in record["plan_versions"]] == [1, 2]
    assert record["plan_versions"][0]["plan"] == consultation.plan.payload
    assert [r["decision"] for r in record["reviews"]] == ["amend"]
    assert record["meeting"]["dissent"] == "Radiology preferred ablation"
    assert record["meeting"]["attendees"][1] == {"name": "Dr B", "specialty": "Radiology"}
    assert isinstance(record["events"], list)
