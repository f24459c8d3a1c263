"""Celery interfaces of the knowledge app."""

from __future__ import annotations

import pytest

from knowledge import tasks
from knowledge.embeddings import EmbeddingError


def test_embedding_task_retries_when_the_provider_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # given an embedding provider that is down (the service raises EmbeddingError)
    calls: list[list[int]] = []

    def failing(*, version_ids: list[int]) -> int:
        calls.append(version_ids)
        raise EmbeddingError("endpoint answered 503")

    monkeypatch.setattr(tasks, "versions_embed", failing)
    # when the task runs (eagerly: a retry runs again at once)
    result = tasks.versions_embed_task.apply(args=[[1, 2]])
    # then it was retried up to its limit before failing, not given up at the first error
    assert result.failed()
    assert isinstance(result.result, EmbeddingError)
    assert len(calls) == 1 + tasks.versions_embed_task.max_retries
    assert EmbeddingError in tasks.versions_embed_task.autoretry_for
