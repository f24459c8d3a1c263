"""Celery interfaces of the knowledge app: they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from knowledge.services import versions_embed


@shared_task(
    name="knowledge.unit_version_embed",
    soft_time_limit=120,
    acks_late=True,
    autoretry_for=(ConnectionError,),
    retry_backoff=True,
    max_retries=5,
)
def unit_version_embed(version_id: int) -> int:
    """Embed one published version; idempotent, so a redelivered task does no harm."""
    return versions_embed(version_ids=[version_id])
