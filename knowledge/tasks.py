"""Celery interfaces of the knowledge app: they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from knowledge.embeddings import EmbeddingError
from knowledge.services import versions_embed


@shared_task(
    name="knowledge.versions_embed",
    soft_time_limit=120,
    acks_late=True,
    # A provider that is down or overloaded (EmbeddingError) is worth trying again later.
    autoretry_for=(ConnectionError, EmbeddingError),
    retry_backoff=True,
    max_retries=5,
)
def versions_embed_task(version_ids: list[int]) -> int:
    """Embed published versions that lack an embedding (a publication, or a whole bundle);
    idempotent, so a redelivered task does no harm."""
    return versions_embed(version_ids=version_ids)
