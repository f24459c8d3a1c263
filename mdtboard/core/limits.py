"""Input limits: a request-body cap in front of Django (413 before Django reads the body) and
a per-socket WebSocket message rate."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOO_LARGE = "The request is too large: uploads are limited to {limit}. Send fewer files at once."
BAD_LENGTH = "The request has an invalid Content-Length header."


def size_text(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size >= 1024 * 1024 else f"{size:,} bytes"


async def _respond(send: Send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class RequestBodyLimit:
    """ASGI middleware refusing an HTTP request whose body exceeds ``max_bytes``.

    A declared Content-Length over the cap is refused before the body is read. A body sent
    without one (chunked) is counted as it arrives: past the cap the client gets 413 and the
    application is told the client left, so Django stops reading and answers nothing itself.
    Django reads every body in full before any view or middleware runs, so without this a
    200 MB anonymous POST was read (and held) before the CSRF check refused it.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = [v for k, v in scope.get("headers", ()) if k.lower() == b"content-length"]
        if declared:
            raw = declared[0].strip()
            if len(declared) > 1 or not raw.isdigit():
                await _respond(send, 400, BAD_LENGTH)
                return
            if int(raw) > self.max_bytes:
                self._log(scope, int(raw))
                await _respond(send, 413, TOO_LARGE.format(limit=size_text(self.max_bytes)))
                return

        received = 0
        refused = False

        async def limited_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    self._log(scope, received)
                    await _respond(send, 413, TOO_LARGE.format(limit=size_text(self.max_bytes)))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            # Once the 413 is out, whatever the application still sends has nowhere to go.
            if not refused:
                await send(message)

        await self.app(scope, limited_receive, guarded_send)

    def _log(self, scope: Scope, size: int) -> None:
        # The path only: a query string may carry identifiers.
        logger.warning(
            "request body refused: %s %s, at least %d bytes, limit %d",
            scope.get("method", "?"),
            scope.get("path", "?"),
            size,
            self.max_bytes,
        )


class MessageRate:
    """Token bucket for one WebSocket: ``per_second`` messages on average, ``burst`` at once.

    A socket's client sends a handful of messages in its life (the board: one resume per
    (re)connect); one that floods is closed rather than allowed to keep a worker busy.
    """

    def __init__(
        self,
        *,
        per_second: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_second = per_second
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
