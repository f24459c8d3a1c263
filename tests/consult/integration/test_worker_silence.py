"""A consultation no worker is on: the board and /healthz say so instead of "Running"."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from consult.journal.lease import LEASE
from consult.models import Consultation, ConsultationStatus
from consult.services.consultations import consultation_start
from mdtboard.audit.models import AuditEvent
from mdtboard.core import health
from tests.fixtures.consultations import submitted

pytestmark = pytest.mark.django_db

NO_WORKER = "No worker has been heard from for"
NOT_PICKED_UP = "No worker has picked this consultation up for"


@pytest.fixture
def consultation(clinician: Any, team: Any) -> Consultation:
    dossier = submitted(clinician, team, "pub-hcc-03.json")
    return consultation_start(actor=clinician, dossier=dossier, enqueue=False)


def _running(consultation: Consultation, *, last_heard_s: int) -> None:
    """As a worker on another machine left it: running, its lease last renewed back then."""
    now = timezone.now()
    Consultation.objects.filter(pk=consultation.pk).update(
        status=ConsultationStatus.RUNNING,
        started_at=now - timedelta(seconds=last_heard_s + 5),
        lease_owner="elsewhere:4242",
        lease_until=now - timedelta(seconds=last_heard_s) + LEASE,
    )


def _board(client: Any, consultation: Consultation, **headers: str) -> str:
    url = reverse("consult:consultation-board", args=[consultation.pk])
    return str(client.get(url, headers=headers).content.decode())


def test_board_warns_when_the_running_consultations_worker_went_silent(
    client: Any, clinician: Any, consultation: Consultation
) -> None:
    # given a running consultation whose worker has not renewed its lease for 45 s
    _running(consultation, last_heard_s=45)
    client.force_login(clinician)
    # when the clinician opens the board, or the open board's status line polls
    page = _board(client, consultation)
    fragment = _board(client, consultation, HX_Request="true")
    # then both say no worker is on it, and that it will resume
    for html in (page, fragment):
        assert "Status: Running" in html
        said = re.search(rf"{NO_WORKER} (\d+) s; the consultation will resume when a worker", html)
        assert said is not None
        assert 45 <= int(said.group(1)) < 60  # (a slow machine may take a second or two)
    assert fragment.lstrip().startswith('<div id="board-status"')
    assert 'hx-trigger="every 15s"' in page  # the open page keeps asking
    # and the poll does not fill the audit log: one viewing, one record
    assert AuditEvent.objects.filter(action="consultation.board.view").count() == 1


def test_board_does_not_warn_while_the_worker_renews_its_lease(
    client: Any, clinician: Any, consultation: Consultation
) -> None:
    # given a running consultation whose lease was renewed 2 s ago
    _running(consultation, last_heard_s=2)
    client.force_login(clinician)
    # then the board shows it running, with no warning
    page = _board(client, consultation)
    assert "Status: Running" in page
    assert NO_WORKER not in page


def test_board_warns_when_a_queued_consultation_is_not_picked_up(
    client: Any, clinician: Any, consultation: Consultation
) -> None:
    # given a consultation queued two minutes ago that no worker took
    Consultation.objects.filter(pk=consultation.pk).update(
        created_at=timezone.now() - timedelta(minutes=2)
    )
    client.force_login(clinician)
    # then the board says it waits on a worker
    page = _board(client, consultation)
    assert "Status: Queued" in page
    said = re.search(rf"{NOT_PICKED_UP} (\d+) s; it will start when a worker starts", page)
    assert said is not None
    assert 120 <= int(said.group(1)) < 135


def test_a_finished_board_neither_warns_nor_polls(
    client: Any, clinician: Any, consultation: Consultation
) -> None:
    # given a consultation that failed long ago, its lease long lapsed
    _running(consultation, last_heard_s=600)
    Consultation.objects.filter(pk=consultation.pk).update(
        status=ConsultationStatus.FAILED, finished_at=timezone.now()
    )
    client.force_login(clinician)
    page = _board(client, consultation)
    assert NO_WORKER not in page
    assert "hx-trigger" not in page


def test_healthz_reports_a_consultation_left_without_a_live_worker(
    client: Any, consultation: Consultation, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given workers answer pings, but a running consultation's worker went silent 45 s ago
    monkeypatch.setattr(health.celery_app.control, "broadcast", lambda *a, **kw: [{"w": "pong"}])
    _running(consultation, last_heard_s=45)
    # when a load balancer (not signed in) asks
    response = client.get("/healthz")
    # then the stack is reported down, saying why without naming the consultation
    assert response.status_code == 503
    check = response.json()["checks"]["consultations"]
    assert check["ok"] is False
    assert re.fullmatch(r"no live worker: a consultation has waited 4[5-9] s", check["detail"])
