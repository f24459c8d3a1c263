"""Who read which dossier, board and plan, and who was refused: in the audit log, ids only."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_verify

# The engine writes from asgiref's worker thread: commit for it to see the data.
pytestmark = pytest.mark.django_db(transaction=True)


def _pages(consultation: Any) -> list[tuple[str, str]]:
    return [
        ("dossier.view", reverse("consult:dossier-detail", args=[consultation.dossier_id])),
        ("consultation.board.view", reverse("consult:consultation-board", args=[consultation.pk])),
        ("plan.view", reverse("consult:plan-detail", args=[consultation.pk])),
        ("plan.export", reverse("consult:plan-json", args=[consultation.pk])),
    ]


@pytest.mark.slow
def test_reading_a_dossier_board_and_plan_is_audited_once_each(
    client: Any, finished: Any, colleague: Any
) -> None:
    # given a colleague of the team
    client.force_login(colleague)
    for action, url in _pages(finished):
        before = AuditEvent.objects.count()
        # when they open the page (HTML or JSON)
        assert client.get(url).status_code == 200
        # then exactly one event names them, the action and the object, and no patient data
        event = AuditEvent.objects.order_by("-id").first()
        assert AuditEvent.objects.count() == before + 1
        assert (event.action, event.actor_id) == (action, colleague.pk)
        assert event.object_id.isdigit()
        assert set(event.payload) <= {"format"}
    assert audit_verify().ok


@pytest.mark.slow
def test_refused_reads_are_audited_with_the_view_and_ids(
    client: Any, finished: Any, outsider: Any, rater: Any
) -> None:
    pages = _pages(finished)
    # when a clinician of another team (404) and a rater (403) try every page
    for user, status in ((outsider, 404), (rater, 403)):
        client.force_login(user)
        for _action, url in pages:
            assert client.get(url).status_code == status
        # then each refusal is in the log: who, the status, which view and object ids
        denied = AuditEvent.objects.filter(action="access.denied", actor=user).order_by("id")
        assert [e.payload["status"] for e in denied] == [status] * len(pages)
        assert [e.payload["view"] for e in denied] == [
            "consult:dossier-detail",
            "consult:consultation-board",
            "consult:plan-detail",
            "consult:plan-json",
        ]
        assert denied.last().payload["ids"] == {"pk": str(finished.pk)}
    # and no read was recorded for them
    assert not AuditEvent.objects.filter(
        actor__in=[outsider, rater], action__in=[a for a, _ in pages]
    ).exists()


def test_a_mistyped_address_is_not_a_denial(client: Any, clinician: Any) -> None:
    client.force_login(clinician)
    assert client.get("/no-such-page/").status_code == 404
    assert not AuditEvent.objects.filter(action="access.denied").exists()
