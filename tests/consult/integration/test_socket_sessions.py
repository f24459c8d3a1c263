"""Open WebSockets follow their sign-in and their user: expiry, sign-out and deactivation
close them; the notification socket re-checks its user as the board socket does."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client

from consult import consumers
from consult.broadcasts import user_group
from mdtboard.accounts import sessions
from mdtboard.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

CLOSED_SIGNED_OUT = {"type": "websocket.close", "code": 4401}
CLOSED_REFUSED = {"type": "websocket.close", "code": 4403}


def _signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _socket(client: Client, path: str) -> WebsocketCommunicator:
    # The browser's session cookie: the socket's user comes from the session, as in production.
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    return WebsocketCommunicator(
        application, path, headers=[(b"origin", b"http://localhost"), (b"cookie", cookie)]
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", ["board", "/ws/notifications/"])
async def test_an_open_socket_closes_when_its_sign_in_times_out(
    clinician: Any, queued: Any, settings: Any, path: str
) -> None:
    # given a 2-second idle timeout and a clinician's open socket, with no other activity
    settings.SESSION_IDLE_TIMEOUT = 2
    client = await database_sync_to_async(_signed_in)(clinician)
    url = f"/ws/consultations/{queued.pk}/" if path == "board" else path
    communicator = _socket(client, url)
    connected, _ = await communicator.connect()
    assert connected
    # when the sign-in times out (a socket is no activity: it does not keep it alive)
    # then the server closes the socket as signed out
    assert await communicator.receive_output(timeout=20) == CLOSED_SIGNED_OUT


async def test_a_socket_of_an_expired_sign_in_is_refused(
    clinician: Any, queued: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a sign-in 9 hours old (the absolute limit is 8)
    now = sessions.clock()
    monkeypatch.setattr(sessions, "clock", lambda: now - 9 * 3600)
    client = await database_sync_to_async(_signed_in)(clinician)
    monkeypatch.setattr(sessions, "clock", lambda: now)
    # when its browser opens the board socket, then it is refused as signed out
    communicator = _socket(client, f"/ws/consultations/{queued.pk}/")
    connected, code = await communicator.connect()
    assert (connected, code) == (False, 4401)


async def test_signing_out_closes_the_board_socket_at_its_next_message(
    clinician: Any, queued: Any
) -> None:
    # given a clinician's open board socket
    client = await database_sync_to_async(_signed_in)(clinician)
    communicator = _socket(client, f"/ws/consultations/{queued.pk}/")
    connected, _ = await communicator.connect()
    assert connected
    # when they sign out in another tab, and the page then sends its resume
    await database_sync_to_async(client.logout)()
    await communicator.send_json_to({"type": "resume", "after": 0})
    # then the socket is closed as signed out, nothing sent
    assert await communicator.receive_output(timeout=10) == CLOSED_SIGNED_OUT


async def test_a_deactivated_user_gets_no_more_notices(
    clinician: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a user's open notification socket, re-checked before every push
    monkeypatch.setattr(consumers, "REAUTHORISE_S", 0.0)
    client = await database_sync_to_async(_signed_in)(clinician)
    communicator = _socket(client, "/ws/notifications/")
    connected, _ = await communicator.connect()
    assert connected
    layer = get_channel_layer()
    notice = {"type": "notify.message", "level": "info", "text": "Plan ready"}
    await layer.group_send(user_group(clinician.pk), notice)
    assert "Plan ready" in await communicator.receive_from(timeout=10)
    # when an administrator deactivates them, and another notice comes
    clinician.is_active = False
    await database_sync_to_async(clinician.save)(update_fields=["is_active"])
    await layer.group_send(user_group(clinician.pk), {**notice, "text": "Second plan"})
    # then it is not delivered: the socket closes as a refusal
    assert await communicator.receive_output(timeout=10) == CLOSED_REFUSED
