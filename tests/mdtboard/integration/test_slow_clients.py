"""Issue 26, finding 5: slow clients are dropped by the web server, and /healthz stays fast."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator

import pytest
from django.conf import settings

from tests.stack import Proc, start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.integration]

HEADER_S = 2.0
BODY_S = 3.0


@pytest.fixture(scope="module")
def server(django_db_setup: None) -> Iterator[tuple[str, int]]:
    proc: Proc
    proc, url = start_daphne(
        str(settings.DATABASES["default"]["NAME"]),
        extra_env={
            "MDTBOARD_HEADER_TIMEOUT_S": str(HEADER_S),
            "MDTBOARD_BODY_TIMEOUT_S": str(BODY_S),
        },
    )
    host, port = url.removeprefix("http://").rsplit(":", 1)
    yield host, int(port)
    proc.stop()


def _closed_by_server(sock: socket.socket, *, keep_sending: bytes, within: float) -> float | None:
    """Trickle ``keep_sending`` every 0.3 s (a slowloris) until the server closes the socket;
    the seconds that took, or None if it was still open after ``within``."""
    started = time.monotonic()
    sock.settimeout(0.3)
    while time.monotonic() - started < within:
        try:
            sock.sendall(keep_sending)
            if sock.recv(4096) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except OSError:  # reset by the server
            return time.monotonic() - started
    return None


def test_slowloris_sockets_are_dropped_and_healthz_stays_fast(server: tuple[str, int]) -> None:
    # given 60 connections that each send a request line, then one header line at a time
    socks = []
    for _ in range(60):
        sock = socket.create_connection(server, timeout=5)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        socks.append(sock)
    try:
        # when a real client asks for /healthz meanwhile, then it is answered at once
        connection = http.client.HTTPConnection(*server, timeout=5)
        started = time.monotonic()
        connection.request("GET", "/healthz")
        status = connection.getresponse().status
        assert status in (200, 503)
        assert time.monotonic() - started < HEADER_S
        connection.close()
        # and every slow connection is dropped soon after the header deadline, though each
        # kept sending
        took = [
            _closed_by_server(s, keep_sending=b"X-a: b\r\n", within=HEADER_S + 10) for s in socks
        ]
        assert None not in took
        assert max(t for t in took if t is not None) < HEADER_S + 10
    finally:
        for sock in socks:
            sock.close()


def test_a_body_trickled_slower_than_the_deadline_is_dropped(server: tuple[str, int]) -> None:
    # given a POST that declares 10 kB and sends it a few bytes at a time
    sock = socket.create_connection(server, timeout=5)
    sock.sendall(
        b"POST /accounts/login/ HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000\r\n\r\n"
    )
    try:
        # then the server drops it once the body deadline passes
        took = _closed_by_server(sock, keep_sending=b"aaaa", within=BODY_S + 10)
        assert took is not None
        assert took >= BODY_S - 0.5
    finally:
        sock.close()


def test_a_prompt_client_keeps_its_connection_for_several_requests(
    server: tuple[str, int],
) -> None:
    # given a client that sends whole requests promptly on one kept-alive connection
    connection = http.client.HTTPConnection(*server, timeout=10)
    try:
        for _ in range(3):
            connection.request("GET", "/accounts/login/")
            response = connection.getresponse()
            response.read()
            # then each is answered on it
            assert response.status == 200
            time.sleep(HEADER_S / 4)
    finally:
        connection.close()
