"""Governed self-evolution (EvoMDT's refinement of instructions; MDTeamGPT's ChainKB): from
patterns that several ChainKB entries share, the system proposes a refinement of a prompt or a
small, capped step of a consensus weight. A proposal changes nothing until an administrator
approves it; an approved version can be rolled back, which restores the one it replaced.

Only vetted judgements reach here (consult/learning.py: no flagged rating until cleared, no
administrative rejection, no rater whose agreement is poor, nothing from a reopened decision),
and a pattern counts only across ``EVOLUTION_MIN_PATTERN`` distinct cases judged by at least
``EVOLUTION_MIN_REVIEWERS`` distinct people: one case or one reviewer repeated is not a pattern.
A proposal states its evidence in plain sentences (the cases, how many people judged them, and
their reasons as they gave them).

Patterns (over active ChainKB entries not yet behind a proposal):
- ``<cancer>:removed:<modality>``: the team took items of this modality out of the board's
  pathway in EVOLUTION_MIN_PATTERN cases of that cancer or more -> a refinement of the
  Treatment prompt naming the cases and their reasons;
- ``any:safety``: the corrections' reasons speak of harm (contraindications, organ function,
  interactions) in that many cases, whatever the cancer (the weights are the same for all) ->
  Safety's consensus weight one step up (never beyond the cap).
One proposal per prompt (and one for the weights) waits at a time: the next one is drawn from
the version the administrator's decision leaves in force, so no approved lesson is dropped."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from clinical.vocab import CANCER_TYPE_LABELS, CancerType
from knowledge.memory.models import (
    EntryKind,
    EntryStatus,
    ExperienceEntry,
    PromptVersion,
    VersionStatus,
    WeightVersion,
)
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import is_admin
from mdtboard.audit.services import audit_record

_CANCERS = {c.value for c in CancerType}


class EvolutionError(Exception):
    """An evolution action that cannot be done; the message is for the administrator."""


NOT_ADMIN = "Only an administrator decides on prompt and weight versions."
NOT_PROPOSED = "This proposal was already decided."
NOT_ACTIVE = "Only the version in force can be rolled back."
AT_CAP = "This step would take the weight beyond its cap of ±{cap}."


def _patterns(entry: ExperienceEntry) -> list[str]:
    signals = entry.signals or {}
    found = [f"{entry.cancer_type}:removed:{m}" for m in signals.get("removed") or []]
    if signals.get("safety"):
        found.append("any:safety")
    return found


def _covered(pattern: str) -> set[int]:
    """Entries already behind a proposal of this pattern (whatever became of it): a pattern
    proposes again only when new cases accumulate."""
    ids: set[int] = set()
    for model in (PromptVersion, WeightVersion):
        for based_on in model.objects.filter(pattern=pattern).values_list("based_on", flat=True):
            ids.update(int(i) for i in based_on or [])
    return ids


def _clean(text: str) -> str:
    """Free text as a quotation inside a sentence: one line, no end stop of its own."""
    return " ".join(str(text or "").split()).strip(" .;:,")


def _reason(entry: ExperienceEntry) -> str:
    """The reason the team or the rater gave for the correction."""
    given = (entry.signals or {}).get("reason")
    if not given:  # entries recorded before the reason was kept as data
        reflection = entry.error_reflection
        given = reflection.split("Reason: ", 1)[1] if "Reason: " in reflection else ""
        given = given.split(" Taken out of", 1)[0]
    return _clean(given)[:240]


def _listed(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _evidence(entries: list[ExperienceEntry]) -> str:
    """The cases behind a proposal and who judged them, as a clause."""
    cases = len({e.case_ref for e in entries})
    people = len({e.judged_by_ref for e in entries})
    return (
        f"{cases} reviewed case{'s' if cases != 1 else ''} "
        f"({_listed([e.label for e in entries])}), judged by {people} "
        f"{'people' if people != 1 else 'person'}"
    )


def _in_sentence(label: str) -> str:
    """A label inside a sentence: "Hepatocellular carcinoma" -> "hepatocellular carcinoma"
    (an acronym such as "HCC" stays as it is)."""
    return label if label[1:2].isupper() else label[:1].lower() + label[1:]


def _reasons(entries: Iterable[ExperienceEntry]) -> str:
    reasons = [f"“{r}”" for r in dict.fromkeys(_reason(e) for e in entries) if r]
    if not reasons:
        return "No reason was recorded."
    return f"The reasons given: {'; '.join(reasons)}."


def _next_number(model: Any, **where: Any) -> int:
    top = model.objects.filter(**where).aggregate(n=Max("number"))["n"]
    return int(top or 0) + 1


def _prompt_proposal(pattern: str, entries: list[ExperienceEntry]) -> PromptVersion:
    cancer, _, modality = pattern.split(":", 2)
    active = PromptVersion.objects.filter(prompt="treatment", status=VersionStatus.ACTIVE).first()
    label = CANCER_TYPE_LABELS.get(CancerType(cancer), cancer) if cancer in _CANCERS else cancer
    cases = _listed([e.label for e in entries])
    lesson = (
        f"- {label}: in {len(entries)} reviewed cases ({cases}) the team took {modality} "
        f"out of the board's pathway. Before proposing {modality} in a similar case, state "
        "the patient facts that make it suitable and check them against the reasons the "
        "team gave, which the similar past cases you receive repeat."
    )
    addendum = f"{active.addendum}\n{lesson}" if active is not None else lesson
    return PromptVersion.objects.create(
        prompt="treatment",
        number=_next_number(PromptVersion, prompt="treatment"),
        addendum=addendum,
        content_hash=hashlib.sha256(addendum.encode()).hexdigest(),
        rationale=(
            f"In {_evidence(entries)}, the team took {modality} out of the board's pathway "
            f"in {_in_sentence(label)}. "
            f"{_reasons(entries)}"
        ),
        based_on=[e.pk for e in entries],
        pattern=pattern,
    )


def _weight_proposal(pattern: str, entries: list[ExperienceEntry]) -> WeightVersion | None:
    step, cap = settings.EVOLUTION_WEIGHT_STEP, settings.EVOLUTION_WEIGHT_CAP
    active = WeightVersion.objects.filter(status=VersionStatus.ACTIVE).first()
    offsets = dict(active.offsets) if active is not None else {}
    current = float(offsets.get("safety", 0.0))
    if current + step > cap + 1e-9:
        return None  # at the cap: a prompt refinement, or a human, must do the rest
    offsets["safety"] = round(current + step, 4)
    cancers = _listed(
        sorted(
            _in_sentence(CANCER_TYPE_LABELS.get(CancerType(c), c)) if c in _CANCERS else c
            for c in {e.cancer_type for e in entries}
        )
    )
    return WeightVersion.objects.create(
        number=_next_number(WeightVersion),
        offsets=offsets,
        rationale=(
            f"In {_evidence(entries)}, the board's plan was corrected for reasons of safety "
            f"({cancers}). Safety's consensus weight goes up by {step} (to "
            f"{offsets['safety']:+.2f}; the cap is ±{cap}). {_reasons(entries)}"
        ),
        based_on=[e.pk for e in entries],
        pattern=pattern,
    )


@transaction.atomic
def evolution_propose() -> list[PromptVersion | WeightVersion]:
    """Draw proposals from the ChainKB patterns that reached the threshold. Idempotent: the
    same entries never propose twice; nothing proposed takes effect."""
    minimum = settings.EVOLUTION_MIN_PATTERN
    reviewers = settings.EVOLUTION_MIN_REVIEWERS
    groups: dict[str, list[ExperienceEntry]] = defaultdict(list)
    # An entry that does not say which case and whose judgement it is counts toward nothing.
    chain = ExperienceEntry.objects.filter(
        kind=EntryKind.CHAIN,
        status=EntryStatus.ACTIVE,
        case_ref__isnull=False,
        judged_by_ref__isnull=False,
    ).order_by("id")
    for entry in chain:
        for pattern in _patterns(entry):
            groups[pattern].append(entry)
    made: list[PromptVersion | WeightVersion] = []
    for pattern, entries in sorted(groups.items()):
        covered = _covered(pattern)
        new = [e for e in entries if e.pk not in covered]
        distinct_cases = {e.case_ref for e in new}
        if len(distinct_cases) < minimum or len({e.judged_by_ref for e in new}) < reviewers:
            continue
        proposal: PromptVersion | WeightVersion | None
        if pattern.endswith(":safety"):
            if WeightVersion.objects.filter(status=VersionStatus.PROPOSED).exists():
                continue  # drawn again once the administrator has decided on the pending one
            proposal = _weight_proposal(pattern, new)
        else:
            if PromptVersion.objects.filter(
                prompt="treatment", status=VersionStatus.PROPOSED
            ).exists():
                continue
            proposal = _prompt_proposal(pattern, new)
        if proposal is None:
            continue
        audit_record(
            action="evolution.propose",
            obj=proposal,
            payload={"pattern": pattern, "based_on": proposal.based_on},
        )
        made.append(proposal)
    return made


def _lock(version: PromptVersion | WeightVersion) -> Any:
    return type(version).objects.select_for_update().get(pk=version.pk)


def _active_of(version: PromptVersion | WeightVersion) -> Any:
    if isinstance(version, PromptVersion):
        return PromptVersion.objects.filter(
            prompt=version.prompt, status=VersionStatus.ACTIVE
        ).first()
    return WeightVersion.objects.filter(status=VersionStatus.ACTIVE).first()


@transaction.atomic
def version_approve(
    *, actor: User, version: PromptVersion | WeightVersion, note: str = ""
) -> PromptVersion | WeightVersion:
    """Put a proposal in force: consultations started from now on use it (and record it)."""
    if not is_admin(actor):
        raise EvolutionError(NOT_ADMIN)
    version = _lock(version)
    if version.status != VersionStatus.PROPOSED:
        raise EvolutionError(NOT_PROPOSED)
    if isinstance(version, WeightVersion):
        cap = settings.EVOLUTION_WEIGHT_CAP
        if any(abs(float(v)) > cap + 1e-9 for v in version.offsets.values()):
            raise EvolutionError(AT_CAP.format(cap=cap))
    previous = _active_of(version)
    if previous is not None:
        previous.status = VersionStatus.SUPERSEDED
        previous.save(update_fields=["status"])
    version.status = VersionStatus.ACTIVE
    version.replaces = previous
    version.decided_by = actor
    version.decided_at = timezone.now()
    version.decision_note = note.strip()[:500]
    version.save(update_fields=["status", "replaces", "decided_by", "decided_at", "decision_note"])
    audit_record(
        action="evolution.approve",
        actor=actor,
        obj=version,
        payload={"replaces": previous.pk if previous is not None else None},
    )
    return version


@transaction.atomic
def version_reject(
    *, actor: User, version: PromptVersion | WeightVersion, note: str = ""
) -> PromptVersion | WeightVersion:
    if not is_admin(actor):
        raise EvolutionError(NOT_ADMIN)
    version = _lock(version)
    if version.status != VersionStatus.PROPOSED:
        raise EvolutionError(NOT_PROPOSED)
    version.status = VersionStatus.REJECTED
    version.decided_by = actor
    version.decided_at = timezone.now()
    version.decision_note = note.strip()[:500]
    version.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
    audit_record(action="evolution.reject", actor=actor, obj=version)
    return version


@transaction.atomic
def version_rollback(
    *, actor: User, version: PromptVersion | WeightVersion
) -> PromptVersion | WeightVersion | None:
    """Take the version in force out; the one it replaced (if any) is in force again, else the
    default (the prompt file alone, the engine's own weights). Returns what is now in force."""
    if not is_admin(actor):
        raise EvolutionError(NOT_ADMIN)
    version = _lock(version)
    if version.status != VersionStatus.ACTIVE:
        raise EvolutionError(NOT_ACTIVE)
    version.status = VersionStatus.ROLLED_BACK
    version.rolled_back_by = actor
    version.rolled_back_at = timezone.now()
    version.save(update_fields=["status", "rolled_back_by", "rolled_back_at"])
    restored = None
    if version.replaces_id is not None:
        restored = type(version).objects.select_for_update().get(pk=version.replaces_id)
        restored.status = VersionStatus.ACTIVE
        restored.save(update_fields=["status"])
    audit_record(
        action="evolution.rollback",
        actor=actor,
        obj=version,
        payload={"restored": restored.pk if restored is not None else None},
    )
    return restored
