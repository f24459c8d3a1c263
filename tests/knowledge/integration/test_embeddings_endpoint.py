"""The OpenAI-compatible embeddings provider, against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from knowledge.embeddings import EmbeddingError, OpenAICompatibleEmbeddings


class _Handler(BaseHTTPRequestHandler):
    reply: Any = None
    seen: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers["Authorization"], **body})
        status, payload = type(self).reply(body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def endpoint() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("Handler", (_Handler,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    server.shutdown()
    server.server_close()


def test_embeddings_endpoint_returns_unit_vectors_in_input_order(endpoint: Any) -> None:
    url, handler = endpoint

    def reply(body: dict[str, Any]) -> tuple[int, Any]:
        # Answer out of order, unnormalised: the client must sort by index and normalise.
        rows = [
            {"index": i, "embedding": [float(i + 1)] * 384} for i, _ in enumerate(body["input"])
        ]
        return 200, {"data": list(reversed(rows))}

    handler.reply = reply
    provider = OpenAICompatibleEmbeddings(base_url=url, api_key="sk-test", model="emb-model")
    vectors = provider.embed(["first", "second"])
    assert len(vectors) == 2
    assert vectors[0] == pytest.approx([1 / 384**0.5] * 384)
    assert handler.seen[0]["path"] == "/v1/embeddings"
    assert handler.seen[0]["auth"] == "Bearer sk-test"
    assert handler.seen[0]["model"] == "emb-model"
    assert handler.seen[0]["dimensions"] == 384


def test_embeddings_endpoint_errors_are_reported_clearly(endpoint: Any) -> None:
    url, handler = endpoint
    provider = OpenAICompatibleEmbeddings(base_url=url, api_key="k", model="m")
    handler.reply = lambda body: (200, {"data": [{"index": 0, "embedding": [1.0, 2.0]}]})
    with pytest.raises(EmbeddingError, match="384 numbers"):
        provider.embed(["x"])
    handler.reply = lambda body: (500, {"error": "down"})
    with pytest.raises(EmbeddingError, match="endpoint failed"):
        provider.embed(["x"])
    handler.reply = lambda body: (200, {"unexpected": True})
    with pytest.raises(EmbeddingError, match="unexpected shape"):
        provider.embed(["x"])
