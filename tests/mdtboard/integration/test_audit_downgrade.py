"""Issue 26, finding 3: the keyed chain cannot be downgraded, and a lost anchor is an error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from mdtboard.audit.hashing import GENESIS_HASH, SCHEME_SHA256, event_hash, payload_hash
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import (
    ReanchorRefused,
    audit_reanchor,
    audit_record,
    audit_verify,
)
from tests.fixtures.audit import anchor_current_head, owner_session_without_triggers

pytestmark = pytest.mark.django_db


@pytest.fixture
def anchored(settings: Any, tmp_path: Any) -> Any:
    """Anchoring on, the anchor at the current head (as a deployment has it from its first
    event on)."""
    path = tmp_path / "audit-anchor.json"
    settings.AUDIT_ANCHOR_PATH = str(path)
    anchor_current_head()
    return path


def _recompute_whole_chain_unkeyed(*, forged_id: int) -> None:
    """The probe's attack: with the database owner's access, forge one row, then recompute
    every row from the genesis as the old unkeyed scheme (no key needed)."""
    prev = GENESIS_HASH
    with owner_session_without_triggers():
        for event in AuditEvent.objects.order_by("id"):
            if event.pk == forged_id:
                event.action = "consult.plan_signed_off"
                event.payload = {"forged": True}
            event.payload_hash = payload_hash(event.payload)
            event.prev_hash = prev
            event.hash_scheme = SCHEME_SHA256
            event.hash = event_hash(
                prev_hash=prev,
                created_at=event.created_at,
                actor_id=event.actor_id,
                actor_label=event.actor_label,
                action=event.action,
                object_type=event.object_type,
                object_id=event.object_id,
                payload_digest=event.payload_hash,
                scheme=SCHEME_SHA256,
            )
            event.save()
            prev = event.hash


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_audit_chain_recomputed_unkeyed_with_the_anchor_deleted_is_broken(
    clinician: Any, anchored: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given a keyed, anchored chain
    with django_capture_on_commit_callbacks(execute=True):
        events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(4)]
    first_id = AuditEvent.objects.order_by("id").first().pk  # type: ignore[union-attr]
    # when the owner forges a row, recomputes every row unkeyed and deletes the anchor file
    _recompute_whole_chain_unkeyed(forged_id=events[1].pk)
    anchored.unlink()
    # then the verifier reports the first unkeyed row after the cut-over as a broken link
    report = audit_verify()
    assert not report.ok
    assert report.broken_event_id == first_id
    assert "cut-over to the keyed scheme" in report.reason
    with pytest.raises(CommandError, match=f"BROKEN at event #{first_id}"):
        call_command("audit_verify")
    # and no anchor was written for the forged head, by the verifier or by a later event
    with django_capture_on_commit_callbacks(execute=True):
        audit_record(action="test.after", actor=clinician)
    assert not anchored.exists()
    # and the re-anchoring command refuses to bless the forged chain
    with pytest.raises(CommandError, match="never re-anchored"):
        call_command("audit_reanchor", reason="lost the file")
    assert not anchored.exists()


def test_audit_missing_anchor_is_an_error_never_recreated(
    clinician: Any, anchored: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given an intact chain whose anchor file went missing
    anchored.unlink()
    # when it is verified, and more events are committed
    report = audit_verify()
    with django_capture_on_commit_callbacks(execute=True):
        audit_record(action="test.after", actor=clinician)
    # then the missing anchor is an error, and nothing wrote a new one
    assert not report.ok
    assert "anchor" in report.reason
    assert "missing" in report.reason
    assert not anchored.exists()
    with pytest.raises(CommandError, match=r"NOT VERIFIED: the audit anchor .* is missing"):
        call_command("audit_verify")
    assert not anchored.exists()


def test_audit_reanchor_is_recorded_and_makes_the_chain_verify(
    clinician: Any, anchored: Any, capsys: Any
) -> None:
    # given an intact chain whose anchor file was damaged
    anchored.write_text("{")
    assert not audit_verify().ok
    # when the operator re-anchors it, giving a reason
    call_command("audit_reanchor", reason="disk replaced, anchor restored from nothing")
    # then the act is on the chain: who, why and what the damaged anchor was
    event = AuditEvent.objects.order_by("-id").first()
    assert event is not None
    assert event.action == "audit.reanchored"
    assert event.payload["reason"] == "disk replaced, anchor restored from nothing"
    assert event.payload["previous_anchor"] == "unreadable"
    assert event.payload["operator"]
    # and the anchor names that event, the damaged file is kept aside, and the chain verifies
    assert json.loads(anchored.read_text())["event_id"] == event.pk
    kept = list(anchored.parent.glob("audit-anchor.json.before-reanchor-*"))
    assert [path.read_text() for path in kept] == ["{"]
    assert audit_verify().ok
    assert "anchored at event" in capsys.readouterr().out


def test_audit_reanchor_needs_a_reason(clinician: Any, anchored: Any) -> None:
    with pytest.raises(ReanchorRefused, match="reason"):
        audit_reanchor(reason="  ", operator="ops")


def test_audit_first_event_of_an_empty_chain_creates_the_anchor(
    anchored: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given an empty log and no anchor file
    assert not AuditEvent.objects.exists()
    assert not anchored.exists()
    # when the first event is committed
    with django_capture_on_commit_callbacks(execute=True):
        event = audit_record(action="test.first")
    # then it is anchored, and an unkeyed row after it would be refused
    assert json.loads(anchored.read_text()) == {"event_id": event.pk, "hash": event.hash}
    assert audit_verify().ok
