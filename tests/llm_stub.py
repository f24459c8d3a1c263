"""A scripted OpenAI-compatible chat-completions server on loopback, for LLM-mode tests that use
real HTTP and the real openai SDK."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from consult.llm import approx_tokens

_ROLE_LINE = re.compile(r"^ROLE:\s*(\S+)\s*$", re.MULTILINE)


@dataclass
class StubRequest:
    """One request as the server received it."""

    model: str
    messages: list[dict[str, Any]]
    response_format: dict[str, Any] | None
    stream: bool
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes = b""  # the request body as received

    @property
    def system(self) -> str:
        """The first system message's text ("" if none)."""
        for message in self.messages:
            if message.get("role") == "system":
                return _text(message)
        return ""

    @property
    def user(self) -> str:
        """The last user message's text ("" if none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text(message)
        return ""

    @property
    def role(self) -> str:
        """The board role, from the engine's ``ROLE: <name>`` line in the system message."""
        match = _ROLE_LINE.search(self.system)
        return match.group(1) if match else ""

    @property
    def prompt_tokens(self) -> int:
        """What the request costs by the one counting rule of tests and bench
        (``consult.llm.approx_tokens``: characters ÷ 4): every message's text and the
        response_format (its JSON Schema is sent, and paid for, with every call)."""
        text = "".join(_text(message) for message in self.messages)
        if self.response_format:
            # As the client sent it: compact JSON, the serialisation every request body has
            # (httpx), not the spaced form json.dumps gives by default.
            text += json.dumps(self.response_format, ensure_ascii=False, separators=(",", ":"))
        return approx_tokens(text)

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The JSON Schema sent with response_format json_schema, if any."""
        if not self.response_format or self.response_format.get("type") != "json_schema":
            return None
        schema: dict[str, Any] | None = self.response_format.get("json_schema", {}).get("schema")
        return schema


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


@dataclass
class StubReply:
    """What the server answers to one request.

    ``status`` other than 200 answers ``{"error": error}`` (a default error if None) with
    ``headers`` (e.g. ``{"Retry-After": "0"}``). ``reject_json_schema`` answers 400 to a request
    asking for response_format json_schema and ``content`` to any other. Streaming answers
    ``content`` in pieces of ``chunk_chars`` characters, ``chunk_delay_s`` apart, then a usage
    chunk if the request asked for one (and ``stream_usage``); ``break_after_chunks`` cuts the
    connection after that many content chunks instead."""

    content: str = ""
    status: int = 200
    error: dict[str, Any] | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    # None: counted from the request and the reply (StubRequest.prompt_tokens, approx_tokens),
    # as a real server reports them; a number: exactly that.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reject_json_schema: bool = False
    chunk_chars: int = 8
    chunk_delay_s: float = 0.0
    stream_usage: bool = True
    break_after_chunks: int | None = None


_NO_REPLY = StubReply(
    status=500,
    error={"message": "stub: no scripted reply left", "type": "server_error"},
    # Keeps a client from retrying into the same empty queue.
    headers={"x-should-retry": "false"},
)

JSON_SCHEMA_REJECTED = {
    "message": "response_format json_schema is not supported",
    "type": "invalid_request_error",
    "param": "response_format",
}


class StubLLM:
    """``with StubLLM() as stub: stub.script(StubReply(content=...))``; point the client at
    ``stub.base_url``. Scripted replies (FIFO, one per request, whatever it answers) come first,
    then ``responder``; with neither, a 500 that says so."""

    def __init__(
        self,
        responder: Callable[[StubRequest], StubReply] | None = None,
        *,
        delay_s: float = 0.0,
    ) -> None:
        self.responder = responder
        self.delay_s = delay_s  # added to every reply's own delay
        self.requests: list[StubRequest] = []
        self._script: deque[StubReply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("StubLLM is not started")
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/v1"

    def env(self, **extra: str) -> dict[str, str]:
        """Environment variables that put the app in LLM mode against this stub."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "sk-stub",
            "OPENAI_MODEL": "stub-model",
            **extra,
        }

    def script(self, *replies: StubReply) -> None:
        with self._lock:
            self._script.extend(replies)

    def start(self) -> StubLLM:
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},  # stop() waits up to this long
            name="llm-stub",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        # Wakes handlers sleeping in a delay so that stop() does not wait for them.
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- called from handler threads ---------------------------------------------------------
    def _receive(self, request: StubRequest) -> StubReply:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(request)
        return _NO_REPLY

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the stub is stopping; False if it is."""
        if seconds <= 0:
            return not self._stopping.is_set()
        return not self._stopping.wait(seconds)


@contextmanager
def stub_llm(
    *replies: StubReply,
    responder: Callable[[StubRequest], StubReply] | None = None,
    delay_s: float = 0.0,
) -> Iterator[StubLLM]:
    """A started stub with ``replies`` scripted: ``with stub_llm(StubReply(...)) as stub:``."""
    with StubLLM(responder, delay_s=delay_s) as stub:
        stub.script(*replies)
        yield stub


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Handlers stuck in a delay must not hold up server_close().
    block_on_close = False
    stub: StubLLM


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 for keep-alive and chunked SSE, like real servers.
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # pytest output stays readable

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        payload = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(payload or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_json"}})
            return
        request = StubRequest(
            model=str(body.get("model", "")),
            messages=list(body.get("messages") or []),
            response_format=body.get("response_format"),
            stream=bool(body.get("stream")),
            body=body,
            headers={name.lower(): value for name, value in self.headers.items()},
            raw=payload,
        )
        stub = self.server.stub
        try:
            reply = stub._receive(request)
        except Exception as exc:  # noqa: BLE001 - a broken responder fails the test, visibly
            self._json(500, {"error": {"message": f"stub responder raised {exc!r}"}})
            return
        if not stub._sleep(stub.delay_s + reply.delay_s):
            self.close_connection = True
            return
        try:
            self._answer(request, reply)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (its timeout): exactly what timeout tests provoke.
            self.close_connection = True

    def _answer(self, request: StubRequest, reply: StubReply) -> None:
        if reply.reject_json_schema and request.json_schema is not None:
            self._json(400, {"error": JSON_SCHEMA_REJECTED})
            return
        if reply.status != 200:
            error = reply.error or {
                "message": f"stub error {reply.status}",
                "type": "server_error" if reply.status >= 500 else "invalid_request_error",
            }
            self._json(reply.status, {"error": error}, reply.headers)
            return
        completion_tokens = (
            reply.completion_tokens
            if reply.completion_tokens is not None
            else approx_tokens(reply.content)
        )
        prompt_tokens = (
            reply.prompt_tokens if reply.prompt_tokens is not None else request.prompt_tokens
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if request.stream:
            self._stream(request, reply, usage)
            return
        self._json(
            200,
            {
                "id": f"chatcmpl-stub-{time.monotonic_ns()}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": usage,
            },
            reply.headers,
        )

    def _stream(self, request: StubRequest, reply: StubReply, usage: dict[str, int]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()

        base = {
            "id": f"chatcmpl-stub-{time.monotonic_ns()}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": request.model,
        }
        size = max(reply.chunk_chars, 1)
        pieces = [reply.content[i : i + size] for i in range(0, len(reply.content), size)]
        for number, piece in enumerate(pieces):
            if reply.break_after_chunks is not None and number >= reply.break_after_chunks:
                # No terminating chunk: the client sees an incomplete body, as when a proxy or
                # the model server dies mid-answer.
                self.close_connection = True
                return
            delta: dict[str, Any] = {"content": piece}
            if number == 0:
                delta["role"] = "assistant"
            self._event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            if reply.chunk_delay_s and not self.server.stub._sleep(reply.chunk_delay_s):
                self.close_connection = True
                return
        self._event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
        if include_usage and reply.stream_usage:
            self._event({**base, "choices": [], "usage": usage})
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _event(self, data: dict[str, Any]) -> None:
        self._chunk(f"data: {json.dumps(data)}\n\n".encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(
        self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        encoded = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(encoded)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(encoded)
