"""Writes of the review: the team's decision on a plan (accept, amend into a new version,
reject), the MDT meeting, the responsible clinician's sign-off, PDF reports, and the audited
exports. Every write locks the consultation row, so two submissions are taken one at a time,
and carries an idempotency key, so a submission sent twice is saved once."""

from __future__ import annotations

import copy
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clinical.vocab import Modality
from consult.models import Consultation, ConsultationStatus
from consult.rating.models import ComparatorPlan, ComparatorSource
from consult.rating.plan_format import validate_plan
from consult.rating.services import ComparatorInvalid, RatingServiceError, comparator_create
from consult.review.models import (
    ClinicianReview,
    Decision,
    MdtMeeting,
    PaperSize,
    PlanReport,
    PlanVersion,
    ReportStatus,
    SignOff,
)
from consult.review.report import report_html, report_pdf
from consult.review.selectors import (
    ReviewState,
    VersionView,
    comparator_ref,
    consultation_event_rows,
    plan_versions,
    review_state_get,
    team_clinicians,
)
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
KEY_REUSED = "This form was already used for another action; reload the page."
NOT_CLINICIAN = "Only a clinician signs off a plan."
NOT_RESPONSIBLE = "Only the responsible clinician named in the meeting record ({name}) signs off."
NO_DECISION = "Record the team's decision (accept, amend or reject) before signing off."
NO_MEETING = "Record the MDT meeting (date, attendees, decision) before signing off."
ROLES = ("primary", "alternative", "rejected")
MAX_TEXT = 2000


def _key(value: Any) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise ReviewError("The form is missing its submission key; reload the page.") from exc


def _locked(consultation: Consultation) -> ReviewState:
    """Lock the consultation (writes of its review are taken one at a time) and read the
    review as it stands under the lock."""
    locked = Consultation.objects.select_for_update().get(pk=consultation.pk)
    if locked.status != ConsultationStatus.COMPLETED or not hasattr(locked, "plan"):
        raise ReviewError(NO_PLAN)
    state = review_state_get(consultation=locked)
    if state.sign_off is not None:
        raise ReviewError(SIGNED)
    return state


def _check_base(state: ReviewState, base_version: int | None) -> None:
    if base_version is not None and base_version != state.current.number:
        raise ReviewError(STALE.format(current=state.current.number))


@transaction.atomic
def review_decide(
    *,
    actor: Any,
    consultation: Consultation,
    decision: str,
    reason: str,
    idempotency_key: Any,
    base_version: int | None,
) -> ClinicianReview:
    """Accept or reject the current plan version (amending goes through ``plan_amend``)."""
    key = _key(idempotency_key)
    existing = ClinicianReview.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.consultation_id != consultation.pk or existing.reviewer_id != actor.pk:
            raise ReviewError(KEY_REUSED)
        return existing  # the same submission again: already saved
    if decision not in (Decision.ACCEPT, Decision.REJECT):
        raise ReviewError("Choose accept or reject; to change the plan, amend it.")
    reason = (reason or "").strip()[:MAX_TEXT]
    if decision == Decision.REJECT and not reason:
        raise ReviewError(REASON_NEEDED)
    state = _locked(consultation)
    # A double submit whose first copy committed while this one waited for the lock.
    existing = ClinicianReview.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    _check_base(state, base_version)
    current = state.current
    review = ClinicianReview.objects.create(
        consultation=consultation,
        decision=decision,
        reason=reason,
        plan_number=current.number,
        plan_hash=current.content_hash,
        reviewer=actor,
        idempotency_key=key,
    )
    audit_record(
        action=f"plan.review.{decision}",
        actor=actor,
        obj=review,
        payload={
            "consultation": consultation.pk,
            "plan_version": current.number,
            "plan_hash": current.content_hash,
        },
    )
    learn_from_review(review.pk)
    return review


# --- amendments ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ComponentEdit:
    """One component as the clinician left it in the amend form. ``source`` is its index in
    the version being amended (None for a new one); what the form does not edit (evidence,
    rationale, conditions) is carried over from there."""

    source: int | None
    role: str
    position: int | None
    modality: str
    description: str
    agents: list[str]
    dose_adjustments: list[str]
    when: str


def _validate(edits: list[ComponentEdit], reason: str) -> list[str]:
    errors = []
    if not reason:
        errors.append(REASON_NEEDED)
    for n, edit in enumerate(edits, start=1):
        where = f"Item {n}"
        if edit.role not in ROLES:
            errors.append(f"{where}: choose primary, alternative or ruled out.")
        if edit.modality not in set(Modality):
            errors.append(f"{where}: choose a modality.")
        if not edit.description.strip():
            errors.append(f"{where}: describe the item.")
        if edit.role == "alternative" and not edit.when.strip():
            errors.append(f"{where}: an alternative says when it would be chosen instead.")
        if len(edit.description) > MAX_TEXT or len(edit.when) > MAX_TEXT:
            errors.append(f"{where}: the text is too long.")
    if not any(e.role == "primary" for e in edits):
        errors.append(
            "Keep at least one item in the recommended pathway; to recommend nothing, reject "
            "the plan with the reason."
        )
    return errors


def _summary(doc: dict[str, Any], based_on: int, reason: str) -> str:
    recommendation = doc["recommendation"]
    components = recommendation["components"]
    primary = [c for c in components if c["role"] == "primary"]
    alternatives = [c for c in components if c["role"] == "alternative"]
    parts = []
    if recommendation.get("question"):
        parts.append(str(recommendation["question"]))
    parts.append(f"Amended by the MDT from plan version {based_on}: {reason}.")
    intent = recommendation.get("intent")
    pathway = "; then ".join(c["description"] for c in primary)
    parts.append(f"Recommended pathway{f' ({intent})' if intent else ''}: {pathway}.")
    if alternatives:
        listed = "; ".join(f"{c['rank']}. {c['description']} ({c['when']})" for c in alternatives)
        parts.append(f"Alternatives: {listed}.")
    return " ".join(parts)


def _amended(
    base: VersionView, edits: list[ComponentEdit], reason: str, number: int, author: str
) -> dict[str, Any]:
    doc = copy.deepcopy(base.payload)
    recommendation = doc.setdefault("recommendation", {})
    old = list(recommendation.get("components") or [])
    components: list[dict[str, Any]] = []
    rejected = list(doc.get("rejected_options") or [])
    unchecked: list[str] = []
    # The pathway first, then the alternatives, each by the order the clinician gave (ties
    # and blanks keep the form's order).
    ordered = sorted(
        enumerate(edits),
        key=lambda pair: (
            ROLES.index(pair[1].role) if pair[1].role in ROLES else len(ROLES),
            pair[1].position if pair[1].position is not None else 99,
            pair[0],
        ),
    )
    for _, edit in ordered:
        original = old[edit.source] if edit.source is not None and edit.source < len(old) else {}
        if edit.role == "rejected":
            rejected.append({"option": edit.description.strip(), "reason": f"MDT: {reason}"})
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
        }
        component.setdefault("evidence", [])
        component.setdefault("rationale", [])
        changed = not original or any(
            original.get(k) != component.get(k)
            for k in ("modality", "description", "agents", "dose_adjustments")
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
    doc["rejected_options"] = rejected
    safety = doc.setdefault("safety", {})
    gates = list(safety.get("gates") or [])
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
    }
    return doc


@transaction.atomic
def plan_amend(
    *,
    actor: Any,
    consultation: Consultation,
    edits: list[ComponentEdit],
    reason: str,
    idempotency_key: Any,
    base_version: int | None,
) -> PlanVersion:
    """A new immutable, hashed plan version from the current one with the clinician's
    edits, and the team's decision "amended" on it. Earlier versions stay as they were."""
    key = _key(idempotency_key)
    existing = PlanVersion.objects.filter(idempotency_key=key).first()
    if existing is not None:
        if existing.consultation_id != consultation.pk or existing.author_id != actor.pk:
            raise ReviewError(KEY_REUSED)
        return existing
    reason = (reason or "").strip()[:MAX_TEXT]
    errors = _validate(edits, reason)
    if errors:
        raise ReviewError(errors[0], errors)
    state = _locked(consultation)
    existing = PlanVersion.objects.filter(idempotency_key=key).first()
    if existing is not None:
        return existing
    _check_base(state, base_version)
    base = state.current
    number = base.number + 1
    payload = _amended(base, edits, reason, number, str(actor))
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
    )
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
    actor: Any,
    consultation: Consultation,
    held_on: date,
    attendees: list[Attendee],
    final_decision: str,
    dissent: str,
    responsible_id: int,
) -> MdtMeeting:
    """Record (or correct, until sign-off) the meeting that discussed the case."""
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
    _locked(consultation)
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
        },
    )
    return meeting


@transaction.atomic
def plan_sign_off(*, actor: Any, consultation: Consultation) -> SignOff:
    if not has_role(actor, Role.CLINICIAN):
        raise ReviewForbidden(NOT_CLINICIAN)
    state = _locked(consultation)
    if state.decision is None:
        raise ReviewError(NO_DECISION)
    if state.meeting is None:
        raise ReviewError(NO_MEETING)
    if state.meeting.responsible_id != actor.pk:
        raise ReviewForbidden(NOT_RESPONSIBLE.format(name=state.meeting.responsible))
    decision = state.decision
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


# --- the MDT decision as the comparator of a rating study ---------------------------------------
NO_MDT_DECISION = (
    "Record the team's decision (accept or amend) and the meeting before using it as the "
    "comparator plan."
)
REJECTED_NO_PLAN = (
    "The team rejected the board's plan, so there is no decided plan to copy: enter the plan "
    "the team chose on the comparator page."
)
# What the review adds to a plan that is about the review, not the team's treatment plan; a
# rater comparing plans must not see it (it would say which plan the people wrote).
_REVIEW_GATES = frozenset({"amendment_not_rechecked"})
_MDT_PREFIX = "MDT: "


def _comparator_document(state: ReviewState, final_decision: str) -> dict[str, Any]:
    """The decided plan version as the team's plan: its items, safety, monitoring and options
    ruled out; in the team's own words (the meeting's final decision) for the summary."""
    doc = copy.deepcopy(state.decided.payload)
    doc.pop("amendment", None)
    recommendation = doc.setdefault("recommendation", {})
    recommendation["summary"] = final_decision
    safety = doc.setdefault("safety", {})
    safety["gates"] = [g for g in safety.get("gates") or [] if g.get("gate") not in _REVIEW_GATES]
    for option in doc.get("rejected_options") or []:
        reason = option.get("reason")
        if isinstance(reason, str) and reason.startswith(_MDT_PREFIX):
            option["reason"] = reason.removeprefix(_MDT_PREFIX)
    return doc


@transaction.atomic
def comparator_from_mdt_decision(*, actor: Any, consultation: Consultation) -> ComparatorPlan:
    """The team's recorded decision (the accepted or amended plan version, with the meeting's
    final decision as its summary) becomes the dossier's comparator plan for rating studies.
    Idempotent: while the decision and the meeting record are unchanged, pressing again
    returns the comparator already made from them; after a correction it makes a new version.
    Allowed after sign-off (that is when the decision is final)."""
    locked = Consultation.objects.select_for_update().get(pk=consultation.pk)
    if locked.status != ConsultationStatus.COMPLETED or not hasattr(locked, "plan"):
        raise ReviewError(NO_PLAN)
    state = review_state_get(consultation=locked)
    decision = state.decision
    if decision is None or state.meeting is None:
        raise ReviewError(NO_MDT_DECISION)
    if decision.decision == Decision.REJECT:
        raise ReviewError(REJECTED_NO_PLAN)
    cleaned, problems = validate_plan(_comparator_document(state, state.meeting.final_decision))
    if cleaned is None:
        raise ReviewError(
            "The decided plan cannot be used as a comparator: "
            + "; ".join(str(p) for p in problems)
        )
    cleaned["case_id"] = locked.dossier.case_id
    source_ref = comparator_ref(decision)
    latest = ComparatorPlan.objects.filter(dossier_id=locked.dossier_id).order_by("-number").first()
    if (
        latest is not None
        and latest.source == ComparatorSource.MDT_DECISION
        and latest.source_ref == source_ref
        and latest.content_hash == payload_hash(cleaned)
    ):
        return latest  # the same decision pressed again: already the comparator
    try:
        return comparator_create(
            actor=actor,
            dossier=locked.dossier,
            plan=cleaned,
            source=ComparatorSource.MDT_DECISION,
            source_ref=source_ref,
        )
    except ComparatorInvalid as exc:
        raise ReviewError(str(exc), [str(e) for e in exc.errors]) from exc
    except RatingServiceError as exc:
        raise ReviewError(str(exc)) from exc


# --- exports -------------------------------------------------------------------------------------
def plan_version_export(*, actor: Any, consultation: Consultation, number: int) -> dict[str, Any]:
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
        "reviews": [
            {
                "decision": r.decision,
                "reason": r.reason,
                "plan_version": r.plan_number,
                "plan_hash": r.plan_hash,
                "reviewer": str(r.reviewer),
                "created_at": _when(r.created_at),
            }
            for r in state.reviews
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


def case_record_export(*, actor: Any, consultation: Consultation) -> dict[str, Any]:
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
def report_request(*, actor: Any, consultation: Consultation, paper: str) -> PlanReport:
    """Queue a PDF of the decided plan version. A request while the same report is still
    being made returns that one rather than a second."""
    if paper not in PaperSize.values:
        raise ReviewError("Choose A4 or US Letter.")
    state = review_state_get(
        consultation=Consultation.objects.select_for_update().get(pk=consultation.pk)
    )
    version = state.decided
    pending = PlanReport.objects.filter(
        consultation=consultation,
        plan_hash=version.content_hash,
        paper=paper,
        status__in=(ReportStatus.QUEUED, ReportStatus.RENDERING),
    ).first()
    if pending is not None:
        return pending
    report = PlanReport.objects.create(
        consultation=consultation,
        plan_number=version.number,
        plan_hash=version.content_hash,
        paper=paper,
        requested_by=actor,
    )
    audit_record(
        action="plan.report.request",
        actor=actor,
        obj=report,
        payload={"consultation": consultation.pk, "plan_version": version.number, "paper": paper},
    )
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


def report_download_record(*, actor: Any, report: PlanReport) -> None:
    audit_record(
        action="plan.report.download",
        actor=actor,
        obj=report,
        payload={"consultation": report.consultation_id, "sha256": report.sha256},
    )
