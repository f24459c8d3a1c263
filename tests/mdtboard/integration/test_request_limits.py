"""The request-body cap over real HTTP, against Daphne on loopback."""

from __future__ import annotations

import http.client
import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.stack import Proc, start_daphne

pytestmark = [pytest.mark.slow, pytest.mark.integration]

CAP = 64 * 1024


@pytest.fixture(scope="module")
def capped_daphne_proc(django_db_setup: None) -> Iterator[tuple[Proc, str, int]]:
    # A Daphne of its own with a small cap, so the test sends kilobytes, not the 64 MiB default.
    proc: Proc
    proc, url = start_daphne(
        str(settings.DATABASES["default"]["NAME"]),
        extra_env={"MDTBOARD_MAX_REQUEST_BYTES": str(CAP)},
    )
    host, port = url.removeprefix("http://").rsplit(":", 1)
    yield proc, host, int(port)
    proc.stop()


@pytest.fixture
def capped_daphne(capped_daphne_proc: tuple[Proc, str, int]) -> tuple[str, int]:
    _, host, port = capped_daphne_proc
    return host, port


def _post(server: tuple[str, int], body: Any, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(*server, timeout=30)
    try:
        connection.request(
            "POST",
            "/accounts/login/",
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", **headers},
            encode_chunked="Content-Length" not in headers,
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_daphne_refuses_an_anonymous_post_over_the_cap(capped_daphne: tuple[str, int]) -> None:
    # given an anonymous POST to the login page 16 times the cap
    body = b"a=" + b"x" * (16 * CAP)
    # when it is sent with its length declared
    status, text = _post(capped_daphne, body, {"Content-Length": str(len(body))})
    # then it is refused as too large, before Django's CSRF check ever reads it
    assert status == 413
    assert b"too large" in text


def test_daphne_refuses_a_chunked_post_over_the_cap(capped_daphne: tuple[str, int]) -> None:
    # given the same body sent chunked, with no length to refuse up front
    chunks = iter([b"a=", *([b"x" * 8192] * 16)])
    # when it is sent
    status, text = _post(capped_daphne, chunks, {})
    # then reading stops at the cap and the client gets 413
    assert status == 413
    assert b"too large" in text


def test_daphne_passes_a_post_under_the_cap_to_django(capped_daphne: tuple[str, int]) -> None:
    # given a small login POST without a CSRF token
    body = b"login=a%40b.c&password=x"
    # when it is sent
    status, _ = _post(capped_daphne, body, {"Content-Length": str(len(body))})
    # then Django answers it (CSRF refusal), not the cap
    assert status == 403


def _temporary_files(pid: int) -> list[str]:
    """The files under the temporary directory that process ``pid`` holds open (Twisted
    spools a large body into an unlinked temporary file)."""
    tmp = os.path.realpath(tempfile.gettempdir())
    # A checkout under the temporary directory (a CI clone in /tmp) holds its own logs there.
    checkout = os.path.realpath(Path(__file__).resolve().parents[3])
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(tmp + "/") and not target.startswith(checkout + "/"):
            found.append(target)
    return found


def _raw_request(server: tuple[str, int], head: bytes, body_parts: list[bytes]) -> socket.socket:
    sock = socket.create_connection(server, timeout=30)
    sock.sendall(head)
    for part in body_parts:
        sock.sendall(part)
    return sock


def _read_response(sock: socket.socket) -> bytes:
    # Read until the server closes (it answers a refusal with Connection: close); a server
    # waiting for the rest of the body instead times the read out and fails the test.
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_daphne_answers_a_declared_gigabyte_before_reading_its_body(
    capped_daphne_proc: tuple[Proc, str, int],
) -> None:
    proc, host, port = capped_daphne_proc
    # given an anonymous POST declaring a 1 GB body, of which the client sends 4 KB and waits
    head = (
        b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 1073741824\r\n\r\n"
    )
    sock = _raw_request((host, port), head, [b"a=" + b"x" * 4094])
    try:
        # when the server answers (Daphne used to wait for the whole gigabyte, spooling it
        # into a temporary file, before anything could refuse it)
        first = sock.recv(65536)
        # then it is a 413 with a message, and no temporary file holds the body
        assert first.startswith(b"HTTP/1.1 413 ")
        assert not _temporary_files(proc.popen.pid)
        response = first + _read_response(sock)
    finally:
        sock.close()
    assert b"too large" in response
    assert b"65,536 bytes" in response


def test_daphne_refuses_a_chunked_body_once_past_the_cap(
    capped_daphne_proc: tuple[Proc, str, int],
) -> None:
    _, host, port = capped_daphne_proc
    # given a chunked POST that sends four times the cap and then waits, its end never sent
    head = (
        b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"2000\r\n" + b"x" * 0x2000 + b"\r\n"
    sock = _raw_request((host, port), head, [chunk] * (4 * CAP // 0x2000))
    try:
        # when the server answers
        response = _read_response(sock)
    finally:
        sock.close()
    # then the body was refused at the cap, without waiting for an end that never comes
    assert response.startswith(b"HTTP/1.1 413 ")
    assert b"too large" in response


def test_daphne_still_serves_the_next_connection_after_a_refusal(
    capped_daphne: tuple[str, int],
) -> None:
    # given a refused upload
    status, _ = _post(capped_daphne, b"x" * (2 * CAP), {"Content-Length": str(2 * CAP)})
    assert status == 413
    # when someone loads the login page
    connection = http.client.HTTPConnection(*capped_daphne, timeout=30)
    try:
        connection.request("GET", "/accounts/login/")
        response = connection.getresponse()
        # then it is served as usual
        assert response.status == 200
    finally:
        connection.close()
