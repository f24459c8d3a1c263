"""Writes to the knowledge base: sources, unit versions and their review, bundles, embeddings.

Workflow: every edit makes a new immutable draft version; the author sends it to review; a
second curator (or an admin) publishes it, which retires the previously published version
and queues its embedding. Nobody, administrators included, publishes their own version except
through the flagged and audited hot-fix path, meant for safety alerts; a draft that is not
one's own only an administrator may hot-fix.

Four eyes on every weakening of a safety rule, whoever asks (knowledge.safety_change reads the
typed rule to decide): retiring a unit, and publishing a version that weakens the published
safety rule, wait in an ``ApprovalRequest`` until someone other than who asked (a second curator
or an administrator) approves; a hot-fix may only add or strengthen, and waits for a second
person to confirm it afterwards while it is already live.

The shipped seed, loaded by the system at every start, only adds the units that do not exist
yet: once loaded, a unit belongs to the curators.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.contrib.postgres.search import SearchVector
from django.db import models, transaction
from django.db.models import Value
from django.utils import timezone
from pydantic import ValidationError

from clinical.rules import FORMAT_ID, Bundle, SourceSpec, UnitSpec, content_hash, unit_content
from clinical.vocab import SAFETY_KINDS
from knowledge.bundle import YamlTooLarge, bundle_from_documents, nesting_error, yaml_load_all
from knowledge.embeddings import get_provider
from knowledge.models import (
    ApprovalKind,
    ApprovalRequest,
    ApprovalStatus,
    GuidelineSource,
    KnowledgeUnit,
    UnitEmbedding,
    UnitVersion,
    VersionStatus,
)
from knowledge.safety_change import SafetyChange
from knowledge.selectors import safety_change_of, version_safety_change
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, has_role, is_admin
from mdtboard.audit.services import audit_record


class KnowledgeError(Exception):
    pass


NOT_A_CURATOR = "Only curators and administrators change the knowledge base."
FOUR_EYES = (
    "Someone other than its author, a second curator or an administrator, must publish this "
    "version (four eyes)."
)
NOT_YOUR_DRAFT = (
    "Only its author or an administrator may publish a draft (as a hot-fix); otherwise the "
    "author sends it to review."
)
STALE_VERSION = (
    "v{number} is older than v{newer}, which has already been published: publishing v{number} "
    "would roll the unit back. Edit the unit to make a new version instead."
)
WRONG_STATUS = "This version is {status}; it cannot be {action}."
NO_CHANGE = "Nothing changed: the edit is identical to the current version."
HOTFIX_REASON = "A hot-fix needs a reason (the safety alert it answers)."
HOTFIX_REASON_VAGUE = (
    "Say which safety alert this hot-fix answers, in words: at least {min_length} characters "
    "and {min_words} words (the audit log keeps it)."
)
HOTFIX_NOT_SAFETY = (
    "Only safety units (contraindications, interactions, organ-function gates) may be published "
    "as a hot-fix by a curator; send this version to review for another curator."
)
HOTFIX_WEAKENS = (
    "A hot-fix may only add to or strengthen a safety rule, and this version weakens the "
    "published one: {reasons} Send it to review: a second curator or an administrator must "
    "approve it."
)
SYSTEM_WEAKENS = (
    "This version weakens the published safety rule ({reasons}); the system does not publish "
    "it alone: a curator or an administrator must approve it."
)
OWN_REQUEST = (
    "You asked for this change: someone else, a second curator or an administrator, must "
    "decide on it (four eyes)."
)
OWN_VERSION_REVIEW = (
    "This is your own version: someone else, a second curator or an administrator, must "
    "decide on it (four eyes)."
)
NOT_PENDING = "This request has already been {status}."
NOT_YOUR_REQUEST = "Only the person who asked may withdraw a request."
RETIRE_PENDING = (
    "Retiring {key} v{number} is already waiting for a second curator or an administrator."
)
NO_LONGER_PUBLISHED = (
    "{key} v{number} is no longer the published version, so the request no longer applies; "
    "ask again about the version now published."
)
HOTFIX_NOT_WITHDRAWN = "A hot-fix's second review cannot be withdrawn: it is already live."
HOTFIX_REASON_MIN_LENGTH = 20
HOTFIX_REASON_MIN_WORDS = 3
# Fewer distinct letters and digits than this is filler ("aaaa…", "asdfasdf…"), not a reason.
_HOTFIX_REASON_MIN_DISTINCT = 8


def _require_curator(actor: User | None) -> None:
    # actor None is the system: a management command run by an operator with shell access.
    if actor is not None and not has_role(actor, Role.CURATOR, Role.ADMIN):
        raise KnowledgeError(NOT_A_CURATOR)


def hotfix_reason_error(reason: str) -> str | None:
    """Why ``reason`` is not a substantive hot-fix reason, or None when it is one."""
    text = reason.strip()
    if not text:
        return HOTFIX_REASON
    distinct = {c for c in text.casefold() if c.isalnum()}
    if (
        len(text) < HOTFIX_REASON_MIN_LENGTH
        or len(text.split()) < HOTFIX_REASON_MIN_WORDS
        or len(distinct) < _HOTFIX_REASON_MIN_DISTINCT
    ):
        return HOTFIX_REASON_VAGUE.format(
            min_length=HOTFIX_REASON_MIN_LENGTH, min_words=HOTFIX_REASON_MIN_WORDS
        )
    return None


def hotfix_allowed_kind(*, actor: User | None, kind: str) -> bool:
    """Curators hot-fix safety units only; an administrator any kind. Administrators manage accounts
    (they could make a second curator): restricting them would only stop their publishing
    bundle import, not protect anything."""
    return kind in SAFETY_KINDS or is_admin(actor)


def _check_hotfix(*, actor: User | None, version: UnitVersion, reason: str) -> None:
    if not hotfix_allowed_kind(actor=actor, kind=version.unit.kind):
        raise KnowledgeError(HOTFIX_NOT_SAFETY)
    error = hotfix_reason_error(reason)
    if error is not None:
        raise KnowledgeError(error)


def _pretty(content: dict[str, Any]) -> list[str]:
    return json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def content_diff(
    old: dict[str, Any] | None, new: dict[str, Any], *, old_label: str, new_label: str
) -> str:
    return "\n".join(
        difflib.unified_diff(
            _pretty(old) if old is not None else [],
            _pretty(new),
            fromfile=old_label,
            tofile=new_label,
            lineterm="",
        )
    )


# --- sources ------------------------------------------------------------------------------


@transaction.atomic
def source_save(*, actor: User | None, spec: SourceSpec) -> GuidelineSource:
    """Create or update a source by key."""
    _require_curator(actor)
    fields = spec.model_dump(exclude={"key"})
    source, created = GuidelineSource.objects.update_or_create(key=spec.key, defaults=fields)
    audit_record(
        action="kb.source." + ("create" if created else "update"),
        actor=actor,
        obj=source,
        payload={"key": spec.key},
    )
    return source


# --- versions -----------------------------------------------------------------------------


def _new_version(
    *, unit: KnowledgeUnit, spec: UnitSpec, actor: User | None, status: str = VersionStatus.DRAFT
) -> UnitVersion:
    content = unit_content(spec)
    digest = content_hash(content)
    previous = unit.versions.order_by("-number").first()
    if previous is not None and previous.content_hash == digest:
        raise KnowledgeError(NO_CHANGE)
    number = (previous.number + 1) if previous else 1
    source = GuidelineSource.objects.filter(key=spec.source).first()
    if source is None:
        raise KnowledgeError(f"Unknown source {spec.source!r}: add the source first.")
    version = UnitVersion.objects.create(
        unit=unit,
        number=number,
        source=source,
        content=content,
        content_hash=digest,
        diff=content_diff(
            previous.content if previous else None,
            content,
            old_label=f"{unit.key} v{number - 1}" if previous else "(new)",
            new_label=f"{unit.key} v{number}",
        ),
        title=spec.title,
        text=spec.text,
        anchor=spec.anchor,
        grade_system=spec.grade.system,
        grade_native=spec.grade.native,
        grade_ordinal=spec.grade.ordinal,
        search=SearchVector(Value(spec.title), weight="A", config="english")
        + SearchVector(Value(spec.text), weight="B", config="english")
        + SearchVector(Value(" ".join(_action_terms(spec))), weight="A", config="simple"),
        author=actor if getattr(actor, "is_authenticated", False) else None,
        status=status,
    )
    return version


def _action_terms(spec: UnitSpec) -> list[str]:
    action = spec.action.model_dump(mode="json")
    terms = [str(a) for a in action.get("agents", [])]
    for key in ("description", "what", "advice", "statement", "modality", "gate"):
        if action.get(key):
            terms.append(str(action[key]))
    return terms


@transaction.atomic
def unit_save_draft(*, actor: User | None, spec: UnitSpec) -> UnitVersion:
    """An edit: a new draft version of the unit (created if new). Nothing goes live."""
    _require_curator(actor)
    unit, created = KnowledgeUnit.objects.get_or_create(
        key=spec.key,
        defaults={
            "kind": spec.kind.value,
            "cancer_type": spec.cancer_type.value,
            "created_by": actor,
        },
    )
    if not created and (unit.kind != spec.kind.value or unit.cancer_type != spec.cancer_type.value):
        raise KnowledgeError(
            "A unit's kind and cancer type are part of its identity; create a new unit instead."
        )
    version = _new_version(unit=unit, spec=spec, actor=actor)
    audit_record(
        action="kb.version.draft",
        actor=actor,
        obj=version,
        payload={"unit": unit.key, "number": version.number, "hash": version.content_hash},
    )
    return version


def _locked(version: UnitVersion) -> UnitVersion:
    return UnitVersion.objects.select_for_update().select_related("unit").get(pk=version.pk)


def _reasons_text(change: SafetyChange) -> str:
    return " ".join(change.weakens)


# --- approval requests (four eyes) ----------------------------------------------------------

_ACTOR = object()  # _request_open: who asked is the actor


def _request_open(
    *,
    kind: ApprovalKind,
    actor: User | None,
    version: UnitVersion,
    reason: str,
    reasons: tuple[str, ...],
    requested_by: Any = _ACTOR,
) -> ApprovalRequest:
    """``requested_by``: who asked, when not the actor who opens it (None: the system)."""
    asker = actor if requested_by is _ACTOR else requested_by
    request = ApprovalRequest.objects.create(
        kind=kind,
        unit=version.unit,
        version=version,
        requested_by=asker if getattr(asker, "is_authenticated", False) else None,
        reason=reason.strip()[:2000],
        reasons=list(reasons),
    )
    audit_record(
        action="kb.request.open",
        actor=actor,
        obj=request,
        payload={
            "kind": kind.value,
            "unit": version.unit.key,
            "number": version.number,
            "reasons": list(reasons)[:20],
            "requested_by": request.requested_by_id,
            **({"reason": reason.strip()[:500]} if reason.strip() else {}),
        },
    )
    return request


def _pending(version: UnitVersion, kind: ApprovalKind) -> ApprovalRequest | None:
    return (
        ApprovalRequest.objects.select_for_update()
        .filter(version=version, kind=kind, status=ApprovalStatus.PENDING)
        .first()
    )


def _request_close(
    request: ApprovalRequest, *, actor: User | None, status: ApprovalStatus, note: str = ""
) -> ApprovalRequest:
    request.status = status
    request.decided_by = actor if getattr(actor, "is_authenticated", False) else None
    request.decided_at = timezone.now()
    request.decision_note = note.strip()[:2000]
    request.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
    verb = {
        ApprovalStatus.APPROVED: "approve",
        ApprovalStatus.REFUSED: "refuse",
        ApprovalStatus.WITHDRAWN: "withdraw",
        ApprovalStatus.SUPERSEDED: "supersede",
    }[status]
    audit_record(
        action=f"kb.request.{verb}",
        actor=actor,
        obj=request,
        payload={
            "kind": request.kind,
            "unit": request.unit.key,
            "number": request.version.number,
            **({"note": request.decision_note[:500]} if request.decision_note else {}),
        },
    )
    return request


def _check_second_person(*, actor: User | None, request: ApprovalRequest) -> None:
    """Four eyes: whoever decides is neither who asked nor, for a version, its author (nor,
    for a hot-fix, who published it). The system's requests (the seed load) need one person."""
    _require_curator(actor)
    if actor is None:
        raise KnowledgeError("A request needs a person's decision.")
    if request.requested_by_id is not None and request.requested_by_id == actor.pk:
        raise KnowledgeError(OWN_REQUEST)
    version = request.version
    if request.kind in (ApprovalKind.PUBLISH, ApprovalKind.HOTFIX) and (
        actor.pk in (version.author_id, version.reviewed_by_id if version.hotfix else None)
    ):
        raise KnowledgeError(OWN_VERSION_REVIEW)


def _supersede_stale(*, actor: User | None, unit: KnowledgeUnit, live: UnitVersion | None) -> None:
    """A publication or a retirement settles what waited on other versions of the unit: a
    version older than the one now live would roll the unit back, a retirement or a hot-fix
    review was about a version no longer live."""
    pending = ApprovalRequest.objects.select_for_update().filter(
        unit=unit, status=ApprovalStatus.PENDING
    )
    for request in pending.select_related("version", "unit"):
        if request.kind == ApprovalKind.PUBLISH:
            stale = live is not None and request.version.number < live.number
        else:
            stale = live is None or request.version_id != live.pk
        if stale:
            _request_close(
                request,
                actor=actor,
                status=ApprovalStatus.SUPERSEDED,
                note=f"v{live.number} was published meanwhile."
                if live is not None
                else "The unit was retired meanwhile.",
            )


@transaction.atomic
def version_submit(*, actor: User | None, version: UnitVersion, reason: str = "") -> UnitVersion:
    """Send a draft to review. A version that weakens the published safety rule also opens a
    request that names who asked, the reason and what it weakens: the reviewer who publishes
    it approves it, and nobody who asked or wrote it can."""
    _require_curator(actor)
    version = _locked(version)
    if version.status != VersionStatus.DRAFT:
        raise KnowledgeError(WRONG_STATUS.format(status=version.status, action="sent to review"))
    if actor is not None and version.author_id not in (None, actor.pk) and not is_admin(actor):
        raise KnowledgeError("Only the author (or an administrator) sends a draft to review.")
    version.status = VersionStatus.IN_REVIEW
    version.submitted_at = timezone.now()
    version.save(update_fields=["status", "submitted_at"])
    audit_record(
        action="kb.version.submit",
        actor=actor,
        obj=version,
        payload={"unit": version.unit.key, "number": version.number},
    )
    change = version_safety_change(version=version)
    if change is not None and change.weakens and _pending(version, ApprovalKind.PUBLISH) is None:
        _request_open(
            kind=ApprovalKind.PUBLISH,
            actor=actor,
            version=version,
            reason=reason,
            reasons=change.weakens,
        )
    return version


@transaction.atomic
def version_publish(
    *, actor: User | None, version: UnitVersion, hotfix_reason: str = "", embed: bool = True
) -> UnitVersion:
    """Publish a version in review after review by someone other than its author; or, as a
    flagged hot-fix with a reason (safety alerts cannot wait for a second curator), one's own
    version, draft or in review, or as an administrator someone else's draft. Administrators
    follow the same four-eyes rule for their own versions. A version older than one already
    published is refused: it would roll the unit back. ``embed=False`` leaves queueing the
    embedding to the caller (a bundle import queues one task for all units).

    A version that weakens the published safety rule is never a hot-fix nor a system
    publication: it is published only by a reviewer who neither wrote it nor asked for it,
    which approves its request. A hot-fix goes live at once and waits for a second person's
    review (an ApprovalRequest of kind hot-fix)."""
    _require_curator(actor)
    version = _locked(version)
    if version.status not in (VersionStatus.IN_REVIEW, VersionStatus.DRAFT):
        raise KnowledgeError(WRONG_STATUS.format(status=version.status, action="published"))
    hotfix = False
    if actor is None:
        if not hotfix_reason.strip():
            raise KnowledgeError("A system publication needs a stated reason.")
    else:
        own = version.author_id is not None and version.author_id == actor.pk
        if version.status == VersionStatus.DRAFT:
            if not own and not is_admin(actor):
                raise KnowledgeError(NOT_YOUR_DRAFT)
            _check_hotfix(actor=actor, version=version, reason=hotfix_reason)
            hotfix = True
        elif own:
            if not hotfix_reason.strip():
                raise KnowledgeError(FOUR_EYES)
            _check_hotfix(actor=actor, version=version, reason=hotfix_reason)
            hotfix = True
    current = (
        UnitVersion.objects.select_for_update()
        .filter(unit=version.unit, status=VersionStatus.PUBLISHED)
        .first()
    )
    # The newest version ever published, live or since retired: anything older is stale.
    newest = (
        UnitVersion.objects.filter(unit=version.unit, published_at__isnull=False)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    if newest is not None and newest > version.number:
        raise KnowledgeError(STALE_VERSION.format(number=version.number, newer=newest))
    change = safety_change_of(version=version, published=current)
    approval: ApprovalRequest | None = None
    if change is not None and change.weakens:
        if hotfix:
            raise KnowledgeError(HOTFIX_WEAKENS.format(reasons=_reasons_text(change)))
        if actor is None:
            raise KnowledgeError(SYSTEM_WEAKENS.format(reasons=_reasons_text(change)))
        approval = _pending(version, ApprovalKind.PUBLISH)
        if approval is None:
            # Sent to review before it weakened anything (or before requests existed): its
            # author asked for it.
            approval = _request_open(
                kind=ApprovalKind.PUBLISH,
                actor=actor,
                requested_by=version.author,
                version=version,
                reason="",
                reasons=change.weakens,
            )
        _check_second_person(actor=actor, request=approval)
    elif not hotfix and actor is not None:
        approval = _pending(version, ApprovalKind.PUBLISH)
    now = timezone.now()
    if current is not None:
        current.status = VersionStatus.RETIRED
        current.retired_at = now
        current.save(update_fields=["status", "retired_at"])
    version.status = VersionStatus.PUBLISHED
    version.published_at = now
    version.reviewed_by = actor
    version.hotfix = hotfix
    version.hotfix_reason = hotfix_reason.strip()[:2000] if hotfix else ""
    version.save(update_fields=["status", "published_at", "reviewed_by", "hotfix", "hotfix_reason"])
    audit_record(
        action="kb.version.hotfix" if hotfix else "kb.version.publish",
        actor=actor,
        obj=version,
        payload={
            "unit": version.unit.key,
            "number": version.number,
            "hash": version.content_hash,
            "supersedes": current.pk if current else None,
            **({"reason": hotfix_reason.strip()[:500]} if hotfix_reason else {}),
            **({"weakens": list(change.weakens)[:20]} if change and change.weakens else {}),
        },
    )
    if approval is not None:
        # Published while it no longer weakened the rule (the rule it was measured against
        # has changed): nobody approved a weakening, so the request is only settled.
        settled = change is None or not change.weakens
        _request_close(
            approval,
            actor=actor,
            status=ApprovalStatus.SUPERSEDED if settled else ApprovalStatus.APPROVED,
            note="It no longer weakened the published rule when it was published."
            if settled
            else "",
        )
    _supersede_stale(actor=actor, unit=version.unit, live=version)
    if hotfix:
        _request_open(
            kind=ApprovalKind.HOTFIX,
            actor=actor,
            version=version,
            reason=hotfix_reason,
            reasons=change.strengthens if change is not None else (),
        )
    if embed:
        _queue_embedding([version.pk])
    return version


def _retire_now(
    *, actor: User | None, version: UnitVersion, reason: str, **extra: Any
) -> UnitVersion:
    version.status = VersionStatus.RETIRED
    version.retired_at = timezone.now()
    version.save(update_fields=["status", "retired_at"])
    audit_record(
        action="kb.version.retire",
        actor=actor,
        obj=version,
        payload={
            "unit": version.unit.key,
            "number": version.number,
            "reason": reason.strip()[:500],
            **extra,
        },
    )
    return version


@transaction.atomic
def version_retire_request(
    *, actor: User | None, version: UnitVersion, reason: str
) -> ApprovalRequest:
    """Ask to retire a published version. Nothing changes until someone other than who asked,
    a second curator or an administrator, approves (``approval_request_approve``): a
    retirement takes a rule out of every plan, and a retired version never comes back."""
    _require_curator(actor)
    if not reason.strip():
        raise KnowledgeError("Retiring a unit needs a reason.")
    version = _locked(version)
    if version.status != VersionStatus.PUBLISHED:
        raise KnowledgeError(WRONG_STATUS.format(status=version.status, action="retired"))
    if _pending(version, ApprovalKind.RETIRE) is not None:
        raise KnowledgeError(RETIRE_PENDING.format(key=version.unit.key, number=version.number))
    change = version_safety_change(version=version, retire=True)
    return _request_open(
        kind=ApprovalKind.RETIRE,
        actor=actor,
        version=version,
        reason=reason,
        reasons=change.weakens if change is not None else (),
    )


def _locked_request(request: ApprovalRequest) -> ApprovalRequest:
    return (
        ApprovalRequest.objects.select_for_update()
        .select_related("unit", "version", "version__unit")
        .get(pk=request.pk)
    )


@transaction.atomic
def approval_request_approve(
    *, actor: User | None, request: ApprovalRequest, note: str = ""
) -> ApprovalRequest:
    """A second person approves: a retirement takes effect, a version is published (as its
    reviewer), a hot-fix is confirmed."""
    request = _locked_request(request)
    if not request.is_pending:
        raise KnowledgeError(NOT_PENDING.format(status=request.get_status_display().lower()))
    _check_second_person(actor=actor, request=request)
    if request.kind == ApprovalKind.PUBLISH:
        version_publish(actor=actor, version=request.version)  # approves the request
        request.refresh_from_db()
        return request
    if request.kind == ApprovalKind.RETIRE:
        version = _locked(request.version)
        if version.status != VersionStatus.PUBLISHED:
            _request_close(request, actor=actor, status=ApprovalStatus.SUPERSEDED)
            raise KnowledgeError(
                NO_LONGER_PUBLISHED.format(key=version.unit.key, number=version.number)
            )
        _request_close(request, actor=actor, status=ApprovalStatus.APPROVED, note=note)
        _retire_now(
            actor=actor,
            version=version,
            reason=request.reason,
            requested_by=request.requested_by_id,
            approval=request.pk,
        )
        _supersede_stale(actor=actor, unit=version.unit, live=None)
        return request
    return _request_close(request, actor=actor, status=ApprovalStatus.APPROVED, note=note)


@transaction.atomic
def approval_request_refuse(
    *, actor: User | None, request: ApprovalRequest, note: str
) -> ApprovalRequest:
    """A second person refuses, saying why: a retirement does not happen, a version waiting
    for publication goes back to draft; a refused hot-fix stays live (taking it back would
    itself weaken the rule: edit the unit, through review), marked as disputed."""
    request = _locked_request(request)
    if not request.is_pending:
        raise KnowledgeError(NOT_PENDING.format(status=request.get_status_display().lower()))
    _check_second_person(actor=actor, request=request)
    if not note.strip():
        raise KnowledgeError("Say why the request is refused (the author reads it).")
    if request.kind == ApprovalKind.PUBLISH:
        _back_to_draft(request.version)
    return _request_close(request, actor=actor, status=ApprovalStatus.REFUSED, note=note)


@transaction.atomic
def approval_request_withdraw(*, actor: User | None, request: ApprovalRequest) -> ApprovalRequest:
    """Who asked takes the request back: a version waiting for publication returns to draft."""
    _require_curator(actor)
    request = _locked_request(request)
    if not request.is_pending:
        raise KnowledgeError(NOT_PENDING.format(status=request.get_status_display().lower()))
    if request.kind == ApprovalKind.HOTFIX:
        raise KnowledgeError(HOTFIX_NOT_WITHDRAWN)
    if actor is None or request.requested_by_id != actor.pk:
        raise KnowledgeError(NOT_YOUR_REQUEST)
    if request.kind == ApprovalKind.PUBLISH:
        _back_to_draft(request.version)
    return _request_close(request, actor=actor, status=ApprovalStatus.WITHDRAWN)


def _back_to_draft(version: UnitVersion) -> None:
    version = _locked(version)
    if version.status == VersionStatus.IN_REVIEW:
        version.status = VersionStatus.DRAFT
        version.save(update_fields=["status"])


EMBED_TASK_SIZE = 256  # versions per embedding task: well inside its time limit on a busy CPU


def _queue_embedding(version_ids: list[int]) -> None:
    from knowledge.tasks import versions_embed_task

    for start in range(0, len(version_ids), EMBED_TASK_SIZE):
        chunk = version_ids[start : start + EMBED_TASK_SIZE]
        transaction.on_commit(partial(versions_embed_task.delay, chunk))


# --- embeddings ---------------------------------------------------------------------------


def embedding_text(version: UnitVersion) -> str:
    return f"{version.title}. {version.text}"


def versions_embed(*, version_ids: list[int]) -> int:
    """Compute and store embeddings for published versions that lack one (idempotent)."""
    versions = list(
        UnitVersion.objects.filter(
            pk__in=version_ids, status=VersionStatus.PUBLISHED, embedding__isnull=True
        )
    )
    if not versions:
        return 0
    provider = get_provider()
    vectors = provider.embed([embedding_text(v) for v in versions])
    UnitEmbedding.objects.bulk_create(
        [
            UnitEmbedding(version=v, provider=provider.name, embedding=vector)
            for v, vector in zip(versions, vectors, strict=True)
        ],
        ignore_conflicts=True,
    )
    return len(versions)


# --- bundles ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleError:
    where: str
    message: str


@dataclass
class BundleImportResult:
    sources: int = 0
    drafts: int = 0
    unchanged: int = 0
    published: int = 0
    upgraded: int = 0  # seed load: seed units no one has curated, brought to the new seed
    # Units whose new version weakens their published safety rule: left in review, with a
    # request that a second person (a curator or an administrator) must approve.
    weakening: list[str] = field(default_factory=list)


@dataclass
class SeedRemoval:
    retired: list[str] = field(default_factory=list)
    awaiting: list[str] = field(default_factory=list)  # safety units: retirement asked for


def _seed_only_units(keys: list[str]) -> set[str]:
    """Units that only the system's seed load ever wrote and that are live: no curator has
    drafted, reviewed or retired anything of theirs, so a newer seed may replace them."""
    touched = set(
        UnitVersion.objects.filter(unit__key__in=keys)
        .filter(models.Q(author__isnull=False) | models.Q(reviewed_by__isnull=False))
        .values_list("unit__key", flat=True)
    )
    live = set(
        UnitVersion.objects.filter(unit__key__in=keys, status=VersionStatus.PUBLISHED).values_list(
            "unit__key", flat=True
        )
    )
    unsettled = set(
        UnitVersion.objects.filter(
            unit__key__in=keys, status__in=(VersionStatus.DRAFT, VersionStatus.IN_REVIEW)
        ).values_list("unit__key", flat=True)
    )
    return live - touched - unsettled


@transaction.atomic
def seed_units_retire_removed(*, keys: list[str], reason: str) -> SeedRemoval:
    """The seed load's counterpart of bringing uncurated units to the new seed: a unit the
    seed no longer ships (renamed or withdrawn) that only the system's seed load ever wrote is
    retired, so a deployment does not keep offering it beside its successor. A unit any curator
    drafted, reviewed or retired stays as the curators keep it.

    A safety rule is never retired by the seed alone: its retirement is asked for (once; a
    refusal stands) and waits for a curator or an administrator to approve it."""
    gone = list(
        UnitVersion.objects.filter(status=VersionStatus.PUBLISHED)
        .exclude(unit__key__in=keys)
        .values_list("unit__key", flat=True)
        .distinct()
    )
    result = SeedRemoval()
    for key in sorted(_seed_only_units(gone)):
        for version in UnitVersion.objects.select_related("unit").filter(
            unit__key=key, status=VersionStatus.PUBLISHED
        ):
            if version.unit.kind in SAFETY_KINDS:
                asked = ApprovalRequest.objects.filter(version=version, kind=ApprovalKind.RETIRE)
                if not asked.exists():
                    version_retire_request(actor=None, version=version, reason=reason)
                result.awaiting.append(key)
            else:
                _retire_now(actor=None, version=_locked(version), reason=reason)
                result.retired.append(key)
    return result


def bundle_parse(raw: bytes, *, filename: str) -> tuple[Bundle | None, list[BundleError]]:
    """Parse a JSON or YAML bundle (one document or a list of documents); never raises."""
    import yaml

    if len(raw) > 20 * 1024 * 1024:
        return None, [BundleError(filename, "The bundle is larger than 20 MiB.")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return None, [BundleError(filename, f"Not UTF-8 text (byte {exc.start}).")]
    is_yaml = filename.lower().endswith((".yaml", ".yml"))
    try:
        loaded = yaml_load_all(text) if is_yaml else [json.loads(text)]
    except YamlTooLarge as exc:
        return None, [BundleError(filename, f"Not a bundle: the YAML is {exc}.")]
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        return None, [BundleError(filename, f"Not valid {_kind(is_yaml)}: {exc}")]
    except RecursionError:
        return None, [BundleError(filename, _too_deep(is_yaml))]
    problem = nesting_error(loaded)
    if problem is not None:
        return None, [BundleError(filename, f"Not a bundle: the {_kind(is_yaml)} is {problem}.")]
    documents = [d for doc in loaded for d in (doc if isinstance(doc, list) else [doc])]
    try:
        return bundle_from_documents(documents), []
    except ValidationError as exc:
        return None, [
            BundleError(f"{filename}: " + ".".join(str(p) for p in err["loc"]), err["msg"])
            for err in exc.errors()
        ]
    except ValueError as exc:
        return None, [BundleError(filename, str(exc))]


def _kind(is_yaml: bool) -> str:
    return "YAML" if is_yaml else "JSON"


def _too_deep(is_yaml: bool) -> str:
    return f"Not a bundle: the {_kind(is_yaml)} is nested too deeply to read."


@transaction.atomic
def bundle_import(
    *, actor: User | None, bundle: Bundle, publish: bool = False, reason: str = ""
) -> BundleImportResult:
    """Import every source and unit of a bundle, all or nothing. Changed units become drafts
    in review; ``publish`` publishes them at once as a recorded, audited act.

    The system's seed load (``actor`` None with ``publish``: ``load_kb_seed``, run at every
    start) creates what does not exist yet, and brings a seed unit that no curator has ever
    touched (only system versions, still published) to the seed's new content, so a deployment
    gets the corrected seed. A source, or a unit a curator has drafted, reviewed or retired, is
    left exactly as the curators keep it, whatever the seed says. Such units count as
    unchanged.

    A unit whose new version weakens its published safety rule is never published by the
    import, whoever runs it: it stays in review with a request for a second person
    (``weakening``)."""
    _require_curator(actor)
    seed_load = actor is None and publish
    result = BundleImportResult()
    published: list[int] = []
    existing: set[str] = set()
    if seed_load:
        keys = [u.key for u in bundle.units]
        existing = set(KnowledgeUnit.objects.filter(key__in=keys).values_list("key", flat=True))
        existing -= _seed_only_units(keys)
    for spec in bundle.sources:
        if seed_load and GuidelineSource.objects.filter(key=spec.key).exists():
            continue
        source_save(actor=actor, spec=spec)
        result.sources += 1
    for unit_spec in bundle.units:
        if unit_spec.key in existing:
            result.unchanged += 1
            continue
        try:
            version = unit_save_draft(actor=actor, spec=unit_spec)
        except KnowledgeError as exc:
            if str(exc) == NO_CHANGE:
                result.unchanged += 1
                continue
            raise KnowledgeError(f"unit {unit_spec.key}: {exc}") from exc
        version = version_submit(
            actor=actor, version=version, reason=reason or "imported from a bundle"
        )
        result.drafts += 1
        if ApprovalRequest.objects.filter(
            version=version, kind=ApprovalKind.PUBLISH, status=ApprovalStatus.PENDING
        ).exists():
            # It weakens the published safety rule: it waits in review for a second person,
            # whoever imports it (the seed load included).
            result.weakening.append(unit_spec.key)
            continue
        if seed_load and version.number > 1:
            result.upgraded += 1
        if publish:
            version_publish(
                actor=actor,
                version=version,
                hotfix_reason=reason or "seed knowledge base import",
                embed=False,
            )
            published.append(version.pk)
            result.published += 1
    _queue_embedding(published)  # one task for the whole bundle, not one per unit
    audit_record(
        action="kb.bundle.import",
        actor=actor,
        payload={
            "sources": result.sources,
            "versions": result.drafts,
            "unchanged": result.unchanged,
            "published": result.published,
            **({"weakening": result.weakening[:100]} if result.weakening else {}),
            **({"new_units_only": True} if seed_load else {}),
        },
    )
    return result


def bundle_export(*, status: str = VersionStatus.PUBLISHED) -> dict[str, Any]:
    """The published knowledge base (or another status) as one ``mdtboard.kb/1`` document."""
    versions = (
        UnitVersion.objects.filter(status=status)
        .select_related("unit", "source")
        .order_by("unit__key")
    )
    # Every source, cited or not, so that an export re-imports to the same knowledge base.
    sources = {s.key: s for s in GuidelineSource.objects.all()}
    return {
        "format": FORMAT_ID,
        "sources": [
            {
                "key": s.key,
                "organisation": s.organisation,
                "title": s.title,
                "version": s.version,
                "year": s.year,
                "jurisdiction": s.jurisdiction,
                "url": s.url,
            }
            for s in sorted(sources.values(), key=lambda s: s.key)
        ],
        "units": [{"key": v.unit.key, **v.content} for v in versions],
    }
