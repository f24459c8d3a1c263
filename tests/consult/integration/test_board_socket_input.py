"""What a hostile client can send on the WebSockets: malformed resumes, deep JSON, floods."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from consult.consumers import MESSAGE_BURST
from mdtboard.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)
SEQ = re.compile(r'id="board-seq"\s+data-seq="(\d+)"')


async def _connect(user: Any, path: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"origin", b"http://localhost")]
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


HOSTILE_RESUMES = [
    '{"type": "resume", "after": 1e400}',
    '{"type": "resume", "after": -1e400}',
    '{"type": "resume", "after": 100000000000000000000000000000}',
    '{"type": "resume", "after": "3"}',
    '{"type": "resume", "after": true}',
    '{"type": "resume", "after": NaN}',
    '{"type": "resume", "after": [1]}',
    "[" * 100_000 + "]" * 100_000,
    '{"type": "resume", "after": ' + "[" * 500 + "]" * 500 + "}",
    "[1, 2]",
    "not json",
]


@pytest.mark.slow
async def test_board_socket_ignores_hostile_resumes_and_keeps_working(
    finished: Any, colleague: Any
) -> None:
    # given a watcher's open board socket
    communicator = await _connect(colleague, f"/ws/consultations/{finished.pk}/")
    # when the client sends malformed resumes (infinite, huge, wrongly typed, deeply nested)
    for text in HOSTILE_RESUMES:
        await communicator.send_to(text_data=text)
        # then nothing is sent back and nothing breaks
        assert await communicator.receive_nothing(timeout=0.1), text[:40]
    # and a proper resume still gets the events, from the first
    await communicator.send_json_to({"type": "resume", "after": 0})
    first = await communicator.receive_from(timeout=10)
    assert SEQ.search(first).group(1) == "1"  # type: ignore[union-attr]
    # (the rest of the catch-up is read before leaving, so no send is cut off mid-way)
    while not await communicator.receive_nothing(timeout=0.5):
        await communicator.receive_from()
    await communicator.disconnect()


async def test_board_socket_closes_a_flooding_client_with_a_policy_code(
    queued: Any, colleague: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # given a watcher's open board socket
    communicator = await _connect(colleague, f"/ws/consultations/{queued.pk}/")
    # when the client sends far more messages at once than any page does
    secret = "PSEUDONYM-IN-A-MESSAGE"
    with caplog.at_level(logging.WARNING, logger="consult.consumers"):
        for _ in range(MESSAGE_BURST * 3):
            await communicator.send_to(text_data=f'{{"type": "noise", "x": "{secret}"}}')
        # then the socket is closed as a policy violation
        output = await communicator.receive_output(timeout=5)
    assert output == {"type": "websocket.close", "code": 1008}
    # and the log says who and where, never what was sent
    [record] = [r for r in caplog.records if "flooding" in r.getMessage()]
    assert f"user {colleague.pk}" in record.getMessage()
    assert secret not in record.getMessage()
    await communicator.disconnect()


@pytest.mark.slow
async def test_board_socket_allows_a_client_that_reconnects_normally(
    queued: Any, colleague: Any
) -> None:
    communicator = await _connect(colleague, f"/ws/consultations/{queued.pk}/")
    # given a client that reconnects as often as a flaky network makes it: a resume each time
    for _ in range(MESSAGE_BURST):
        await communicator.send_json_to({"type": "resume", "after": 0})
    # then its socket stays open (no close message, nothing at all from a run not started)
    assert await communicator.receive_nothing(timeout=0.5)
    await communicator.disconnect()


async def test_notification_socket_ignores_deep_json_and_closes_a_flood(clinician: Any) -> None:
    # given a user's notification socket
    communicator = await _connect(clinician, "/ws/notifications/")
    # when the client sends deeply nested JSON, then nothing breaks
    await communicator.send_to(text_data="[" * 100_000 + "]" * 100_000)
    assert await communicator.receive_nothing(timeout=0.2)
    # when it floods, then it is closed as a policy violation
    for _ in range(MESSAGE_BURST * 3):
        await communicator.send_to(text_data="{}")
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 1008,
    }
    await communicator.disconnect()
