"""The audit log: one chain, append-only in the database, tampering found by audit_verify."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from mdtboard.audit.hashing import GENESIS_HASH
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_record, audit_verify
from tests.conftest import PASSWORD

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
    # when anything tries to change or remove it, even bypassing the model layer
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        change(**kwargs)
    # then it is unchanged
    event.refresh_from_db()
    assert event.action == "test.keep"


def _tamper(event_id: int, **changes: Any) -> None:
    # Only a database superuser can do this: it is what an attacker with DB access would do.
    with connection.cursor() as cursor:
        # "replica" mode skips ordinary triggers for this session (superuser only).
        cursor.execute("SET session_replication_role = replica")
        AuditEvent.objects.filter(pk=event_id).update(**changes)
        cursor.execute("SET session_replication_role = DEFAULT")


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
