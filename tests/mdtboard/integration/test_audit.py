"""The audit log: one chain, append-only in the database, tampering found by audit_verify."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import DatabaseError, transaction
from django.urls import reverse
from django.utils import timezone

from mdtboard.audit.anchor import anchor_advance
from mdtboard.audit.hashing import (
    GENESIS_HASH,
    SCHEME_HMAC,
    SCHEME_SHA256,
    event_hash,
    payload_hash,
)
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import (
    SCHEME_DOWNGRADE,
    audit_record,
    audit_subscription,
    audit_verify,
)
from mdtboard.core.dbroles import database_owner
from tests.fixtures.audit import anchor_current_head, owner_session_without_triggers
from tests.fixtures.personas import PASSWORD
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.django_db


def test_audit_record_links_each_event_to_the_previous(clinician: Any) -> None:
    # given a log that already holds the events of creating the persona
    before = AuditEvent.objects.count()
    # when two more events are recorded
    first = audit_record(action="test.first", actor=clinician, payload={"n": 1})
    second = audit_record(action="test.second", actor=clinician, payload={"n": 2})
    # then they chain, and the whole chain verifies
    assert second.prev_hash == first.hash
    assert AuditEvent.objects.order_by("id").first().prev_hash == GENESIS_HASH
    report = audit_verify()
    assert report.ok
    assert report.checked == before + 2


@pytest.mark.parametrize("operation", ["update", "delete"])
def test_audit_database_refuses_changes(clinician: Any, operation: str) -> None:
    # given an event
    event = audit_record(action="test.keep", actor=clinician)
    queryset = AuditEvent.objects.filter(pk=event.pk)
    change = queryset.update if operation == "update" else queryset.delete
    kwargs = {"action": "test.rewritten"} if operation == "update" else {}
    # when the application tries to change or remove it, even bypassing the model layer
    with (
        pytest.raises(DatabaseError, match="permission denied for table audit_auditevent"),
        transaction.atomic(),
    ):
        change(**kwargs)
    # then it is unchanged
    event.refresh_from_db()
    assert event.action == "test.keep"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation", ["update", "delete"])
def test_audit_trigger_refuses_changes_even_to_the_owner(clinician: Any, operation: str) -> None:
    # given an event, and a session as the table's owner (which has the privileges)
    event = audit_record(action="test.keep", actor=clinician)
    # when the owner tries to change or remove it
    queryset = AuditEvent.objects.filter(pk=event.pk)
    change = queryset.update if operation == "update" else queryset.delete
    kwargs = {"action": "test.rewritten"} if operation == "update" else {}
    with database_owner(), pytest.raises(DatabaseError, match="append-only"):
        change(**kwargs)
    # then the trigger refused it: it is unchanged
    event.refresh_from_db()
    assert event.action == "test.keep"


_replica_session = owner_session_without_triggers


def _tamper(event_id: int, **changes: Any) -> None:
    with _replica_session():
        AuditEvent.objects.filter(pk=event_id).update(**changes)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_audit_verify_reports_first_tampered_event(clinician: Any) -> None:
    # given a chain of five events
    events = [audit_record(action=f"test.{i}", actor=clinician, payload={"i": i}) for i in range(5)]
    # when the payload of the third is edited behind the application's back
    _tamper(events[2].pk, payload={"i": 99})
    # then verification names exactly that event
    report = audit_verify()
    assert not report.ok
    assert report.broken_event_id == events[2].pk
    assert "payload" in report.reason
    with pytest.raises(CommandError, match=f"BROKEN at event #{events[2].pk}"):
        call_command("audit_verify")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_audit_verify_reports_a_rewritten_hash_chain_link(clinician: Any) -> None:
    # given events whose second one gets a consistent-looking but forged action
    events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(3)]
    _tamper(events[1].pk, action="test.forged")
    # then the forged row's own hash no longer matches its fields
    report = audit_verify()
    assert report.broken_event_id == events[1].pk
    assert "fields" in report.reason


def test_audit_logs_login_failed_login_and_logout(client: Any, clinician: Any) -> None:
    login_url = reverse("account_login")
    # when someone fails to log in, then logs in, then logs out
    client.post(login_url, {"login": clinician.email, "password": "wrong password"})
    client.post(login_url, {"login": clinician.email, "password": PASSWORD})
    client.post(reverse("account_logout"))
    # then the three events are in the log in that order, and none holds the password
    actions = list(
        AuditEvent.objects.filter(action__startswith="auth.").values_list("action", flat=True)
    )
    assert actions == ["auth.login_failed", "auth.login", "auth.logout"]
    failed = AuditEvent.objects.get(action="auth.login_failed")
    assert failed.payload["identifier"] == clinician.email
    assert "wrong password" not in str(failed.payload)
    assert audit_verify().ok


def test_a_login_name_that_is_no_account_is_kept_only_as_a_digest(client: Any) -> None:
    # when someone fails to log in as an address that is no account (a typo, or a password
    # pasted into the wrong field)
    typed = "s3cret.pass@word.test"
    client.post(reverse("account_login"), {"login": typed, "password": "x"})
    # then the failure is logged without that text, as a digest that repeats with it
    failed = AuditEvent.objects.get(action="auth.login_failed")
    assert "s3cret" not in str(failed.payload)
    assert "identifier" not in failed.payload
    client.post(reverse("account_login"), {"login": typed, "password": "x"})
    digests = {
        e.payload["unknown_identifier_digest"]
        for e in AuditEvent.objects.filter(action="auth.login_failed")
    }
    assert len(digests) == 1


def test_audit_verify_command_reports_intact_chain(clinician: Any, capsys: Any) -> None:
    call_command("audit_verify")
    assert "audit chain intact" in capsys.readouterr().out


# --- keyed chain and anchor (issue 12, item 8) ---------------------------------------------


@pytest.fixture
def anchor_file(settings: Any, tmp_path: Any) -> Any:
    """Anchoring on, the anchor at the current head, as on a deployment that had it from its
    first event (the personas' events were recorded before the path was set)."""
    settings.AUDIT_ANCHOR_PATH = str(tmp_path / "audit-anchor.json")
    anchor_current_head()
    return tmp_path / "audit-anchor.json"


def _rechain(events: list[AuditEvent], *, scheme: int, **changes: Any) -> None:
    """Rewrite the first event with ``changes`` and recompute every later link, as an
    attacker with write access to the table would after the probe's 'rewrite row 600'."""
    prev = events[0].prev_hash
    with _replica_session():
        for i, event in enumerate(AuditEvent.objects.filter(pk__gte=events[0].pk).order_by("id")):
            if i == 0:
                for name, value in changes.items():
                    setattr(event, name, value)
            event.payload_hash = payload_hash(event.payload)
            event.prev_hash = prev
            event.hash_scheme = scheme
            event.hash = event_hash(
                prev_hash=prev,
                created_at=event.created_at,
                actor_id=event.actor_id,
                actor_label=event.actor_label,
                action=event.action,
                object_type=event.object_type,
                object_id=event.object_id,
                payload_digest=event.payload_hash,
                scheme=scheme,
            )
            event.save()
            prev = event.hash


def _delete(event_id: int) -> None:
    with _replica_session():
        AuditEvent.objects.filter(pk=event_id).delete()


def test_new_events_are_signed_with_the_key_from_the_settings(
    clinician: Any, settings: Any
) -> None:
    # given an event recorded now
    event = audit_record(action="test.keyed", actor=clinician)
    # then it is HMAC-signed: plain SHA-256 of its fields does not reproduce its hash
    assert event.hash_scheme == SCHEME_HMAC
    assert audit_verify().ok
    # and a verifier with another key finds the chain does not hold
    settings.AUDIT_HMAC_KEY = "another key entirely, as an attacker would have to guess"
    report = audit_verify()
    assert not report.ok
    assert "fields" in report.reason


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_rewritten_chain_recomputed_without_the_key_is_found(
    clinician: Any, anchor_file: Any
) -> None:
    # given a chain of events
    events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(4)]
    # when an attacker rewrites the second and recomputes every later hash in plain SHA-256
    _rechain(events[1:], scheme=SCHEME_SHA256, action="test.forged")
    # then the verifier refuses an unkeyed hash after a keyed one, naming that event
    report = audit_verify()
    assert not report.ok
    assert report.broken_event_id == events[1].pk
    assert report.reason == SCHEME_DOWNGRADE


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_chain_recomputed_even_with_the_key_is_found_by_the_anchor(
    clinician: Any, anchor_file: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given events committed, each moving the anchor outside the database
    with django_capture_on_commit_callbacks(execute=True):
        events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(4)]
    assert json.loads(anchor_file.read_text())["event_id"] == events[-1].pk
    # when someone who also holds the key rewrites the second event and recomputes the rest
    _rechain(events[1:], scheme=SCHEME_HMAC, action="test.forged")
    # then the chain looks whole, but the anchored head no longer matches
    report = audit_verify()
    assert not report.ok
    assert report.broken_event_id == events[-1].pk
    assert "rewritten" in report.reason
    with pytest.raises(CommandError, match="chain was rewritten"):
        call_command("audit_verify")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_deleting_the_newest_event_is_found_by_the_anchor(
    clinician: Any, anchor_file: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given committed events, the newest anchored
    with django_capture_on_commit_callbacks(execute=True):
        events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(3)]
    # when the newest row is deleted (the rest of the chain is untouched and links fine)
    _delete(events[-1].pk)
    # then verification names the missing event
    report = audit_verify()
    assert not report.ok
    assert report.broken_event_id == events[-1].pk
    assert "deleted at the head" in report.reason
    with pytest.raises(CommandError, match=f"BROKEN at event #{events[-1].pk}"):
        call_command("audit_verify")


def test_verify_moves_the_anchor_to_the_head_and_never_back(
    clinician: Any, anchor_file: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # given an anchored chain, then events recorded in a transaction not committed yet
    with django_capture_on_commit_callbacks(execute=True):
        first = audit_record(action="test.first", actor=clinician)
    events = [audit_record(action=f"test.{i}", actor=clinician) for i in range(2)]
    assert json.loads(anchor_file.read_text())["event_id"] == first.pk
    # when the chain is verified, the head is anchored
    assert audit_verify().ok
    assert json.loads(anchor_file.read_text()) == {
        "event_id": events[-1].pk,
        "hash": events[-1].hash,
    }
    # and a late writer with an older event does not pull the anchor back
    assert not anchor_advance(event_id=events[0].pk, event_hash=events[0].hash)
    assert json.loads(anchor_file.read_text())["event_id"] == events[-1].pk


def test_a_damaged_anchor_is_reported_not_overwritten(clinician: Any, anchor_file: Any) -> None:
    # given an anchor file someone truncated
    audit_record(action="test.one", actor=clinician)
    anchor_file.write_text("{")
    # then verification reports it, and leaves the evidence as it is
    report = audit_verify()
    assert not report.ok
    assert "anchor" in report.reason
    assert anchor_file.read_text() == "{"


def test_legacy_unkeyed_events_still_verify_before_keyed_ones(db: None, settings: Any) -> None:
    # given events written before the key existed (plain SHA-256, scheme 1), as after migrating
    assert not AuditEvent.objects.exists()
    prev = GENESIS_HASH
    for i in range(3):
        created_at = timezone.now()
        digest = payload_hash({"i": i})
        fields = {
            "created_at": created_at,
            "actor_id": None,
            "actor_label": "",
            "action": f"legacy.{i}",
            "object_type": "",
            "object_id": "",
        }
        event_hash_value = event_hash(
            prev_hash=prev, payload_digest=digest, scheme=SCHEME_SHA256, **fields
        )
        AuditEvent.objects.create(
            payload={"i": i},
            payload_hash=digest,
            prev_hash=prev,
            hash=event_hash_value,
            hash_scheme=SCHEME_SHA256,
            **fields,
        )
        prev = event_hash_value
    # when new, keyed events follow, and the cut-over names the last legacy event
    audit_record(action="test.keyed")
    settings.AUDIT_LEGACY_UNTIL = AuditEvent.objects.order_by("id")[2].pk
    # then the whole chain verifies
    report = audit_verify()
    assert report.ok
    assert report.checked == 4


def test_every_refused_sign_in_is_audited_throttled_ones_too(
    client: Any, clinician: Any, settings: Any
) -> None:
    # given the production-like rate limit: two failures per address, then refused unchecked
    cache.clear()
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "2/m/key"}
    # when someone tries six passwords for a clinician's address
    for i in range(6):
        client.post(reverse("account_login"), {"login": clinician.email, "password": f"guess {i}"})
    cache.clear()
    # then all six are in the log: two checked and failed, four throttled, none with a password
    actions = list(
        AuditEvent.objects.filter(action__startswith="auth.login").values_list("action", flat=True)
    )
    assert actions == ["auth.login_failed"] * 2 + ["auth.login_throttled"] * 4
    throttled = AuditEvent.objects.filter(action="auth.login_throttled").first()
    assert throttled.payload["identifier"] == clinician.email
    assert "guess" not in str(list(AuditEvent.objects.values_list("payload", flat=True)))


@pytest.mark.slow
def test_a_flood_of_throttled_sign_ins_is_recorded_a_bounded_number_of_times(
    client: Any, clinician: Any, settings: Any
) -> None:
    # given the production-like rate limit, and a 2-second window for recording throttling
    cache.clear()
    settings.ACCOUNT_RATE_LIMITS = {"login_failed": "2/m/key"}
    settings.AUDIT_THROTTLED_WINDOW_S = 2

    def attempt(i: int) -> None:
        client.post(reverse("account_login"), {"login": clinician.email, "password": f"g{i}"})

    def refusals() -> list[tuple[str, dict[str, Any]]]:
        return [
            (e.action, e.payload)
            for e in AuditEvent.objects.exclude(action="auth.login_failed").filter(
                action__in=["auth.login_throttled", "access.denied"]
            )
        ]

    # when someone tries 40 passwords from one address at once (the form's limit refuses them
    # unchecked, then the login page's own limit answers 429)
    for i in range(40):
        attempt(i)
    # then the two failures are recorded, and of the 38 refusals five of each kind at most
    assert AuditEvent.objects.filter(action="auth.login_failed").count() == 2
    recorded = refusals()
    assert [a for a, _ in recorded].count("auth.login_throttled") == 5
    assert [a for a, _ in recorded].count("access.denied") <= 5

    # and once the window has passed, the next refusal recorded counts those left out
    def window_passed() -> bool:
        attempt(0)
        return any("not_recorded_before" in p for _, p in refusals())

    wait_until(window_passed, timeout=30, interval=0.1, what="the next refusal to be recorded")
    cache.clear()
    recorded = refusals()
    left_out = sum(p.get("not_recorded_before", 0) for _, p in recorded)
    assert left_out > 0
    assert len(recorded) <= 11


@pytest.mark.parametrize(
    ("allowed", "action"), [(True, "ws.subscribe"), (False, "ws.subscribe_denied")]
)
def test_websocket_subscriptions_are_recorded_granted_or_refused(
    outsider: Any, allowed: bool, action: str
) -> None:
    # when the board consumer reports a subscription (consult/consumers.py calls this)
    audit_subscription(
        actor=outsider, object_type="consult.consultation", object_id=42, allowed=allowed
    )
    # then the log names who, which stream, and whether it was refused; nothing else
    event = AuditEvent.objects.order_by("-id").first()
    assert (event.action, event.actor_id, event.object_type, event.object_id) == (
        action,
        outsider.pk,
        "consult.consultation",
        "42",
    )
    assert event.payload == {}
