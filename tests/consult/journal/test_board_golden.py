"""The board a watcher sees, pinned against recorded events (golden_board.py says how to
regenerate after an intended template change): the fragments of each event as the
broadcaster and the socket's catch-up send them, the whole page and its status poll."""

from __future__ import annotations

import difflib
import re
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.urls import reverse

from consult.journal import broadcaster
from consult.journal.board import Board
from consult.journal.render import render_events
from mdtboard.asgi import application
from tests.consult.journal.golden_board import golden, normalise, recorded_consultation, streams
from tests.fixtures.htmx import HTMX

STREAMS = ["hcc03", "llm-cancelled"]


def assert_same(actual: list[str], expected: list[str]) -> None:
    """Equal lists of HTML, or the first fragment that differs as a readable diff."""
    for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
        if got != want:
            diff = "\n".join(
                difflib.unified_diff(want.splitlines(), got.splitlines(), lineterm="", n=2)
            )
            pytest.fail(f"fragment {index} (seq {index + 1}) differs:\n{diff}")
    assert len(actual) == len(expected)


SEQ = re.compile(r'id="board-seq"\s+data-seq="(\d+)"')


async def caught_up(communicator: Any, last: int, consultation_id: int, wait_s: float) -> str:
    """What a catch-up sends up to event ``last``, as one text: it joins consecutive events'
    fragments in one message with a newline, so its messages joined the same way are the
    fragments sent one by one, joined."""
    messages: list[str] = []
    seen = 0
    while seen < last:
        message = await communicator.receive_from(timeout=wait_s)
        messages.append(normalise(message, consultation_id))
        seen = max([seen, *(int(n) for n in SEQ.findall(message))])
    return "\n".join(messages)


def fold_fragments(events: list[dict[str, Any]], consultation_id: int) -> list[str]:
    board = Board(consultation_id=consultation_id)
    return [html for _, html in render_events(board, events)]


@pytest.mark.parametrize("name", STREAMS)
def test_board_fragments_of_recorded_events_are_unchanged(name: str) -> None:
    # given the recorded events of a run
    events = streams()[name]
    # when each is folded into the board and its change rendered
    fragments = [normalise(html, 7) for html in fold_fragments(events, consultation_id=7)]
    # then every fragment is the one watchers were sent before
    assert_same(fragments, golden("fragments", name, fragments))


@pytest.mark.django_db
@pytest.mark.parametrize("name", STREAMS)
def test_board_page_and_status_poll_of_recorded_events_are_unchanged(
    client: Any, clinician: Any, team: Any, name: str
) -> None:
    consultation = recorded_consultation(clinician, team, streams()[name])
    client.force_login(clinician)
    url = reverse("consult:consultation-board", args=[consultation.pk])

    page = client.get(url).content.decode()
    board = page[page.index('<div id="board"') : page.index("</main>")]
    poll = client.get(url, headers=HTMX).content.decode()

    ids = (consultation.pk, consultation.dossier_id)
    assert_same([normalise(board, *ids)], [golden("page", name, normalise(board, *ids))])
    assert_same([normalise(poll, *ids)], [golden("poll", name, normalise(poll, *ids))])


@pytest.mark.django_db
def test_broadcast_batches_render_the_same_fragments_as_one_by_one(
    clinician: Any, team: Any
) -> None:
    # given a recorded run in the database, broadcast in batches of uneven sizes (as the
    # step writer commits them)
    events = streams()["hcc03"]
    consultation = recorded_consultation(clinician, team, events)
    expected = golden("fragments", "hcc03", [])
    sent: dict[int, str] = {}
    first = 1
    for size in (1, 1, 2, 5, 1, 30, 3, 100, 1, 7, 200):
        seqs = list(range(first, min(first + size, len(events) + 1)))
        if not seqs:
            break
        sent.update((seq, html) for seq, html, _ in broadcaster._render(consultation.pk, seqs))
        first = seqs[-1] + 1
    # then each event's fragment is the one a fold from the start renders
    fragments = [normalise(sent[seq], consultation.pk) for seq in sorted(sent)]
    assert_same(fragments, expected)


@pytest.mark.django_db(transaction=True)
async def test_socket_catch_up_after_a_resume_sends_the_same_fragments(
    clinician: Any, team: Any
) -> None:
    from asgiref.sync import sync_to_async

    events = streams()["hcc03"]
    consultation = await sync_to_async(recorded_consultation)(clinician, team, events)
    expected = golden("fragments", "hcc03", [])
    communicator = WebsocketCommunicator(
        application,
        f"/ws/consultations/{consultation.pk}/",
        headers=[(b"origin", b"http://localhost")],
    )
    communicator.scope["user"] = clinician
    connected, _ = await communicator.connect()
    assert connected
    # when a watcher that has seen the first 100 events reconnects
    await communicator.send_json_to({"type": "resume", "after": 100})
    received = await caught_up(communicator, len(events), consultation.pk, wait_s=10)
    await communicator.disconnect()
    # then it gets the rest, each as a fold from the start renders it
    assert_same([received], ["\n".join(expected[100:])])


@pytest.mark.django_db(transaction=True)
async def test_sockets_reconnecting_together_get_every_fragment_each_chunk_rendered_once(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    from collections import OrderedDict

    from asgiref.sync import sync_to_async

    from consult import consumers

    # given a recorded run, and a process that has rendered none of it yet
    monkeypatch.setattr(consumers, "_fragments", OrderedDict())
    monkeypatch.setattr(consumers, "_boards", OrderedDict())
    rendered: list[int] = []
    render = consumers._render_chunk

    def counting(consultation_id: int, after: int) -> list[tuple[int, str]]:
        fragments = render(consultation_id, after)
        if fragments:
            rendered.append(after)
        return fragments

    monkeypatch.setattr(consumers, "_render_chunk", counting)
    events = streams()["hcc03"]
    consultation = await sync_to_async(recorded_consultation)(clinician, team, events)
    expected = golden("fragments", "hcc03", [])
    watchers = []
    for _ in range(5):
        communicator = WebsocketCommunicator(
            application,
            f"/ws/consultations/{consultation.pk}/",
            headers=[(b"origin", b"http://localhost")],
        )
        communicator.scope["user"] = clinician
        connected, _ = await communicator.connect()
        assert connected
        watchers.append(communicator)

    # when they all resume from the start at once (as after a Redis restart)
    async def resume(communicator: WebsocketCommunicator) -> str:
        await communicator.send_json_to({"type": "resume", "after": 0})
        return await caught_up(communicator, len(events), consultation.pk, wait_s=20)

    received = await asyncio.gather(*(resume(c) for c in watchers))
    for communicator in watchers:
        await communicator.disconnect()
    # then each gets every fragment, in order, as a fold from the start renders it...
    for fragments in received:
        assert_same([fragments], ["\n".join(expected)])
    # ...and each chunk of the run was rendered once for all of them, not once per socket
    assert sorted(rendered) == sorted(set(rendered))
    assert len(rendered) == -(-len(events) // consumers.CATCH_UP_CHUNK)
