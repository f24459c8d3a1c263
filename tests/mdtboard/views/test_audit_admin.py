"""The audit log in the Django admin: newest first, filtered by action, actor and date."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_record

pytestmark = pytest.mark.django_db


def _listed_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r"/admin/audit/auditevent/(\d+)/change/", html)]


def test_audit_admin_lists_newest_first_and_filters(
    client: Any, any_admin: Any, clinician: Any
) -> None:
    # given an auditor (either kind of administrator) signed in, then events by two people
    client.force_login(any_admin)
    first = audit_record(action="test.alpha", actor=clinician)
    last = audit_record(action="test.beta", actor=any_admin)
    url = reverse("admin:audit_auditevent_changelist")
    # when an auditor opens the list
    page = client.get(url).content.decode()
    # then the newest event comes first
    ids = _listed_ids(page)
    assert ids == sorted(ids, reverse=True)
    assert ids[0] == last.pk
    # and it offers filters by actor and date besides action
    assert "By actor" in page
    assert "By created at" in page
    # which narrow the list
    by_actor = _listed_ids(client.get(url, {"actor__id__exact": clinician.pk}).content.decode())
    assert first.pk in by_actor
    assert last.pk not in by_actor
    by_action = _listed_ids(client.get(url, {"action": "test.beta"}).content.decode())
    assert by_action == [last.pk]
    assert AuditEvent.objects.filter(pk__in=by_actor).exclude(actor=clinician).count() == 0
