"""Cache-and-prune (after the memory bank of ``002``): the store stays bounded and useful.

Policy, in this order, every pass:
1. entries whose embedding failed are embedded again (an unembedded entry is never recalled);
2. near-identical entries (same kind and cancer, cosine similarity at or above
   MEMORY_DEDUPE_SIMILARITY) are merged: the most useful one stays (helped, then recalled, then
   newest) and takes over the others' counts; the others are retired as duplicates;
3. entries never recalled (or last recalled) more than MEMORY_STALE_DAYS ago are retired as
   stale, unless they helped: an entry recalled by a plan the team then accepted is kept;
4. over MEMORY_MAX_ENTRIES, the least useful are retired until the store fits, those that
   helped last.
Retired entries stay in the database (and the audit log), never recalled again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from knowledge.memory.models import EntryStatus, ExperienceEntry, PruneRun
from knowledge.memory.services import experience_embed
from mdtboard.audit.services import audit_record


@dataclass(frozen=True)
class PrunePolicy:
    max_entries: int
    dedupe_similarity: float
    stale_days: int

    @classmethod
    def from_settings(cls) -> PrunePolicy:
        return cls(
            max_entries=settings.MEMORY_MAX_ENTRIES,
            dedupe_similarity=settings.MEMORY_DEDUPE_SIMILARITY,
            stale_days=settings.MEMORY_STALE_DAYS,
        )


def _usefulness(entry: ExperienceEntry) -> tuple[int, int, datetime, int]:
    return (entry.times_helped, entry.times_used, entry.created_at, entry.pk)


def _cosine(a: list[float], b: list[float]) -> float:
    # Embeddings are unit length (knowledge.embeddings): the dot product is the cosine.
    return float(sum(x * y for x, y in zip(a, b, strict=True)))


def _retire(entry: ExperienceEntry, reason: str, now: datetime) -> None:
    entry.status = EntryStatus.RETIRED
    entry.retired_reason = reason[:300]
    entry.retired_at = now
    entry.save(
        update_fields=[
            "status",
            "retired_reason",
            "retired_at",
            "times_used",
            "times_helped",
            "updated_at",
        ]
    )
    audit_record(
        action="memory.entry.retire",
        obj=entry,
        payload={"by": "prune", "reason": reason.split(" of ")[0].split(":")[0]},
    )


@transaction.atomic
def memory_prune(*, policy: PrunePolicy | None = None, now: datetime | None = None) -> PruneRun:
    """One pass of the policy above; returns (and keeps) its figures."""
    policy = policy or PrunePolicy.from_settings()
    now = now or timezone.now()
    active = list(ExperienceEntry.objects.select_for_update().filter(status=EntryStatus.ACTIVE))
    run = PruneRun(examined=len(active))
    for entry in active:
        if entry.embedding is None and experience_embed(entry=entry):
            run.embedded += 1

    # 2. duplicates: the most useful of each near-identical group stays.
    kept: list[ExperienceEntry] = []
    for entry in sorted(active, key=_usefulness, reverse=True):
        twin = None
        if entry.embedding is not None:
            vector = list(entry.embedding)
            twin = next(
                (
                    k
                    for k in kept
                    if k.kind == entry.kind
                    and k.cancer_type == entry.cancer_type
                    and k.embedding is not None
                    and _cosine(list(k.embedding), vector) >= policy.dedupe_similarity
                ),
                None,
            )
        if twin is None:
            kept.append(entry)
            continue
        twin.times_used += entry.times_used
        twin.times_helped += entry.times_helped
        twin.save(update_fields=["times_used", "times_helped", "updated_at"])
        _retire(entry, f"duplicate of {twin.label}", now)
        run.duplicates += 1

    # 3. stale: not recalled for a long time, and never helped.
    horizon = now - timedelta(days=policy.stale_days)
    fresh = []
    for entry in kept:
        last = entry.last_used_at or entry.created_at
        if entry.times_helped == 0 and last < horizon:
            _retire(entry, f"stale: not recalled in {policy.stale_days} days", now)
            run.stale += 1
        else:
            fresh.append(entry)

    # 4. the bound: the least useful go first; those that helped go last.
    fresh.sort(key=_usefulness, reverse=True)
    for entry in fresh[policy.max_entries :]:
        _retire(entry, f"over capacity: the store keeps {policy.max_entries}", now)
        run.over_capacity += 1
    survivors = fresh[: policy.max_entries]
    run.kept_helped = sum(1 for e in survivors if e.times_helped > 0)
    run.active_after = len(survivors)
    run.save()
    audit_record(
        action="memory.prune",
        obj=run,
        payload={
            "duplicates": run.duplicates,
            "stale": run.stale,
            "over_capacity": run.over_capacity,
            "active_after": run.active_after,
        },
    )
    return run
