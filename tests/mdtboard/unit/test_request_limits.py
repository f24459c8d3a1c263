"""The request-body cap in front of Django, at the ASGI level."""

from __future__ import annotations

from typing import Any

from mdtboard.core.limits import RequestBodyLimit

CAP = 1000


class _App:
    """Reads the whole body, as Django's ASGI handler does, then answers 200."""

    def __init__(self) -> None:
        self.called = False
        self.body = b""
        self.disconnected = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.called = True
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                return
            self.body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def _call(
    headers: list[tuple[bytes, bytes]], chunks: list[bytes]
) -> tuple[_App, list[Any], int]:
    app = _App()
    sent: list[Any] = []
    pending = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    read = 0

    async def receive() -> Any:
        nonlocal read
        read += 1
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/accounts/login/", "headers": headers}
    await RequestBodyLimit(app, max_bytes=CAP)(scope, receive, send)
    return app, sent, read


async def test_request_limit_refuses_a_declared_length_over_the_cap_unread() -> None:
    # given a request that declares a body one byte over the cap
    headers = [(b"content-length", str(CAP + 1).encode())]
    # when it arrives
    app, sent, read = await _call(headers, [b"x" * (CAP + 1)])
    # then it is answered 413 with a readable reason, the body is never read, Django never runs
    assert sent[0]["status"] == 413
    assert b"too large" in sent[1]["body"]
    assert read == 0
    assert not app.called


async def test_request_limit_stops_reading_a_chunked_body_past_the_cap() -> None:
    # given a body without Content-Length, sent in chunks that pass the cap in the middle
    chunks = [b"x" * 400] * 10
    # when it arrives
    app, sent, read = await _call([], chunks)
    # then the client gets 413, reading stops at the chunk that passed the cap, and the
    # application is told the client left (Django then answers nothing itself)
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413]
    assert read == 3
    assert app.disconnected


async def test_request_limit_passes_a_body_at_the_cap() -> None:
    app, sent, _ = await _call([(b"content-length", str(CAP).encode())], [b"x" * CAP])
    assert sent[0]["status"] == 200
    assert app.body == b"x" * CAP


async def test_request_limit_refuses_a_malformed_length() -> None:
    app, sent, _ = await _call([(b"content-length", b"-5")], [b""])
    assert sent[0]["status"] == 400
    assert not app.called


async def test_request_limit_leaves_websockets_alone() -> None:
    seen: list[Any] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    await RequestBodyLimit(inner, max_bytes=CAP)({"type": "websocket"}, None, None)  # type: ignore[arg-type]
    assert seen == ["websocket"]
