"""Writes of the experience memory: entries recorded from reviews and ratings (the consult app
hands them over as plain data), the admin's edits and retirements, and the bookkeeping of which
consultations recalled which entries. Every change is audited."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from knowledge.embeddings import EmbeddingError, get_provider
from knowledge.memory.models import (
    EntryKind,
    EntrySource,
    EntryStatus,
    ExperienceEntry,
    ExperienceUse,
)
from mdtboard.accounts.models import User
from mdtboard.audit.services import audit_record

logger = logging.getLogger(__name__)

MAX_TEXT = 4000
EDITABLE = (
    "case_summary",
    "question",
    "plan",
    "key_reasoning",
    "initial_hypothesis",
    "analysis",
    "final_conclusion",
    "error_reflection",
)
# Changing these changes what the entry is recalled by: it is embedded again.
EMBEDDED = ("case_summary", "question")


class ExperienceError(Exception):
    """A memory action that cannot be done; the message is for the administrator."""


NOT_ACTIVE = "This entry is retired; it can no longer change."
REFLECTION_NEEDED = "A ChainKB entry needs its error reflection: it is what the board learns."
REASON_NEEDED = "Give the reason for retiring the entry."
SOURCE_KINDS = {
    EntrySource.REVIEW_ACCEPT: EntryKind.CORRECT,
    EntrySource.RATING_GOOD: EntryKind.CORRECT,
    EntrySource.REVIEW_AMEND: EntryKind.CHAIN,
    EntrySource.REVIEW_REJECT: EntryKind.CHAIN,
    EntrySource.RATING_POOR: EntryKind.CHAIN,
}


@dataclass(frozen=True)
class EntryDraft:
    """An entry as the consult app writes it (by a template, or by the LLM)."""

    source: str
    source_ref: str
    cancer_type: str
    case_summary: str
    question: str
    plan: str
    consultation_ref: int | None = None
    case_ref: int | None = None  # the dossier
    judged_by_ref: int | None = None  # the reviewer or rater
    key_reasoning: str = ""
    initial_hypothesis: str = ""
    analysis: str = ""
    final_conclusion: str = ""
    error_reflection: str = ""
    signals: Mapping[str, Any] = field(default_factory=dict)
    written_by: str = "template"

    @property
    def kind(self) -> str:
        return SOURCE_KINDS.get(EntrySource(self.source), EntryKind.CORRECT)


def _clip(text: str) -> str:
    return (text or "").strip()[:MAX_TEXT]


def experience_embed(*, entry: ExperienceEntry) -> bool:
    """Embed the entry's case; False (and the entry stays unrecallable until the next prune
    sweep embeds it) when the embedding provider fails."""
    provider = get_provider()
    try:
        [vector] = provider.embed([entry.embedding_text()])
    except EmbeddingError:
        logger.warning("experience entry %s: embedding failed; the prune sweep retries", entry.pk)
        return False
    ExperienceEntry.objects.filter(pk=entry.pk).update(
        embedding=vector, embedding_provider=provider.name
    )
    entry.embedding, entry.embedding_provider = vector, provider.name
    return True


@transaction.atomic
def experience_record(*, draft: EntryDraft, actor: User | None = None) -> ExperienceEntry:
    """Record a past case in CorrectKB or ChainKB (the source decides which). One entry per
    review or rating: recording it again returns the entry already there."""
    existing = ExperienceEntry.objects.filter(
        source=draft.source, source_ref=draft.source_ref
    ).first()
    if existing is not None:
        return existing
    kind = draft.kind
    if kind == EntryKind.CHAIN and not draft.error_reflection.strip():
        raise ExperienceError(REFLECTION_NEEDED)
    values = {name: _clip(getattr(draft, name)) for name in EDITABLE}
    entry = ExperienceEntry.objects.create(
        kind=kind,
        source=draft.source,
        source_ref=draft.source_ref,
        consultation_ref=draft.consultation_ref,
        case_ref=draft.case_ref,
        judged_by_ref=draft.judged_by_ref,
        cancer_type=draft.cancer_type,
        signals=dict(draft.signals),
        written_by=draft.written_by[:120],
        **values,
    )
    audit_record(
        action=f"memory.entry.create.{kind}",
        actor=actor,
        obj=entry,
        payload={
            "source": draft.source,
            "source_ref": draft.source_ref,
            "consultation": draft.consultation_ref,
            "written_by": entry.written_by,
        },
    )
    experience_embed(entry=entry)
    return entry


@transaction.atomic
def experience_edit(
    *, actor: User, entry: ExperienceEntry, changes: Mapping[str, str]
) -> ExperienceEntry:
    """An administrator corrects an entry's text; the audit names the fields changed."""
    entry = ExperienceEntry.objects.select_for_update().get(pk=entry.pk)
    if entry.status != EntryStatus.ACTIVE:
        raise ExperienceError(NOT_ACTIVE)
    changed = []
    for name in EDITABLE:
        if name in changes and _clip(changes[name]) != getattr(entry, name):
            setattr(entry, name, _clip(changes[name]))
            changed.append(name)
    if entry.kind == EntryKind.CHAIN and not entry.error_reflection:
        raise ExperienceError(REFLECTION_NEEDED)
    if not changed:
        return entry
    entry.save(update_fields=[*changed, "updated_at"])
    audit_record(action="memory.entry.edit", actor=actor, obj=entry, payload={"fields": changed})
    if set(changed) & set(EMBEDDED):
        experience_embed(entry=entry)
    return entry


@transaction.atomic
def experience_retire(*, actor: User, entry: ExperienceEntry, reason: str) -> ExperienceEntry:
    """Retire an entry: it is no longer recalled; it stays for the record."""
    reason = (reason or "").strip()[:300]
    if not reason:
        raise ExperienceError(REASON_NEEDED)
    entry = ExperienceEntry.objects.select_for_update().get(pk=entry.pk)
    if entry.status != EntryStatus.ACTIVE:
        raise ExperienceError(NOT_ACTIVE)
    entry.status = EntryStatus.RETIRED
    entry.retired_reason = reason
    entry.retired_at = timezone.now()
    entry.save(update_fields=["status", "retired_reason", "retired_at", "updated_at"])
    audit_record(
        action="memory.entry.retire",
        actor=actor,
        obj=entry,
        payload={"by": "admin" if actor is not None else "prune"},
    )
    return entry


# An entry retired because its judgement is not (or no longer) vetted: it comes back when it is.
UNVETTED = "Not vetted: "


@transaction.atomic
def experience_unvet(*, source_ref: str, reason: str) -> int:
    """Retire the active entries learnt from ``source_ref`` ("review:12", "rating:7"): the
    judgement was taken back or is not vetted (a reason the administrator's page shows)."""
    entries = list(
        ExperienceEntry.objects.select_for_update().filter(
            source_ref=source_ref, status=EntryStatus.ACTIVE
        )
    )
    for entry in entries:
        entry.status = EntryStatus.RETIRED
        entry.retired_reason = (UNVETTED + reason)[:300]
        entry.retired_at = timezone.now()
        entry.save(update_fields=["status", "retired_reason", "retired_at", "updated_at"])
        audit_record(
            action="memory.entry.retire",
            obj=entry,
            payload={"by": "vetting", "source_ref": source_ref},
        )
    return len(entries)


@transaction.atomic
def experience_revet(*, source_ref: str) -> int:
    """Bring back the entries of ``source_ref`` that were retired only for want of vetting."""
    entries = list(
        ExperienceEntry.objects.select_for_update().filter(
            source_ref=source_ref,
            status=EntryStatus.RETIRED,
            retired_reason__startswith=UNVETTED,
        )
    )
    for entry in entries:
        entry.status = EntryStatus.ACTIVE
        entry.retired_reason = ""
        entry.retired_at = None
        entry.save(update_fields=["status", "retired_reason", "retired_at", "updated_at"])
        audit_record(
            action="memory.entry.reinstate",
            obj=entry,
            payload={"by": "vetting", "source_ref": source_ref},
        )
    return len(entries)


@transaction.atomic
def experience_uses_record(
    *, consultation_ref: int, used: Sequence[tuple[int, float]]
) -> list[ExperienceUse]:
    """The entries a consultation recalled (entry id, similarity). Idempotent: a resumed or
    repeated run counts each entry once."""
    made = []
    now = timezone.now()
    for entry_id, similarity in used:
        use, created = ExperienceUse.objects.get_or_create(
            entry_id=entry_id,
            consultation_ref=consultation_ref,
            defaults={"similarity": similarity},
        )
        if created:
            ExperienceEntry.objects.filter(pk=entry_id).update(
                times_used=F("times_used") + 1, last_used_at=now
            )
            made.append(use)
    return made


@transaction.atomic
def experience_helped_mark(*, consultation_ref: int) -> int:
    """The team accepted a plan that recalled these entries: each of them helped (once)."""
    uses = list(
        ExperienceUse.objects.select_for_update().filter(
            consultation_ref=consultation_ref, helped=False
        )
    )
    for use in uses:
        use.helped = True
        use.save(update_fields=["helped"])
        ExperienceEntry.objects.filter(pk=use.entry_id).update(times_helped=F("times_helped") + 1)
    return len(uses)


def draft_as_dict(draft: EntryDraft) -> dict[str, Any]:
    return {**asdict(draft), "signals": dict(draft.signals)}
