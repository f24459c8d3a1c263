"""Guideline import: deterministic segmentation of documents into draft knowledge-base units."""

from __future__ import annotations

from knowledge.ingest.segment import (
    MAX_INPUT_BYTES,
    Candidate,
    Format,
    IngestError,
    fingerprint,
    segment_document,
)

__all__ = [
    "MAX_INPUT_BYTES",
    "Candidate",
    "Format",
    "IngestError",
    "fingerprint",
    "segment_document",
]
