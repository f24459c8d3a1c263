"""Idle WebSockets stay open: the channel layer's blocking read is not cut by a socket timeout."""

from __future__ import annotations

import time
from http.cookies import SimpleCookie
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from consult.broadcasts import user_notify
from tests.stack import in_thread

pytestmark = [pytest.mark.slow, pytest.mark.integration]

IDLE_S = 20


def _session_headers(client: Any, user: Any, origin: str) -> dict[str, str]:
    client.force_login(user)
    cookie = SimpleCookie()
    cookie["sessionid"] = client.cookies["sessionid"].value
    return {"Cookie": cookie.output(header="", sep=";").strip(), "Origin": origin}


@pytest.mark.django_db(transaction=True)
def test_an_idle_notification_socket_stays_open_and_still_delivers(
    daphne_server: str, client: Any, clinician: Any
) -> None:
    # given a clinician's notification socket through the real Daphne and channels-redis
    headers = _session_headers(client, clinician, daphne_server)
    url = daphne_server.replace("http://", "ws://") + "/ws/notifications/"
    with connect(url, additional_headers=headers, open_timeout=10) as ws:
        # when nothing is sent for a while (several of the layer's 5 s blocking reads)
        deadline = time.monotonic() + IDLE_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                unexpected = ws.recv(timeout=left)
            except TimeoutError:
                continue  # silence, as it should be
            except ConnectionClosed as closed:
                pytest.fail(f"the idle socket was closed after a while: {closed}")
            pytest.fail(f"an idle socket received {unexpected!r}")
        # then it is still open, and a notice sent now still arrives
        in_thread(user_notify, user_id=clinician.pk, level="info", text="still here")
        assert "still here" in ws.recv(timeout=10)
