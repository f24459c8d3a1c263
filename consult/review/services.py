"""Writes of the review: the team's decision on a plan (accept, amend into a new version,
reject), reopening a decision with a reason, the MDT meeting, the responsible clinician's
sign-off, PDF reports, and the audited exports.

Where a review stands is ``PlanReview``, a state machine (docs/review-states.md): every write
locks the consultation row, reads the stage under the lock and moves it by one of its
transitions, so two submissions are taken one at a time and a decision is never followed by a
second one without a reopening. Every write carries an idempotency key, so a submission sent
twice is saved once."""

from __future__ import annotations

import copy
import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from clinical.vocab import RULED_OUT, ComponentRole, Intent, Modality, Phase, ResponseAnchor
from consult.engine.coherence import plan_findings
from consult.models import Consultation, ConsultationStatus
from consult.review.changes import ORIGIN, plan_changes
from consult.review.models import (
    ClinicianReview,
    Decision,
    MdtMeeting,
    PaperSize,
    PlanReport,
    PlanReview,
    PlanVersion,
    ReasonKind,
    ReportAppendix,
    ReportStatus,
    ReviewReopen,
    ReviewStage,
    SignOff,
)
from consult.review.report import report_html, report_pdf
from consult.review.selectors import (
    ReviewState,
    VersionView,
    consultation_event_rows,
    plan_versions,
    review_state_get,
    team_clinicians,
)
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, has_role
from mdtboard.audit.hashing import payload_hash
from mdtboard.audit.services import audit_record

logger = logging.getLogger(__name__)


class ReviewError(Exception):
    """A review action that cannot be done; the message is for the clinician."""

    def __init__(self, message: str, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [message]


class ReviewForbidden(ReviewError):
    """The user's role may not do this (the view answers 403)."""


NO_PLAN = "This consultation has no plan to review."
SIGNED = "The plan was signed off; its review can no longer change."
STALE = (
    "The plan changed while you were reading it (now version {current}); reload the page and "
    "review the current version."
)
REASON_NEEDED = "Give the reason for the decision: it is what the record shows the team."
REASON_KIND_NEEDED = (
    "Say whether the reason for rejecting is clinical or administrative (a duplicate, the "
    "wrong patient, entered in error)."
)
REOPEN_REASON_NEEDED = "Give the reason for reopening the decision: the record keeps it."
KEY_REUSED = "This form was already used for another action; reload the page."
NOT_CLINICIAN = "Only a clinician signs off a plan."
NOT_RESPONSIBLE = "Only the responsible clinician named in the meeting record ({name}) signs off."
NO_DECISION = "Record the team's decision (accept, amend or reject) before signing off."
NO_MEETING = "Record the MDT meeting (date, attendees, decision) before signing off."
CONFIRM_SIGN_OFF = "Confirm that you sign off plan version {number}: tick the confirmation."
DECIDED_ALREADY = (
    "The team's decision on this plan is recorded ({decision} version {number} by {by}); to "
    "change it, reopen the decision with a reason."
)
MEETING_BEFORE_DECISION = (
    "Record the team's decision (accept, amend or reject) before the meeting that discussed it."
)
NOTHING_TO_REOPEN = "There is no decision to reopen: the plan awaits review."
INCOHERENT = "The plan contradicts itself: {first}"
# What an amendment may say: the core's names (clinical.vocab), in the order forms offer them.
ROLES: tuple[str, ...] = (*ComponentRole, RULED_OUT)
# A clinician amends to a treatment intent; abstention is the board's, not an amendment's.
INTENTS: tuple[str, ...] = (Intent.CURATIVE, Intent.PALLIATIVE, Intent.SURVEILLANCE)
PHASES: tuple[str, ...] = tuple(Phase)
ANCHORS: tuple[str, ...] = (
    ResponseAnchor.RECIST,
    ResponseAnchor.MRECIST,
    ResponseAnchor.IRECIST,
    ResponseAnchor.LUGANO,
    ResponseAnchor.OTHER,
)
MAX_TEXT = 2000


def _key(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise ReviewError("The form is missing its submission key; reload the page.") from exc


@dataclass
class _Locked:
    state: ReviewState
    progress: PlanReview


def _locked(consultation: Consultation, *, signed_ok: bool = False) -> _Locked:
    """Lock the consultation (writes of its review are taken one at a time) and read the
    review as it stands under the lock, with its state-machine row (made on first use)."""
    locked = Consultation.objects.select_for_update().get(pk=consultation.pk)
    if locked.status != ConsultationStatus.COMPLETED or not hasattr(locked, "plan"):
        raise ReviewError(NO_PLAN)
    progress, _ = PlanReview.objects.select_for_update().get_or_create(consultation=locked)
    state = review_state_get(consultation=locked)
    if state.sign_off is not None and not signed_ok:
        raise ReviewError(SIGNED)
    return _Locked(state, progress)


def _move(locked: _Locked, transition: Callable[[], None], refused: str) -> None:
    """Move the review by one transition of its state machine and save it."""
    try:
        transition()
    except TransitionNotAllowed as exc:
        raise ReviewError(refused) from exc
    # Only these columns: the app's database role may update nothing else (dbroles).
    locked.progress.save(update_fields=list(PlanReview.MUTABLE_FIELDS))


def _decided_already(state: ReviewState) -> str:
    decision = state.decision
    if decision is None:
        return NOTHING_TO_REOPEN
    return DECIDED_ALREADY.format(
        decision=decision.get_decision_display().lower(),
        number=decision.plan_number,
        by=decision.reviewer,
    )


def _check_base(state: ReviewState, base_version: int | None) -> None:
    if base_version is not None and base_version != state.current.number:
        raise ReviewError(STALE.format(current=state.current.number))


def _coherent(payload: dict[str, Any]) -> None:
    """Refuse a plan that contradicts itself (consult/engine/coherence.py), every finding
    said."""
    findings = plan_findings(payload)
    if findings:
        sentences = [f.sentence for f in findings]
        raise ReviewError(INCOHERENT.format(first=sentences[0]), sentences)


@transaction.atomic
def review_decide(
    *,
    actor: User,
    consultation: Consultation,
    decision: str,
    reason: str,
    idempotency_key: Any,
    base_version: int | None,
    reason_kind: str = "",
) -> ClinicianReview:
    """Accept or reject the current plan version (amending goes through ``plan_amend``). The
    review must await a decision: a decision recorded is changed only by reopening it."""
    key = _key(idempotency_key)
    existing = ClinicianReview.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.consultation_id != consultation.pk or existing.reviewer_id != actor.pk:
            raise ReviewError(KEY_REUSED)
        return existing  # the same submission again: already saved
    if decision not in (Decision.ACCEPT, Decision.REJECT):
        raise ReviewError("Choose accept or reject; to change the plan, amend it.")
    reason = (reason or "").strip()[:MAX_TEXT]
    if decision == Decision.REJECT:
        if not reason:
            raise ReviewError(REASON_NEEDED)
        if reason_kind not in ReasonKind.values:
            raise ReviewError(REASON_KIND_NEEDED)
    else:
        reason_kind = ""
    locked = _locked(consultation)
    # A double submit whose first copy committed while this one waited for the lock.
    existing = ClinicianReview.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    state = locked.state
    if state.stage != ReviewStage.AWAITING:
        raise ReviewError(_decided_already(state))
    _check_base(state, base_version)
    current = state.current
    if decision == Decision.ACCEPT:
        _coherent(current.payload)
    review = ClinicianReview.objects.create(
        consultation=consultation,
        decision=decision,
        reason=reason,
        reason_kind=reason_kind,
        plan_number=current.number,
        plan_hash=current.content_hash,
        reviewer=actor,
        idempotency_key=key,
        cycle=locked.progress.cycle,
    )
    move = locked.progress.accept if decision == Decision.ACCEPT else locked.progress.reject
    _move(locked, move, _decided_already(state))
    audit_record(
        action=f"plan.review.{decision}",
        actor=actor,
        obj=review,
        payload={
            "consultation": consultation.pk,
            "plan_version": current.number,
            "plan_hash": current.content_hash,
            "cycle": review.cycle,
            "reason_kind": reason_kind,
        },
    )
    learn_from_review(review.pk)
    return review


@transaction.atomic
def review_reopen(
    *, actor: User, consultation: Consultation, reason: str, idempotency_key: Any
) -> ReviewReopen:
    """Take the team's decision back, with the reason: the review awaits a new decision (and
    then the meeting again). The decision stays on record; what the memory learnt from it is
    withdrawn."""
    key = _key(idempotency_key)
    existing = ReviewReopen.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.consultation_id != consultation.pk or existing.reopened_by_id != actor.pk:
            raise ReviewError(KEY_REUSED)
        return existing
    reason = (reason or "").strip()[:MAX_TEXT]
    if not reason:
        raise ReviewError(REOPEN_REASON_NEEDED)
    locked = _locked(consultation)
    existing = ReviewReopen.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    decision = locked.state.decision
    cycle = locked.progress.cycle
    _move(locked, locked.progress.reopen, NOTHING_TO_REOPEN)
    reopen = ReviewReopen.objects.create(
        consultation=consultation,
        cycle=cycle,
        reason=reason,
        reopened_by=actor,
        idempotency_key=key,
    )
    audit_record(
        action="plan.review.reopen",
        actor=actor,
        obj=reopen,
        payload={
            "consultation": consultation.pk,
            "cycle": cycle,
            "decision": decision.pk if decision is not None else None,
        },
    )
    if decision is not None:
        unlearn_review(decision.pk)
    return reopen


# --- amendments ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ComponentEdit:
    """One item as the clinician left it in the amend form: a pathway step, an alternative,
    or an option ruled out. ``source`` is its index among the amended version's components,
    ``ruled_out_source`` its index among that version's ruled-out options (None for a new
    item); what the form does not edit (evidence, rationale) is carried over from there."""

    source: int | None
    role: str
    position: int | None
    modality: str
    description: str
    agents: list[str]
    dose_adjustments: list[str]
    when: str
    conditions: list[str] = field(default_factory=list)
    reason: str = ""  # why an option is ruled out
    ruled_out_source: int | None = None


@dataclass(frozen=True)
class MonitoringEdit:
    """One follow-up row of the amend form; ``source`` its index in the amended version."""

    source: int | None
    phase: str
    what: str
    interval: str
    anchor: str


def _validate(
    edits: Sequence[ComponentEdit],
    reason: str,
    intent: str | None,
    monitoring: Sequence[MonitoringEdit] | None,
) -> list[str]:
    errors = []
    if not reason:
        errors.append(REASON_NEEDED)
    if intent is not None and intent not in INTENTS:
        errors.append("Choose the intent: curative, palliative or surveillance.")
    for n, edit in enumerate(edits, start=1):
        where = f"Item {n}"
        if edit.role not in ROLES:
            errors.append(f"{where}: choose recommended pathway, alternative or ruled out.")
        if edit.role != "rejected" and edit.modality not in set(Modality):
            errors.append(f"{where}: choose a modality.")
        if not edit.description.strip():
            errors.append(f"{where}: describe the item.")
        if edit.role == "alternative" and not edit.when.strip():
            errors.append(f"{where}: an alternative says when it would be chosen instead.")
        texts = (edit.description, edit.when, edit.reason, *edit.conditions)
        if any(len(t) > MAX_TEXT for t in texts):
            errors.append(f"{where}: the text is too long.")
    if not any(e.role == "primary" for e in edits):
        errors.append(
            "Keep at least one item in the recommended pathway; to recommend nothing, reject "
            "the plan with the reason."
        )
    for n, row in enumerate(monitoring or (), start=1):
        where = f"Follow-up {n}"
        if row.phase not in PHASES:
            errors.append(f"{where}: choose the phase.")
        if not row.what.strip():
            errors.append(f"{where}: say what is monitored.")
        if row.anchor and row.anchor not in ANCHORS:
            errors.append(f"{where}: choose the response criteria.")
        if len(row.what) > MAX_TEXT or len(row.interval) > MAX_TEXT:
            errors.append(f"{where}: the text is too long.")
    return errors


def _summary(doc: dict[str, Any], based_on: int, reason: str) -> str:
    recommendation = doc["recommendation"]
    components = recommendation["components"]
    primary = [c for c in components if c["role"] == "primary"]
    alternatives = [c for c in components if c["role"] == "alternative"]
    parts = []
    if recommendation.get("question"):
        parts.append(str(recommendation["question"]))
    parts.append(f"Amended by the MDT from plan version {based_on}: {reason.rstrip('.')}.")
    intent = recommendation.get("intent")
    pathway = "; then ".join(c["description"].rstrip(".") for c in primary)
    parts.append(f"Recommended pathway{f' ({intent})' if intent else ''}: {pathway}.")
    if alternatives:
        listed = "; ".join(
            f"{c['rank']}. {c['description'].rstrip('.')} ({c['when']})" for c in alternatives
        )
        parts.append(f"Alternatives: {listed}.")
    return " ".join(parts)


def _ordered(edits: Sequence[ComponentEdit]) -> list[ComponentEdit]:
    """The pathway first, then the alternatives, each by the order the clinician gave (ties
    and blanks keep the form's order), then the options ruled out."""

    def key(pair: tuple[int, ComponentEdit]) -> tuple[int, int, int]:
        index, edit = pair
        role = ROLES.index(edit.role) if edit.role in ROLES else len(ROLES)
        if edit.role == "rejected":
            # The options already ruled out keep their place; newly ruled out ones follow.
            return role, 0 if edit.ruled_out_source is not None else 1, index
        return role, edit.position if edit.position is not None else 99, index

    return [edit for _, edit in sorted(enumerate(edits), key=key)]


def _amended(
    base: VersionView,
    edits: Sequence[ComponentEdit],
    reason: str,
    number: int,
    author: str,
    *,
    with_ruled_out: bool,
    intent: str | None,
    monitoring: Sequence[MonitoringEdit] | None,
) -> dict[str, Any]:
    doc = copy.deepcopy(base.payload)
    recommendation = doc.setdefault("recommendation", {})
    old = list(recommendation.get("components") or [])
    old_ruled_out = list(doc.get("rejected_options") or [])
    components: list[dict[str, Any]] = []
    rejected = [] if with_ruled_out else list(old_ruled_out)
    unchecked: list[str] = []
    for edit in _ordered(edits):
        original: dict[str, Any] = {}
        if edit.source is not None and edit.source < len(old):
            original = old[edit.source]
        was_ruled_out: dict[str, Any] = {}
        if edit.ruled_out_source is not None and edit.ruled_out_source < len(old_ruled_out):
            was_ruled_out = old_ruled_out[edit.ruled_out_source]
        if edit.role == "rejected":
            option = edit.description.strip()
            given = edit.reason.strip()
            if not given and was_ruled_out.get("option") == option:
                given = str(was_ruled_out.get("reason") or "")
            rejected.append(
                {**was_ruled_out, "option": option, "reason": given or f"MDT: {reason}"}
            )
            continue
        component = {
            **original,
            "role": edit.role,
            "order": None,
            "rank": None,
            "when": edit.when.strip() if edit.role == "alternative" else "",
            "modality": edit.modality,
            "description": edit.description.strip(),
            "agents": edit.agents,
            "dose_adjustments": edit.dose_adjustments,
            "conditions": edit.conditions,
            ORIGIN: _origin(edit),
        }
        component.setdefault("evidence", [])
        component.setdefault("rationale", [])
        changed = not original or any(
            (original.get(k) or []) != (component.get(k) or [])
            for k in ("modality", "description", "agents", "dose_adjustments", "conditions")
        )
        if changed:
            unchecked.append(component["description"])
        components.append(component)
    order = rank = 0
    for component in components:
        if component["role"] == "primary":
            order += 1
            component["order"] = order
        else:
            rank += 1
            component["rank"] = rank
    recommendation["components"] = components
    if intent is not None:
        recommendation["intent"] = intent
    doc["rejected_options"] = rejected
    if monitoring is not None:
        old_monitoring = list(doc.get("monitoring") or [])
        doc["monitoring"] = [
            {
                **(
                    old_monitoring[row.source]
                    if row.source is not None and row.source < len(old_monitoring)
                    else {}
                ),
                "phase": row.phase,
                "what": row.what.strip(),
                "interval": row.interval.strip(),
                "anchor": row.anchor or "other",
            }
            for row in sorted(monitoring, key=lambda r: PHASES.index(r.phase))
        ]
    safety = doc.setdefault("safety", {})
    gates = [g for g in safety.get("gates") or [] if g.get("gate") != "amendment_not_rechecked"]
    if unchecked:
        # The automatic gate checked the board's items, not what the MDT wrote: say so on
        # every item the amendment added or changed, as a gate that is not checked.
        gates.append(
            {
                "gate": "amendment_not_rechecked",
                "status": "unknown",
                "detail": (
                    "Added or changed by the MDT's amendment: the automatic safety gate has not "
                    "checked this item. Check contraindications, organ function and "
                    "interactions before prescribing."
                ),
                "applies_to": unchecked,
            }
        )
    safety["gates"] = gates
    recommendation["summary"] = _summary(doc, base.number, reason)
    doc["amendment"] = {
        "version": number,
        "based_on": base.number,
        "based_on_hash": base.content_hash,
        "reason": reason,
        "by": author,
        "at": timezone.now().isoformat(timespec="seconds"),
        "changes": plan_changes(base.payload, doc),
    }
    for item in [*components, *rejected]:
        item.pop(ORIGIN, None)
    return doc


def _origin(edit: ComponentEdit) -> str:
    if edit.source is not None:
        return f"c{edit.source}"
    if edit.ruled_out_source is not None:
        return f"r{edit.ruled_out_source}"
    return ""


@transaction.atomic
def plan_amend(
    *,
    actor: User,
    consultation: Consultation,
    edits: Sequence[ComponentEdit],
    reason: str,
    idempotency_key: Any,
    base_version: int | None,
    with_ruled_out: bool = False,
    intent: str | None = None,
    monitoring: Sequence[MonitoringEdit] | None = None,
) -> PlanVersion:
    """A new immutable, hashed plan version from the current one with the clinician's edits,
    and the team's decision "amended" on it. Earlier versions stay as they were.

    ``edits`` are the pathway and the alternatives (and, with ``with_ruled_out``, every option
    ruled out too, as the amend form sends them; otherwise the version keeps the ones it had,
    plus any item moved there); ``intent`` and ``monitoring``, when given, replace the
    version's. A version that contradicts itself is refused with every reason."""
    key = _key(idempotency_key)
    existing = PlanVersion.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.consultation_id != consultation.pk or existing.author_id != actor.pk:
            raise ReviewError(KEY_REUSED)
        return existing
    reason = (reason or "").strip()[:MAX_TEXT]
    errors = _validate(edits, reason, intent, monitoring)
    if errors:
        raise ReviewError(errors[0], errors)
    locked = _locked(consultation)
    existing = PlanVersion.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    state = locked.state
    if state.stage != ReviewStage.AWAITING:
        raise ReviewError(_decided_already(state))
    _check_base(state, base_version)
    base = state.current
    number = base.number + 1
    payload = _amended(
        base,
        edits,
        reason,
        number,
        str(actor),
        with_ruled_out=with_ruled_out,
        intent=intent,
        monitoring=monitoring,
    )
    _coherent(payload)
    version = PlanVersion.objects.create(
        consultation=consultation,
        number=number,
        based_on=base.number,
        payload=payload,
        content_hash=payload_hash(payload),
        reason=reason,
        author=actor,
        idempotency_key=key,
    )
    review = ClinicianReview.objects.create(
        consultation=consultation,
        decision=Decision.AMEND,
        reason=reason,
        plan_number=number,
        plan_hash=version.content_hash,
        reviewer=actor,
        idempotency_key=uuid.uuid5(key, "review"),
        cycle=locked.progress.cycle,
    )
    _move(locked, locked.progress.amend, _decided_already(state))
    audit_record(
        action="plan.review.amend",
        actor=actor,
        obj=review,
        payload={
            "consultation": consultation.pk,
            "plan_version": number,
            "plan_hash": version.content_hash,
            "based_on": base.number,
            "based_on_hash": base.content_hash,
            "cycle": review.cycle,
            "changes": len(payload["amendment"]["changes"]),
        },
    )
    learn_from_review(review.pk)
    return version


# --- the meeting and the sign-off ----------------------------------------------------------------
@dataclass(frozen=True)
class Attendee:
    name: str
    specialty: str


@transaction.atomic
def meeting_record(
    *,
    actor: User,
    consultation: Consultation,
    held_on: date,
    attendees: list[Attendee],
    final_decision: str,
    dissent: str,
    responsible_id: int,
) -> MdtMeeting:
    """Record (or correct, until sign-off) the meeting that discussed the team's decision."""
    errors = []
    people = [a for a in attendees if a.name.strip() or a.specialty.strip()]
    if not people:
        errors.append("List who attended, with their specialty.")
    if any(not a.name.strip() or not a.specialty.strip() for a in people):
        errors.append("Give each attendee's name and specialty.")
    if not final_decision.strip():
        errors.append("State the meeting's final decision.")
    if held_on > timezone.localdate():
        errors.append("The meeting date is in the future.")
    responsible = team_clinicians(consultation=consultation).filter(pk=responsible_id).first()
    if responsible is None:
        errors.append("Choose the responsible clinician among the team's clinicians.")
    if errors:
        raise ReviewError(errors[0], errors)
    locked = _locked(consultation)
    _move(locked, locked.progress.record_meeting, MEETING_BEFORE_DECISION)
    values = {
        "held_on": held_on,
        "attendees": [{"name": a.name.strip(), "specialty": a.specialty.strip()} for a in people],
        "final_decision": final_decision.strip()[:MAX_TEXT],
        "dissent": dissent.strip()[:MAX_TEXT],
        "responsible": responsible,
    }
    meeting = MdtMeeting.objects.filter(consultation=consultation).first()
    if meeting is None:
        meeting = MdtMeeting.objects.create(consultation=consultation, recorded_by=actor, **values)
        changed = sorted(values)
    else:
        changed = sorted(k for k, v in values.items() if getattr(meeting, k) != v)
        for k, v in values.items():
            setattr(meeting, k, v)
        meeting.save()
    audit_record(
        action="plan.meeting.record",
        actor=actor,
        obj=meeting,
        payload={
            "consultation": consultation.pk,
            "changed": changed,
            "attendees": len(people),
            "responsible": responsible.pk if responsible else None,
            "cycle": locked.progress.cycle,
        },
    )
    return meeting


@transaction.atomic
def plan_sign_off(
    *, actor: User, consultation: Consultation, version: int | None, confirmed: bool
) -> SignOff:
    """The responsible clinician signs off the decided version, having confirmed which one
    (``version``, as the confirmation named it): the review closes."""
    if not has_role(actor, Role.CLINICIAN):
        raise ReviewForbidden(NOT_CLINICIAN)
    locked = _locked(consultation)
    state = locked.state
    decision = state.decision
    if decision is None:
        raise ReviewError(NO_DECISION)
    if state.meeting is None or state.stage != ReviewStage.MEETING:
        raise ReviewError(NO_MEETING)
    if state.meeting.responsible_id != actor.pk:
        raise ReviewForbidden(NOT_RESPONSIBLE.format(name=state.meeting.responsible))
    if version != decision.plan_number:
        raise ReviewError(STALE.format(current=decision.plan_number))
    if not confirmed:
        raise ReviewError(CONFIRM_SIGN_OFF.format(number=decision.plan_number))
    _move(locked, locked.progress.sign_off, NO_MEETING)
    sign_off = SignOff.objects.create(
        consultation=consultation,
        review=decision,
        plan_number=decision.plan_number,
        plan_hash=decision.plan_hash,
        signed_by=actor,
    )
    audit_record(
        action="plan.sign_off",
        actor=actor,
        obj=sign_off,
        payload={
            "consultation": consultation.pk,
            "decision": decision.decision,
            "plan_version": decision.plan_number,
            "plan_hash": decision.plan_hash,
        },
    )
    return sign_off


# --- exports -------------------------------------------------------------------------------------
def plan_version_export(*, actor: User, consultation: Consultation, number: int) -> dict[str, Any]:
    """One plan version as ``mdtboard.plan/1``, exactly as stored (audited)."""
    version = next(
        (v for v in plan_versions(consultation=consultation) if v.number == number), None
    )
    if version is None:
        raise ReviewError("No such plan version.")
    audit_record(
        action="plan.export",
        actor=actor,
        obj=consultation,
        payload={"format": "json", "plan_version": number, "plan_hash": version.content_hash},
    )
    return version.payload


def _when(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def case_record(*, consultation: Consultation) -> dict[str, Any]:
    """The whole case record: the dossier snapshot deliberated, every event, the plan
    versions, the reviews, the meeting and the sign-off. Names of staff, no user ids."""
    state = review_state_get(consultation=consultation, with_reports=False)
    snapshot = consultation.snapshot
    meeting = state.meeting
    return {
        "format": "mdtboard.case-record/1",
        "exported_at": timezone.now().isoformat(timespec="seconds"),
        "case_id": consultation.dossier.case_id,
        "dossier_snapshot": {
            "number": snapshot.number,
            "content_hash": snapshot.content_hash,
            "submitted_at": _when(snapshot.submitted_at),
            "data": snapshot.data,
            # The calculators' results as frozen with the snapshot (what the plan was made
            # from), with the version of the code that computed them.
            "derived_facts": {
                "version": snapshot.facts_version,
                "origin": snapshot.facts_origin,
                "hash": snapshot.facts_hash,
                "results": snapshot.facts.get("derived") or {},
            },
        },
        "consultation": {
            "id": consultation.pk,
            "engine": consultation.engine,
            "engine_label": consultation.engine_label,
            "status": consultation.status,
            "started_at": _when(consultation.started_at),
            "finished_at": _when(consultation.finished_at),
            "config": consultation.config,
            "prompt_versions": consultation.prompt_versions,
            "kb_versions": consultation.kb_versions,
        },
        "events": [
            {
                "seq": e.seq,
                "kind": e.kind,
                "role": e.role,
                "round": e.round,
                "created_at": _when(e.created_at),
                "payload": e.payload,
            }
            for e in consultation_event_rows(consultation=consultation)
        ],
        "plan_versions": [
            {
                "number": v.number,
                "based_on": v.based_on,
                "content_hash": v.content_hash,
                "created_at": _when(v.created_at),
                "author": v.author,
                "reason": v.reason,
                "plan": v.payload,
            }
            for v in state.versions
        ],
        "review_stage": state.stage,
        "reviews": [
            {
                "decision": r.decision,
                "reason": r.reason,
                "reason_kind": r.reason_kind,
                "plan_version": r.plan_number,
                "plan_hash": r.plan_hash,
                "reviewer": str(r.reviewer),
                "created_at": _when(r.created_at),
                "cycle": r.cycle,
            }
            for r in state.reviews
        ],
        "reopenings": [
            {
                "cycle": r.cycle,
                "reason": r.reason,
                "reopened_by": str(r.reopened_by),
                "created_at": _when(r.created_at),
            }
            for r in state.reopenings
        ],
        "meeting": None
        if meeting is None
        else {
            "held_on": meeting.held_on.isoformat(),
            "attendees": meeting.attendees,
            "final_decision": meeting.final_decision,
            "dissent": meeting.dissent,
            "responsible_clinician": str(meeting.responsible),
        },
        "sign_off": None
        if state.sign_off is None
        else {
            "signed_by": str(state.sign_off.signed_by),
            "signed_at": _when(state.sign_off.signed_at),
            "plan_version": state.sign_off.plan_number,
            "plan_hash": state.sign_off.plan_hash,
        },
    }


def case_record_export(*, actor: User, consultation: Consultation) -> dict[str, Any]:
    record = case_record(consultation=consultation)
    audit_record(
        action="consultation.record.export",
        actor=actor,
        obj=consultation,
        payload={"format": "json", "events": len(record["events"])},
    )
    return record


# --- PDF reports ---------------------------------------------------------------------------------
REPORT_DIR = "reports"


@transaction.atomic
def report_request(
    *,
    actor: User,
    consultation: Consultation,
    paper: str,
    appendix: Sequence[str] = (),
    enqueue: bool = True,
) -> PlanReport:
    """Queue a PDF of the decided plan version: the two-page summary, then the appendix
    sections chosen (``ReportAppendix``). A request while the same report is still being made
    returns that one rather than a second. ``enqueue=False``: the caller renders it
    (``report_render``), as the command line does."""
    if paper not in PaperSize.values:
        raise ReviewError("Choose A4 or US Letter.")
    unknown = [a for a in appendix if a not in ReportAppendix.values]
    if unknown:
        raise ReviewError(f"No such appendix section: {', '.join(unknown)}.")
    chosen = [a for a in ReportAppendix.values if a in appendix]
    state = review_state_get(
        consultation=Consultation.objects.select_for_update().get(pk=consultation.pk)
    )
    version = state.decided
    pending = PlanReport.objects.filter(
        consultation=consultation,
        plan_hash=version.content_hash,
        paper=paper,
        appendix=chosen,
        status__in=(ReportStatus.QUEUED, ReportStatus.RENDERING),
    ).first()
    if pending is not None:
        return pending
    report = PlanReport.objects.create(
        consultation=consultation,
        plan_number=version.number,
        plan_hash=version.content_hash,
        paper=paper,
        appendix=chosen,
        requested_by=actor,
    )
    audit_record(
        action="plan.report.request",
        actor=actor,
        obj=report,
        payload={
            "consultation": consultation.pk,
            "plan_version": version.number,
            "paper": paper,
            "appendix": chosen,
        },
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue_report(report.pk))
    return report


def learn_from_review(review_id: int) -> None:
    """Once the decision is saved, the experience memory learns from it (CorrectKB for an
    acceptance, ChainKB for an amendment or a rejection), in the worker: a reflection may be
    written by the LLM. A broker that is down loses the lesson, never the decision."""

    def enqueue() -> None:
        from consult.tasks import experience_from_review as task

        try:
            task.delay(review_id)
        except Exception:  # noqa: BLE001 - the decision is saved; only the lesson is lost
            logger.warning("review %s: the memory task could not be queued", review_id)

    transaction.on_commit(enqueue)


def unlearn_review(review_id: int) -> None:
    """A decision reopened teaches nothing any more: the worker retires what the memory
    learnt from it (the decision itself stays on record)."""

    def enqueue() -> None:
        from consult.tasks import experience_forget_review as task

        try:
            task.delay(review_id)
        except Exception:  # noqa: BLE001 - the reopening is saved; a prune pass retries
            logger.warning("review %s: the memory task could not be queued", review_id)

    transaction.on_commit(enqueue)


def _enqueue_report(report_id: int) -> None:
    from consult.review.tasks import report_render as task

    try:
        task.delay(report_id)
    except Exception:  # noqa: BLE001 - the page shows it queued; a retry button re-requests
        logger.warning("report %s could not be queued", report_id)
        PlanReport.objects.filter(pk=report_id).update(
            status=ReportStatus.FAILED, error="The task queue is unreachable; try again."
        )


def _progress(report: PlanReport, percent: int, step: str) -> None:
    PlanReport.objects.filter(pk=report.pk).update(progress=percent, step=step)


def report_path(report: PlanReport) -> Path:
    return Path(settings.MEDIA_ROOT) / report.path


def report_render(*, report_id: int) -> str:
    """Render one report to a file under MEDIA_ROOT; idempotent (a finished one is kept)."""
    report = PlanReport.objects.select_related("consultation").get(pk=report_id)
    if report.is_finished:
        return report.status
    PlanReport.objects.filter(pk=report.pk).update(
        status=ReportStatus.RENDERING, progress=5, step="Reading the case record"
    )
    started = time.monotonic()
    try:
        html, plan = report_html(report=report, progress=lambda p, s: _progress(report, p, s))
        _progress(report, 50, "Laying out the pages")
        pdf = report_pdf(html=html, plan=plan, title=report.consultation.dossier.case_id)
        _progress(report, 90, "Saving the file")
        relative = f"{REPORT_DIR}/{report.consultation_id}/report-{report.pk}.pdf"
        target = Path(settings.MEDIA_ROOT) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        tmp.write_bytes(pdf)
        tmp.chmod(0o600)
        tmp.replace(target)
    except Exception as exc:
        logger.exception("report %s failed", report.pk)
        PlanReport.objects.filter(pk=report.pk).update(
            status=ReportStatus.FAILED,
            error=f"Rendering failed ({type(exc).__name__}).",
            finished_at=timezone.now(),
        )
        return ReportStatus.FAILED
    with transaction.atomic():
        PlanReport.objects.filter(pk=report.pk).update(
            status=ReportStatus.DONE,
            progress=100,
            step="Ready",
            path=relative,
            size_bytes=len(pdf),
            sha256=hashlib.sha256(pdf).hexdigest(),
            render_ms=int((time.monotonic() - started) * 1000),
            finished_at=timezone.now(),
        )
        audit_record(
            action="plan.report.render",
            obj=report,
            payload={"bytes": len(pdf), "sha256": hashlib.sha256(pdf).hexdigest()},
        )
    return ReportStatus.DONE


def report_download_record(*, actor: User, report: PlanReport) -> None:
    audit_record(
        action="plan.report.download",
        actor=actor,
        obj=report,
        payload={"consultation": report.consultation_id, "sha256": report.sha256},
    )
