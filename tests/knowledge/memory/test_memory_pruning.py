"""Cache-and-prune keeps what its policy says: the most useful of near-identical entries, the
entries that helped however old, the store within its bound; it retires duplicates, stale
entries and the least useful beyond the bound, and says so in its figures."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from knowledge.memory.models import ExperienceEntry, PruneRun
from knowledge.memory.pruning import PrunePolicy, memory_prune
from knowledge.memory.selectors import memory_figures
from mdtboard.audit.models import AuditEvent

pytestmark = pytest.mark.django_db
DIM = 384
POLICY = PrunePolicy(max_entries=100, dedupe_similarity=0.97, stale_days=365)


def _vector(*weights: float) -> list[float]:
    raw = list(weights) + [0.0] * (DIM - len(weights))
    norm = sum(x * x for x in raw) ** 0.5
    return [x / norm for x in raw]


def _entry(n: int, vector: list[float], *, cancer: str = "hcc", **fields: Any) -> ExperienceEntry:
    age = fields.pop("age_days", 0)
    entry = ExperienceEntry.objects.create(
        kind="correct",
        source="review_accept",
        source_ref=f"review:{n}",
        cancer_type=cancer,
        case_summary=f"case {n}",
        plan=f"plan {n}",
        embedding=vector,
        embedding_provider="test",
        **fields,
    )
    if age:
        ExperienceEntry.objects.filter(pk=entry.pk).update(
            created_at=timezone.now() - timedelta(days=age)
        )
    entry.refresh_from_db()
    return entry


def _status(entry: ExperienceEntry) -> str:
    entry.refresh_from_db()
    return entry.status


def test_near_identical_entries_keep_the_one_that_helped_and_pool_its_counts() -> None:
    # given two near-identical entries, the older one recalled and helpful
    useful = _entry(1, _vector(1, 0.01), times_used=3, times_helped=2)
    twin = _entry(2, _vector(1, 0.02), times_used=1)
    other = _entry(3, _vector(0, 1))  # a different case
    other_cancer = _entry(4, _vector(1, 0.01), cancer="breast")  # same text, other cancer
    # when the store is pruned
    run = memory_prune(policy=POLICY)
    # then the useful one stays with the twin's counts, the twin is retired as its duplicate
    assert _status(useful) == "active"
    useful.refresh_from_db()
    assert (useful.times_used, useful.times_helped) == (4, 2)
    assert _status(twin) == "retired"
    twin.refresh_from_db()
    assert twin.retired_reason == f"duplicate of {useful.label}"
    # and different cases, or other cancers, are not duplicates
    assert _status(other) == "active"
    assert _status(other_cancer) == "active"
    assert (run.duplicates, run.stale, run.over_capacity, run.active_after) == (1, 0, 0, 3)


def test_stale_entries_are_retired_unless_they_helped() -> None:
    old_unused = _entry(1, _vector(1), age_days=400)
    old_helpful = _entry(2, _vector(0, 1), age_days=400, times_used=1, times_helped=1)
    old_but_recalled_lately = _entry(
        3, _vector(0, 0, 1), age_days=400, times_used=1, last_used_at=timezone.now()
    )
    recent = _entry(4, _vector(0, 0, 0, 1), age_days=10)
    run = memory_prune(policy=POLICY)
    assert _status(old_unused) == "retired"
    assert _status(old_helpful) == "active"
    assert _status(old_but_recalled_lately) == "active"
    assert _status(recent) == "active"
    assert (run.stale, run.kept_helped) == (1, 1)


def test_the_store_stays_within_its_bound_the_least_useful_going_first() -> None:
    helped = _entry(1, _vector(1), times_used=1, times_helped=1, age_days=30)
    used = _entry(2, _vector(0, 1), times_used=5, age_days=20)
    newest_unused = _entry(3, _vector(0, 0, 1), age_days=1)
    oldest_unused = _entry(4, _vector(0, 0, 0, 1), age_days=50)
    run = memory_prune(policy=PrunePolicy(max_entries=3, dedupe_similarity=0.97, stale_days=365))
    assert [_status(e) for e in (helped, used, newest_unused)] == ["active"] * 3
    assert _status(oldest_unused) == "retired"
    assert run.over_capacity == 1
    assert run.active_after == 3
    # and the admin page's figures say what happened
    figures = memory_figures()
    assert (figures.active, figures.retired) == (3, 1)
    assert figures.retired_by_reason == [("over capacity", 1)]
    assert PruneRun.objects.count() == 1
    assert AuditEvent.objects.filter(action="memory.prune").count() == 1
    assert AuditEvent.objects.filter(action="memory.entry.retire").count() == 1


def test_an_entry_whose_embedding_failed_is_embedded_by_the_next_pass() -> None:
    entry = _entry(1, _vector(1))
    ExperienceEntry.objects.filter(pk=entry.pk).update(embedding=None, embedding_provider="")
    run = memory_prune(policy=POLICY)
    entry.refresh_from_db()
    assert run.embedded == 1
    assert entry.embedding is not None
    assert entry.embedding_provider.startswith("local:")
