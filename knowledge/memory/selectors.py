"""Reads of the experience memory: recall of similar past cases, the admin's lists, the
figures of the store, and the prompt and weight versions in force."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from pgvector.django import CosineDistance

from knowledge.embeddings import get_provider
from knowledge.memory.models import (
    EntryKind,
    EntryStatus,
    ExperienceEntry,
    PromptVersion,
    PruneRun,
    VersionStatus,
    WeightVersion,
)


@dataclass(frozen=True)
class Recalled:
    entry_id: int
    kind: str
    label: str
    summary: str
    lesson: str
    similarity: float


def experience_similar(
    *, text: str, cancer_type: str, k: int, min_similarity: float | None = None
) -> list[Recalled]:
    """The k active entries of the same cancer most similar to the case text, CorrectKB and
    ChainKB together, best first; none below the floor (an unrelated case teaches nothing)."""
    if k <= 0:
        return []
    base = ExperienceEntry.objects.filter(
        status=EntryStatus.ACTIVE, cancer_type=cancer_type, embedding__isnull=False
    )
    if not base.exists():  # no embedding call for an empty memory (the usual offline case)
        return []
    floor = settings.MEMORY_MIN_SIMILARITY if min_similarity is None else min_similarity
    [vector] = get_provider().embed([text])
    rows = base.annotate(distance=CosineDistance("embedding", vector)).order_by("distance", "id")[
        :k
    ]
    found = []
    for entry in rows:
        similarity = round(1.0 - float(entry.distance), 4)
        if similarity < floor:
            continue
        found.append(
            Recalled(
                entry_id=entry.pk,
                kind=entry.kind,
                label=entry.label,
                summary=entry.case_summary,
                lesson=entry.shared_lesson,
                similarity=similarity,
            )
        )
    return found


def experience_list(
    *, kind: str = "", status: str = "", cancer_type: str = ""
) -> QuerySet[ExperienceEntry]:
    entries = ExperienceEntry.objects.all()
    if kind:
        entries = entries.filter(kind=kind)
    if status:
        entries = entries.filter(status=status)
    if cancer_type:
        entries = entries.filter(cancer_type=cancer_type)
    return entries.defer("embedding")


def experience_learnt_from(*, source_ref: str) -> ExperienceEntry | None:
    """The entry learnt from a review or rating ("review:12", "rating:7"), if any."""
    return ExperienceEntry.objects.filter(source_ref=source_ref).first()


def experience_get(*, pk: int) -> ExperienceEntry:
    return ExperienceEntry.objects.get(pk=pk)


@dataclass(frozen=True)
class MemoryFigures:
    active: int
    retired: int
    correct: int
    chain: int
    capacity: int
    used: int
    helped: int
    unembedded: int
    by_cancer: list[tuple[str, int]]
    retired_by_reason: list[tuple[str, int]]


def memory_figures() -> MemoryFigures:
    """What the admin page shows of the store and its pruning."""
    entries = ExperienceEntry.objects.all()
    counts = entries.aggregate(
        active=Count("id", filter=Q(status=EntryStatus.ACTIVE)),
        retired=Count("id", filter=Q(status=EntryStatus.RETIRED)),
        correct=Count("id", filter=Q(status=EntryStatus.ACTIVE, kind=EntryKind.CORRECT)),
        chain=Count("id", filter=Q(status=EntryStatus.ACTIVE, kind=EntryKind.CHAIN)),
        used=Count("id", filter=Q(status=EntryStatus.ACTIVE, times_used__gt=0)),
        helped=Count("id", filter=Q(status=EntryStatus.ACTIVE, times_helped__gt=0)),
        unembedded=Count("id", filter=Q(status=EntryStatus.ACTIVE, embedding__isnull=True)),
    )
    by_cancer = list(
        entries.filter(status=EntryStatus.ACTIVE)
        .values_list("cancer_type")
        .annotate(n=Count("id"))
        .order_by("cancer_type")
    )
    reasons: dict[str, int] = {}
    for reason in entries.filter(status=EntryStatus.RETIRED).values_list(
        "retired_reason", flat=True
    ):
        # "duplicate of ChainKB #4" and "duplicate of ChainKB #9" are one reason.
        key = reason.split(" of ")[0].split(":")[0] or "unspecified"
        reasons[key] = reasons.get(key, 0) + 1
    return MemoryFigures(
        capacity=settings.MEMORY_MAX_ENTRIES,
        by_cancer=[(str(c), int(n)) for c, n in by_cancer],
        retired_by_reason=sorted(reasons.items()),
        **counts,
    )


# --- versions in force ---------------------------------------------------------------------


def prompt_versions_active() -> dict[str, PromptVersion]:
    """Prompt name -> its active database version (a prompt without one uses its file)."""
    return {v.prompt: v for v in PromptVersion.objects.filter(status=VersionStatus.ACTIVE)}


def weight_version_active() -> WeightVersion | None:
    return WeightVersion.objects.filter(status=VersionStatus.ACTIVE).first()


def versions_in_force() -> dict[str, Any]:
    """What a consultation starting now uses, as plain data for its record and the engine:
    {"prompts": {name: {"label", "addendum"}}, "weights": {"label", "offsets"}}."""
    weights = weight_version_active()
    return {
        "prompts": {
            name: {"label": v.label, "addendum": v.addendum}
            for name, v in sorted(prompt_versions_active().items())
        },
        "weights": (
            {"label": weights.label, "offsets": dict(weights.offsets)}
            if weights is not None
            else {"label": "", "offsets": {}}
        ),
    }


def proposals_pending() -> dict[str, list[Any]]:
    return {
        "prompts": list(PromptVersion.objects.filter(status=VersionStatus.PROPOSED)),
        "weights": list(WeightVersion.objects.filter(status=VersionStatus.PROPOSED)),
    }


def version_history() -> dict[str, list[Any]]:
    return {
        "prompts": list(PromptVersion.objects.exclude(status=VersionStatus.PROPOSED)),
        "weights": list(WeightVersion.objects.exclude(status=VersionStatus.PROPOSED)),
    }


def prune_runs(limit: int = 5) -> list[Any]:
    return list(PruneRun.objects.all()[:limit])
