"""The live board: who may watch, what a (re)connecting watcher receives, escaping."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from consult.broadcasts import consultation_group
from consult.models import ConsultationEvent
from consult.services.consultations import consultation_run, consultation_start
from mdtboard.asgi import application
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import submitted
from tests.fixtures.seed import load_seed

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SEQ = re.compile(r'id="board-seq"\s+data-seq="(\d+)"')


async def _connect(user: Any, consultation_id: int) -> tuple[WebsocketCommunicator, Any]:
    communicator = WebsocketCommunicator(
        application,
        f"/ws/consultations/{consultation_id}/",
        headers=[(b"origin", b"http://localhost")],
    )
    communicator.scope["user"] = user
    connected = await communicator.connect()
    return communicator, connected


async def test_board_socket_refuses_a_clinician_of_another_team(
    finished: Any, outsider: Any
) -> None:
    _, (connected, code) = await _connect(outsider, finished.pk)
    assert not connected
    assert code == 4403


async def test_board_socket_refuses_a_rater(finished: Any, rater: Any) -> None:
    _, (connected, _code) = await _connect(rater, finished.pk)
    assert not connected


async def test_resume_after_n_sends_exactly_the_later_events_in_order(
    finished: Any, colleague: Any
) -> None:
    total = await ConsultationEvent.objects.filter(consultation=finished).acount()
    after = total // 2
    communicator, (connected, _) = await _connect(colleague, finished.pk)
    assert connected
    await communicator.send_json_to({"type": "resume", "after": after})
    # (a catch-up joins consecutive events' fragments in one message, each with its number)
    seen: list[int] = []
    while len(seen) < total - after:
        message = await communicator.receive_from(timeout=10)
        seen.extend(int(seq) for seq in SEQ.findall(message))
    assert seen == list(range(after + 1, total + 1))
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


def test_board_fragments_escape_llm_text(clinician: Any, team: Any, llm_env: Any) -> None:
    from asgiref.sync import async_to_sync

    from tests.consult.llm_responder import clinical_responder

    default = clinical_responder()

    def hostile(request: Any) -> Any:
        reply = default(request)
        if request.role == "diagnostic":
            reply.content = reply.content.replace(
                '"diagnostic assessment"', '"<script>window.pwned=1</script> staging"'
            )
        return reply

    # given an LLM whose Diagnostic reply carries a script tag
    llm_env.switch.responder = hostile
    load_seed()
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    consultation_run(consultation_id=consultation.pk)

    async def watch() -> str:
        communicator, (connected, _) = await _connect(clinician, consultation.pk)
        assert connected
        await communicator.send_json_to({"type": "resume", "after": 0})
        html = ""
        while "window.pwned" not in html:
            html = await communicator.receive_from(timeout=10)
        await communicator.disconnect()
        return html

    # then the live fragment shows it as text, never as markup
    html = async_to_sync(watch)()
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in html
    assert "<script>" not in html


def test_finished_board_renders_everything_without_javascript(
    client: Any, finished: Any, colleague: Any
) -> None:
    client.force_login(colleague)
    page = client.get(reverse("consult:consultation-board", args=[finished.pk])).content.decode()
    # no live socket for a finished run; everything is in the HTML
    assert "/ws/consultations/" not in page
    for needle in (
        "Status: Completed",
        'id="panel-treatment"',
        "Round 1",
        "Consistency",
        "Safety gates",
        "Evidence tree",
        "MDT plan",
        "Open the plan",
    ):
        assert needle in page, needle
    last = ConsultationEvent.objects.filter(consultation=finished).order_by("-seq").first()
    assert f'data-seq="{last.seq}"' in page


def test_board_and_plan_pages_are_for_the_team_only(
    client: Any, finished: Any, outsider: Any, rater: Any
) -> None:
    urls = [
        reverse(name, args=[finished.pk])
        for name in ("consult:consultation-board", "consult:plan-detail", "consult:plan-json")
    ]
    client.force_login(outsider)
    assert [client.get(u).status_code for u in urls] == [404, 404, 404]
    assert (
        client.post(reverse("consult:consultation-cancel", args=[finished.pk])).status_code == 404
    )
    client.force_login(rater)
    assert [client.get(u).status_code for u in urls] == [403, 403, 403]


def test_plan_json_download_is_the_stored_plan(client: Any, finished: Any, clinician: Any) -> None:
    client.force_login(clinician)
    response = client.get(reverse("consult:plan-json", args=[finished.pk]))
    assert response.json() == finished.plan.payload
    page = client.get(reverse("consult:plan-detail", args=[finished.pk])).content.decode()
    assert "not an order" in page


def test_only_the_starter_may_cancel(
    client: Any, clinician: Any, colleague: Any, team: Any
) -> None:
    load_seed()
    dossier = submitted(clinician, team, "pub-breast-02.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    client.force_login(colleague)
    response = client.post(
        reverse("consult:consultation-cancel", args=[consultation.pk]), follow=True
    )
    assert "Only the clinician who started" in response.content.decode()
    client.force_login(clinician)
    client.post(reverse("consult:consultation-cancel", args=[consultation.pk]))
    consultation.refresh_from_db()
    assert consultation.status == "cancelled"


def test_start_from_the_dossier_page_opens_the_board(
    client: Any, clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consult.models import Consultation
    from consult.tasks import consultation_run

    queued: list[int] = []
    monkeypatch.setattr(consultation_run, "delay", queued.append)  # no worker in this test
    load_seed()
    dossier = submitted(clinician, team, "pub-lymph-02.json")
    client.force_login(clinician)
    page = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()
    assert "Start consultation" in page
    response = client.post(
        reverse("consult:consultation-start", args=[dossier.pk]),
        {"engine": "guideline", "max_rounds": 2},
    )
    # then a queued consultation with the chosen settings exists, its run is handed to the
    # workers, and the clinician lands on its board
    consultation = Consultation.objects.get(dossier=dossier)
    assert (consultation.status, consultation.engine) == ("queued", "guideline")
    assert consultation.config["max_rounds"] == 2
    assert queued == [consultation.pk]
    assert response.status_code == 302
    assert response["Location"] == reverse("consult:consultation-board", args=[consultation.pk])
    bad = client.post(
        reverse("consult:consultation-start", args=[dossier.pk]),
        {"engine": "guideline", "max_rounds": 9},
        follow=True,
    )
    assert "less than or equal to 5" in bad.content.decode()


async def test_board_socket_stops_streaming_to_a_clinician_removed_from_the_team(
    finished: Any, colleague: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a colleague watching the board (authorisation re-checked on every message here)
    from consult import consumers

    monkeypatch.setattr(consumers, "REAUTHORISE_S", 0.0)
    communicator, (connected, _) = await _connect(colleague, finished.pk)
    assert connected
    await communicator.send_json_to({"type": "resume", "after": 0})
    assert SEQ.search(await communicator.receive_from(timeout=10))
    # when an administrator removes them from the team
    await colleague.teams.aremove(team)
    # then their next message closes the socket as a refusal, and nothing more is sent
    await communicator.send_json_to({"type": "resume", "after": 0})
    while True:
        output = await communicator.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            break
    assert output["code"] == 4403
    assert await AuditEvent.objects.filter(
        action="ws.subscribe_denied", object_id=str(finished.pk)
    ).aexists()
    await communicator.disconnect()  # the consumer leaves its group; no task outlives the test


async def test_board_socket_refuses_the_next_resume_of_a_clinician_removed_from_the_team(
    queued: Any, colleague: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a colleague watching a board whose pushes re-check authorisation only hourly
    from consult import consumers

    monkeypatch.setattr(consumers, "REAUTHORISE_S", 3600.0)
    communicator, (connected, _) = await _connect(colleague, queued.pk)
    assert connected
    await communicator.send_json_to({"type": "resume", "after": 0})
    assert await communicator.receive_nothing(timeout=0.3)  # still open; no events yet
    # when an administrator removes them from the team
    await colleague.teams.aremove(team)
    # then the next resume they send is checked against the database and refused at once
    await communicator.send_json_to({"type": "resume", "after": 0})
    assert await communicator.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": 4403,
    }
    assert await AuditEvent.objects.filter(
        action="ws.subscribe_denied", object_id=str(queued.pk)
    ).aexists()
    await communicator.disconnect()


async def test_board_socket_relays_live_events_while_the_database_thread_is_busy(
    queued: Any, colleague: Any
) -> None:
    # given a watcher whose board has caught up (nothing has happened yet)
    communicator, (connected, _) = await _connect(colleague, queued.pk)
    assert connected
    await communicator.send_json_to({"type": "resume", "after": 0})
    assert await communicator.receive_nothing(timeout=0.3)
    # when the one thread channels runs every socket's database calls on is busy for 3 s (as
    # when 50 sockets connect at once after a Redis restart)
    busy = asyncio.ensure_future(database_sync_to_async(time.sleep)(3.0))
    await asyncio.sleep(0.1)
    # and the broadcaster sends the next event
    fragment = '<div id="board-seq" data-seq="1" hx-swap-oob="true"></div>'
    await get_channel_layer().group_send(
        consultation_group(queued.pk),
        {"type": "board.event", "consultation": queued.pk, "seq": 1, "html": fragment},
    )
    # then the watcher has it at once, not once the database thread is free
    assert await communicator.receive_from(timeout=2) == fragment
    assert not busy.done()
    await busy
    await communicator.disconnect()


async def test_board_socket_subscription_is_audited(finished: Any, colleague: Any) -> None:
    communicator, (connected, _) = await _connect(colleague, finished.pk)
    try:
        assert connected
        assert await AuditEvent.objects.filter(
            action="ws.subscribe", object_id=str(finished.pk), actor=colleague
        ).aexists()
    finally:
        await communicator.disconnect()
