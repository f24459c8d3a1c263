"""The request-body cap over real HTTP, against Daphne on loopback."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from tests.stack import Proc, start_daphne

pytestmark = pytest.mark.integration

CAP = 64 * 1024


@pytest.fixture(scope="module")
def capped_daphne(django_db_setup: None) -> Iterator[tuple[str, int]]:
    # A Daphne of its own with a small cap, so the test sends kilobytes, not the 64 MiB default.
    proc: Proc
    proc, url = start_daphne(
        str(settings.DATABASES["default"]["NAME"]),
        extra_env={"MDTBOARD_MAX_REQUEST_BYTES": str(CAP)},
    )
    host, port = url.removeprefix("http://").rsplit(":", 1)
    yield host, int(port)
    proc.stop()


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
