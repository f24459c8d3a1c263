"""Daphne with the request-body cap enforced where the bytes arrive: ``python -m
mdtboard.webserver`` takes Daphne's own arguments (``make run``, Docker and the tests use it).

Daphne (Twisted) reads a whole request body, into a temporary file beyond 100 kB, before the
ASGI application sees the request; mdtboard.core.limits.RequestBodyLimit could only refuse it
once it was all on disk, so an anonymous POST declaring gigabytes filled the disk first. Here a
declared Content-Length over ``settings.MAX_REQUEST_BYTES`` is answered 413 as soon as the
headers are in, and a chunked body is counted as it arrives and refused once past the cap:
nothing over the cap is ever stored. The ASGI middleware stays behind it, for servers started
some other way.

Slow clients (issue 26): Twisted's only timeout is an idle one that every byte resets, so a
client trickling a header line every few seconds (slowloris) held its socket for hours. Here
each connection has deadlines that data does not reset: the request line and headers must be
in within ``MDTBOARD_HEADER_TIMEOUT_S`` of the connection (or of the end of the previous
request on a kept-alive one), the body within ``MDTBOARD_BODY_TIMEOUT_S`` of the headers; a
client that misses one is dropped. The application's own time (a long response, a WebSocket
once upgraded) is never limited by them.
"""

from __future__ import annotations

# Daphne installs Twisted's asyncio reactor when daphne.server is imported: first.
import daphne.server  # isort: skip

import logging
import sys
from typing import Any, cast

from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from twisted.internet import reactor
from twisted.web import http

from mdtboard.core.limits import TOO_LARGE, size_text

logger = logging.getLogger(__name__)

# After the 413 the connection stays open this long for reading (and discarding) what the
# client is still sending: closing a socket with unread data makes the kernel send a reset,
# which can destroy the 413 before the client has read it.
LINGER_S = 5.0


class CappedWebRequest(WebRequest):  # type: ignore[misc]
    """Daphne's request, refusing a body over the server's cap before storing any of it."""

    refused = False
    received = 0
    _linger: Any = None

    @property
    def max_body(self) -> int:
        return int(self.channel.factory.server.max_request_bytes)

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self.max_body:
            # No "100 Continue" for a body that will be refused.
            self.requestHeaders.removeHeader(b"Expect")
            self._refuse(length)
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self.received += len(data)
        if self.received > self.max_body:
            self._refuse(self.received)
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self.refused:
            # The client sent the rest of a refused body after all: nothing is left unread,
            # so the close is an orderly one (the client may still be reading the 413).
            self.channel.transport.loseConnection()
            return
        super().requestReceived(command, path, version)

    def connectionLost(self, reason: Any) -> None:
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _refuse(self, size: int) -> None:
        self.refused = True
        # The path without its query string, which may carry identifiers. The request line
        # is still the channel's: the request gets it only once the body is complete.
        path = getattr(self.channel, "_path", b"?").split(b"?", 1)[0]
        logger.warning(
            "request body refused: %s %s, at least %d bytes, limit %d",
            getattr(self.channel, "_command", b"?").decode("latin-1", "replace"),
            path.decode("latin-1", "replace"),
            size,
            self.max_body,
        )
        self.content = None
        body = TOO_LARGE.format(limit=size_text(self.max_body)).encode("utf-8")
        transport = self.channel.transport
        transport.write(
            b"HTTP/1.1 413 Content Too Large\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: " + str(len(body)).encode("ascii") + b"\r\n"
            b"Connection: close\r\n\r\n" + body
        )
        # Send it, keep reading (and dropping) what is still coming, and close after LINGER_S
        # or as soon as the client does.
        transport.loseWriteConnection()
        self._linger = cast(Any, reactor).callLater(LINGER_S, self._give_up)

    def _give_up(self) -> None:
        # A client still sending after LINGER_S is not reading the answer either.
        if self.channel is not None and self.channel.transport is not None:
            self.channel.transport.abortConnection()


# Twisted's own annotations of HTTPChannel are partial; as Daphne's classes, it is used untyped.
_HTTPChannel: Any = http.HTTPChannel


class DeadlineHTTPChannel(_HTTPChannel):  # type: ignore[misc]
    """Twisted's HTTP channel with a deadline for the headers and one for the body."""

    header_timeout: float = 10.0
    body_timeout: float = 60.0
    _deadline: Any = None

    def connectionMade(self) -> None:
        super().connectionMade()
        self._arm(self.header_timeout, "headers")

    def allHeadersReceived(self) -> None:
        super().allHeadersReceived()
        # allContentReceived follows at once for a request without a body.
        self._arm(self.body_timeout, "body")

    def allContentReceived(self) -> None:
        # From here on the application has the request: its time is not the client's.
        self._disarm()
        super().allContentReceived()

    def requestDone(self, request: Any) -> None:
        super().requestDone(request)
        if self.persistent and self.transport is not None and not self.requests:
            # A kept-alive connection has as long for its next request's headers.
            self._arm(self.header_timeout, "headers")

    def connectionLost(self, reason: Any) -> None:
        self._disarm()
        super().connectionLost(reason)

    def _arm(self, seconds: float, phase: str) -> None:
        self._disarm()
        if seconds > 0:
            self._deadline = cast(Any, reactor).callLater(seconds, self._too_slow, phase)

    def _disarm(self) -> None:
        if self._deadline is not None and self._deadline.active():
            self._deadline.cancel()
        self._deadline = None

    def _too_slow(self, phase: str) -> None:
        self._deadline = None
        if self.transport is None:
            return
        logger.warning("slow client dropped: %s not complete in time", phase)
        self.transport.abortConnection()


def _deadline_channel_protocol(factory: Any) -> Any:
    channel = DeadlineHTTPChannel()
    server = factory.server
    channel.header_timeout = server.header_timeout
    channel.body_timeout = server.body_timeout
    return cast(Any, http)._GenericHTTPChannelProtocol(channel)


class CappedHTTPFactory(HTTPFactory):  # type: ignore[misc]
    protocol = _deadline_channel_protocol

    def buildProtocol(self, addr: Any) -> Any:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = CappedWebRequest
        return protocol


class CappedServer(daphne.server.Server):  # type: ignore[misc]
    """Daphne's server with CappedHTTPFactory in place of its HTTPFactory."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from django.conf import settings  # configured: Daphne loaded the application first

        self.max_request_bytes: int = settings.MAX_REQUEST_BYTES
        self.header_timeout: float = settings.HEADER_TIMEOUT_S
        self.body_timeout: float = settings.BODY_TIMEOUT_S
        super().__init__(*args, **kwargs)

    # Server.run() builds its HTTPFactory inline and keeps it in this attribute before it
    # listens; the assignment is where ours takes its place (tests/mdtboard/integration/
    # test_request_limits.py fails if a Daphne upgrade changes that).
    @property
    def http_factory(self) -> HTTPFactory:
        return self._capped_http_factory

    @http_factory.setter
    def http_factory(self, factory: HTTPFactory) -> None:
        self._capped_http_factory = CappedHTTPFactory(self)


# Daphne's command line drops a WebSocket its application has not accepted within 5 s (its
# Server class defaults to 20 s). Accepting a board socket reads the session, the user, the
# team and writes an audit row on the one thread channels gives database calls: when 50
# watchers reconnect at once (after a Redis restart) on a busy machine, the last of them
# passed 5 s and were dropped without an answer, and came back to queue again.
WEBSOCKET_CONNECT_TIMEOUT_S = 20


class CappedCommandLineInterface(CommandLineInterface):  # type: ignore[misc]
    server_class = CappedServer

    def __init__(self) -> None:
        super().__init__()
        self.parser.set_defaults(websocket_connect_timeout=WEBSOCKET_CONNECT_TIMEOUT_S)


def main(argv: list[str]) -> None:
    CappedCommandLineInterface().run(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
