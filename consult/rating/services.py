"""Writes of the rating app: comparator plans, studies and their allocation, the opening and
the locked submission of a rating. Every write is audited in the same transaction."""

from __future__ import annotations

import copy
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from clinical.plan import PlanError
from consult.models import Consultation, ConsultationStatus, DossierStatus, LesionDossier, Plan
from consult.rating.blinding import pair_similarity
from consult.rating.complexity import case_complexity
from consult.rating.models import (
    Assignment,
    ComparatorPlan,
    ComparatorSource,
    Packet,
    Rating,
    RatingClearance,
    Score,
    Study,
    StudyStatus,
)
from consult.rating.plan_format import parse_plan_bytes, validate_plan
from consult.rating.randomisation import (
    Allocation,
    AllocationError,
    CaseInput,
    allocate,
)
from consult.rating.rubric import (
    DIMENSIONS,
    FAST_SECONDS,
    GUESS_CHOICES,
    MAX_COMMENT_CHARS,
    POSITIONS,
    PREFERENCE_CHOICES,
    SCALE,
)
from consult.review import selectors as review_selectors
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, has_role, is_admin
from mdtboard.audit.hashing import payload_hash
from mdtboard.audit.services import audit_record

NOT_SUBMITTED = "Submit the dossier before recording a comparator plan for it."
NOT_ADMIN = "Only an administrator can set up or change a study."
LOCKED = "This rating was submitted and is locked; it cannot be changed."
STUDY_CLOSED = "This study is closed; no more ratings are taken."
NAME_TAKEN = "A study with this name exists already."
DEFAULT_BLOCK_SIZES = (2, 4)

logger = logging.getLogger(__name__)


class RatingServiceError(Exception):
    """A request the service refuses; the message is for the person who made it."""


class ComparatorInvalid(RatingServiceError):
    def __init__(self, errors: Sequence[PlanError]) -> None:
        super().__init__(f"The plan has {len(errors)} problem(s).")
        self.errors = list(errors)


class StudyInvalid(RatingServiceError):
    pass


class RatingLocked(RatingServiceError):
    pass


class RatingInvalid(RatingServiceError):
    """``errors`` maps each form field that is missing or invalid to its message."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__(f"{len(errors)} answer(s) missing or invalid; nothing was saved.")
        self.errors = errors


# --- comparator plans ---------------------------------------------------------------------------


@transaction.atomic
def comparator_create(
    *,
    actor: User,
    dossier: LesionDossier,
    plan: Mapping[str, Any],
    source: str = ComparatorSource.ENTERED,
    source_ref: str = "",
    minutes_to_write: int | None = None,
    attested_blind: bool = False,
    derived_decision: str = "",
) -> ComparatorPlan:
    """Record a new version of the dossier's human comparator plan, with how it was made
    (``attested_blind``: entered by a clinician who did not see the system's plan;
    ``derived_decision``: the team's accept or amend it was made from). The caller has checked
    that ``actor`` may see the dossier (its selector); the plan is validated again here."""
    # The row, locked: two clinicians saving at once get versions 1 and 2, not 1 twice.
    dossier = LesionDossier.objects.select_for_update().get(pk=dossier.pk)
    if dossier.status != DossierStatus.SUBMITTED:
        raise RatingServiceError(NOT_SUBMITTED)
    cleaned, errors = validate_plan(dict(plan))
    if errors or cleaned is None:
        raise ComparatorInvalid(errors)
    cleaned["case_id"] = dossier.case_id
    if minutes_to_write is not None and not 0 < minutes_to_write <= 10_000:
        raise ComparatorInvalid([PlanError("minutes", "must be between 1 and 10000 minutes.")])
    latest = dossier.comparator_plans.order_by("-number").values_list("number", flat=True).first()
    comparator = ComparatorPlan.objects.create(
        dossier=dossier,
        number=(latest or 0) + 1,
        payload=cleaned,
        content_hash=payload_hash(cleaned),
        source=source,
        source_ref=source_ref,
        minutes_to_write=minutes_to_write,
        attested_blind=attested_blind and source == ComparatorSource.ENTERED,
        derived_decision=derived_decision if source == ComparatorSource.MDT_DECISION else "",
        created_by=actor,
    )
    audit_record(
        action="comparator.create",
        actor=actor,
        obj=comparator,
        payload={
            "dossier": dossier.pk,
            "number": comparator.number,
            "source": source,
            "source_ref": source_ref,
            "hash": comparator.content_hash,
            "attested_blind": comparator.attested_blind,
            "derived_decision": comparator.derived_decision,
        },
    )
    return comparator


def comparator_import(
    *, actor: User, dossier: LesionDossier, raw: bytes, minutes_to_write: int | None = None
) -> ComparatorPlan:
    """A comparator plan from an ``mdtboard.plan/1`` document; nothing is saved on any error."""
    parsed = parse_plan_bytes(raw)
    if not parsed.ok or parsed.plan is None:
        raise ComparatorInvalid(parsed.errors)
    return comparator_create(
        actor=actor,
        dossier=dossier,
        plan=parsed.plan,
        source=ComparatorSource.IMPORTED,
        minutes_to_write=minutes_to_write,
    )


# --- the MDT decision as the comparator ---------------------------------------------------------
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


def _comparator_document(decided: dict[str, Any], final_decision: str) -> dict[str, Any]:
    """The decided plan version as the team's plan: its items, safety, monitoring and options
    ruled out; in the team's own words (the meeting's final decision) for the summary."""
    doc = copy.deepcopy(decided)
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
def comparator_from_mdt_decision(*, actor: User, consultation: Consultation) -> ComparatorPlan:
    """The team's recorded decision (the accepted or amended plan version, with the meeting's
    final decision as its summary) becomes the dossier's comparator plan, recorded as derived
    from that decision: not independent of the system's plan, so a study leaves it out unless
    asked. Idempotent: while the decision and the meeting record are unchanged, pressing again
    returns the comparator already made from them; after a correction it makes a new version."""
    locked = Consultation.objects.select_for_update().get(pk=consultation.pk)
    decided = review_selectors.mdt_decision_get(consultation=locked)
    if decided is None:
        raise RatingServiceError(NO_MDT_DECISION)
    if decided.decision == "reject":
        raise RatingServiceError(REJECTED_NO_PLAN)
    cleaned, problems = validate_plan(
        _comparator_document(decided.version.payload, decided.final_decision)
    )
    if cleaned is None:
        raise ComparatorInvalid(problems)
    cleaned["case_id"] = locked.dossier.case_id
    latest = ComparatorPlan.objects.filter(dossier_id=locked.dossier_id).order_by("-number").first()
    if (
        latest is not None
        and latest.source == ComparatorSource.MDT_DECISION
        and latest.source_ref == decided.source_ref
        and latest.content_hash == payload_hash(cleaned)
    ):
        return latest  # the same decision pressed again: already the comparator
    return comparator_create(
        actor=actor,
        dossier=locked.dossier,
        plan=cleaned,
        source=ComparatorSource.MDT_DECISION,
        source_ref=decided.source_ref,
        derived_decision=decided.decision,
    )


# --- studies ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StudySpec:
    name: str
    consultation_ids: Sequence[int]
    rater_ids: Sequence[int]
    raters_per_packet: int
    block_sizes: Sequence[int] = DEFAULT_BLOCK_SIZES
    description: str = ""
    llm_arm: bool = False
    seed: int | None = None  # tests and reproductions only; a new study draws its own
    # Pair plans with comparators derived from the team's decision on them too (not
    # independent: EvoMDT compares against plans a human MDT made on its own).
    include_dependent: bool = False


NOT_INDEPENDENT = (
    "{case_id}: its comparator plan is the team's decision on the system's plan ({how}), not "
    "an independent plan. Enter the plan the team would make on its own, or choose to include "
    "dependent comparators."
)


@dataclass
class _Case:
    consultation: Consultation
    plan: Plan
    comparator: ComparatorPlan
    complexity: str
    reasons: list[str] = field(default_factory=list)


def comparator_for_study(
    *, dossier: LesionDossier, include_dependent: bool = False
) -> ComparatorPlan | None:
    """The comparator a study pairs with the dossier's plan: its newest independent version
    (or simply its newest, with ``include_dependent``)."""
    versions = dossier.comparator_plans.order_by("-number")
    if include_dependent:
        return versions.first()
    return versions.exclude(source=ComparatorSource.MDT_DECISION).first()


def _study_cases(consultation_ids: Sequence[int], include_dependent: bool = False) -> list[_Case]:
    ids = sorted(set(consultation_ids))
    if not ids:
        raise StudyInvalid("Choose at least one consultation.")
    consultations = list(
        Consultation.objects.filter(pk__in=ids).select_related("dossier", "snapshot")
    )
    if len(consultations) != len(ids):
        raise StudyInvalid("A chosen consultation does not exist.")
    plans = {p.consultation_id: p for p in Plan.objects.filter(consultation_id__in=ids)}
    cases, dossiers = [], set()
    for consultation in sorted(consultations, key=lambda c: c.pk):
        case_id = consultation.dossier.case_id
        if consultation.status != ConsultationStatus.COMPLETED or consultation.pk not in plans:
            raise StudyInvalid(f"The consultation on {case_id} has no finished plan.")
        if consultation.dossier_id in dossiers:
            raise StudyInvalid(f"{case_id} is chosen twice; a study takes one plan per dossier.")
        dossiers.add(consultation.dossier_id)
        comparator = comparator_for_study(
            dossier=consultation.dossier, include_dependent=include_dependent
        )
        if comparator is None:
            dependent = consultation.dossier.comparator_plans.order_by("-number").first()
            if dependent is not None:
                raise StudyInvalid(
                    NOT_INDEPENDENT.format(case_id=case_id, how=dependent.provenance)
                )
            raise StudyInvalid(f"{case_id} has no comparator plan yet.")
        level, reasons = case_complexity(consultation.snapshot.data)
        cases.append(_Case(consultation, plans[consultation.pk], comparator, level, reasons))
    return cases


def _raters(rater_ids: Sequence[int]) -> list[User]:
    ids = sorted(set(rater_ids))
    raters = list(User.objects.filter(pk__in=ids, is_active=True))
    if len(raters) != len(ids) or not all(has_role(r, Role.RATER) for r in raters):
        raise StudyInvalid("Every chosen rater must be an active user with the rater role.")
    return raters


def _allocate(cases: Sequence[_Case], study: Study) -> Allocation:
    return allocate(
        cases=[
            CaseInput(c.consultation.pk, c.consultation.dossier.cancer_type, c.complexity)
            for c in cases
        ],
        raters=list(study.raters),
        raters_per_packet=study.raters_per_packet,
        block_sizes=list(study.block_sizes),
        seed=study.seed,
    )


@transaction.atomic
def study_create(*, actor: User, spec: StudySpec) -> Study:
    """Create a study, draw its allocation from a new secret seed and give the raters their
    packets. The seed and the allocation stay on the server."""
    if not is_admin(actor):
        raise StudyInvalid(NOT_ADMIN)
    name = spec.name.strip()
    if not name:
        raise StudyInvalid("Give the study a name.")
    if Study.objects.filter(name=name).exists():
        raise StudyInvalid(NAME_TAKEN)
    cases = _study_cases(spec.consultation_ids, spec.include_dependent)
    raters = _raters(spec.rater_ids)
    study = Study(
        name=name[:200],
        description=spec.description.strip(),
        raters=[r.pk for r in raters],
        raters_per_packet=spec.raters_per_packet,
        block_sizes=sorted(set(spec.block_sizes)),
        seed=spec.seed if spec.seed is not None else secrets.randbits(62),
        llm_arm=spec.llm_arm,
        created_by=actor,
    )
    try:
        allocation = _allocate(cases, study)
    except AllocationError as exc:
        raise StudyInvalid(str(exc)) from exc
    study.allocation_hash = allocation.digest()
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError as exc:  # the same name, saved by someone else meanwhile
        raise StudyInvalid(NAME_TAKEN) from exc
    by_key = {c.consultation.pk: c for c in cases}
    packets = {}
    for allocated in allocation.packets:
        case = by_key[allocated.key]
        packets[allocated.key] = Packet.objects.create(
            study=study,
            consultation=case.consultation,
            plan=case.plan,
            comparator=case.comparator,
            cancer_type=allocated.cancer_type,
            complexity=allocated.complexity,
            complexity_reasons=case.reasons,
            sequence=allocated.sequence,
            block=allocated.block,
            block_size=allocated.block_size,
            system_position=allocated.system_position,
            similarity=pair_similarity(case.plan.payload, case.comparator.payload),
        )
    Assignment.objects.bulk_create(
        Assignment(study=study, packet=packets[key], rater_id=rater, order=order)
        for rater, keys in allocation.orders.items()
        for order, key in enumerate(keys, start=1)
    )
    audit_record(
        action="study.create",
        actor=actor,
        obj=study,
        payload={
            "packets": len(packets),
            "raters": study.raters,
            "raters_per_packet": study.raters_per_packet,
            "block_sizes": study.block_sizes,
            "allocation_hash": study.allocation_hash,
            "llm_arm": study.llm_arm,
            "include_dependent": spec.include_dependent,
            "dependent_comparators": sum(1 for c in cases if not c.comparator.independent),
        },
    )
    return study


def study_allocation_reproduces(*, study: Study) -> bool:
    """Whether the stored seed, drawn again over the study's cases and raters, gives exactly
    the stored allocation (the packets' positions and blocks, the raters' orders)."""
    packets = list(study.packets.select_related("consultation__dossier"))
    cases = [
        _Case(p.consultation, p.plan, p.comparator, p.complexity, p.complexity_reasons)
        for p in packets
    ]
    allocation = _allocate(cases, study)
    if allocation.digest() != study.allocation_hash:
        return False
    stored = {p.consultation_id: p for p in packets}
    for allocated in allocation.packets:
        packet = stored[allocated.key]
        if (packet.sequence, packet.block, packet.system_position) != (
            allocated.sequence,
            allocated.block,
            allocated.system_position,
        ):
            return False
    orders: dict[int, list[int]] = {}
    for a in study.assignments.order_by("rater", "order").select_related("packet"):
        orders.setdefault(a.rater_id, []).append(a.packet.consultation_id)
    return all(list(allocation.orders.get(r, ())) == keys for r, keys in orders.items())


@transaction.atomic
def study_close(*, actor: User, study: Study) -> Study:
    if not is_admin(actor):
        raise StudyInvalid(NOT_ADMIN)
    updated = Study.objects.filter(pk=study.pk, status=StudyStatus.OPEN).update(
        status=StudyStatus.CLOSED, closed_at=timezone.now()
    )
    if updated:
        audit_record(action="study.close", actor=actor, obj=study)
    study.refresh_from_db()
    return study


# --- ratings ------------------------------------------------------------------------------------


@transaction.atomic
def assignment_open(*, actor: User, assignment: Assignment) -> Assignment:
    """The rater opens a packet: the first opening starts the response time (server clock)."""
    Assignment.objects.filter(pk=assignment.pk, opened_at__isnull=True).update(
        opened_at=timezone.now()
    )
    assignment.refresh_from_db(fields=["opened_at"])
    audit_record(action="rating.packet_open", actor=actor, obj=assignment)
    return assignment


def score_field(position: str, dimension: str) -> str:
    """The form field of one score: "A-safety_ethics"."""
    return f"{position}-{dimension}"


@dataclass(frozen=True)
class Answers:
    scores: dict[tuple[str, str], int]
    preference: str
    system_guess: str
    comment: str


def rating_answers(data: Mapping[str, Any]) -> Answers:
    """Read a submitted rating form: twelve scores from 1 to 5, a preference and a guess, an
    optional comment. Every problem is reported at once (RatingInvalid)."""
    errors: dict[str, str] = {}
    scores: dict[tuple[str, str], int] = {}
    for position in POSITIONS:
        for dimension in DIMENSIONS:
            name = score_field(position, dimension.key)
            raw = data.get(name)
            raw = raw.strip() if isinstance(raw, str) else raw
            where = f"Plan {position}, {dimension.label}"
            if raw in (None, ""):
                errors[name] = f"{where}: choose a score from 1 to 5."
                continue
            if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit():
                errors[name] = f"{where}: {str(raw)[:20]!r} is not a score; choose 1 to 5."
                continue
            value = int(raw)
            if value not in SCALE:
                errors[name] = f"{where}: {value} is outside the scale; choose 1 to 5."
                continue
            scores[(position, dimension.key)] = value
    preference = data.get("preference")
    if preference not in dict(PREFERENCE_CHOICES):
        errors["preference"] = "Say which plan you would take to the patient (or no preference)."
    guess = data.get("system_guess")
    if guess not in dict(GUESS_CHOICES):
        errors["system_guess"] = "Say which plan you think the system wrote (or cannot tell)."
    comment = data.get("comment") or ""
    if not isinstance(comment, str) or "\x00" in comment:
        errors["comment"] = "The comment must be plain text."
        comment = ""
    elif len(comment) > MAX_COMMENT_CHARS:
        errors["comment"] = (
            f"The comment is {len(comment)} characters long; at most {MAX_COMMENT_CHARS}."
        )
    if errors:
        raise RatingInvalid(errors)
    return Answers(scores, str(preference), str(guess), comment.strip())


@transaction.atomic
def rating_submit(*, actor: User, assignment: Assignment, data: Mapping[str, Any]) -> Rating:
    """Record the rater's answers for their packet and lock them. The response time runs from
    the first opening to now, by the server's clock; under FAST_SECONDS it is flagged."""
    locked = (
        Assignment.objects.select_for_update()
        .select_related("study")
        .get(pk=assignment.pk, rater=actor)
    )
    if Rating.objects.filter(assignment=locked).exists():
        raise RatingLocked(LOCKED)
    if locked.study.status != StudyStatus.OPEN:
        raise RatingServiceError(STUDY_CLOSED)
    answers = rating_answers(data)
    now = timezone.now()
    opened = locked.opened_at or now
    seconds = max(0.0, (now - opened).total_seconds())
    rating = Rating.objects.create(
        assignment=locked,
        preference=answers.preference,
        system_guess=answers.system_guess,
        comment=answers.comment,
        seconds=seconds,
        too_fast=seconds < FAST_SECONDS,
    )
    Score.objects.bulk_create(
        Score(rating=rating, position=position, dimension=dimension, value=value)
        for (position, dimension), value in sorted(answers.scores.items())
    )
    audit_record(
        action="rating.submit",
        actor=actor,
        obj=rating,
        payload={
            "assignment": locked.pk,
            "study": locked.study_id,
            "seconds": round(seconds, 1),
            "too_fast": rating.too_fast,
        },
    )
    transaction.on_commit(lambda: _learn_from_rating(rating.pk))
    return rating


def _learn_from_rating(rating_id: int) -> None:
    """The study's ratings are vetted again and the board learns from those that pass (in the
    worker): a plan rated well feeds CorrectKB, one rated poorly ChainKB."""
    from consult.tasks import experience_from_rating as task

    try:
        task.delay(rating_id)
    except Exception:  # noqa: BLE001 - the rating is saved; only the lesson is lost
        logger.warning("rating %s: the memory task could not be queued", rating_id)


NOT_FLAGGED = "This rating was not flagged; there is nothing to clear."


@transaction.atomic
def rating_clear(*, actor: User, rating: Rating, note: str = "") -> RatingClearance:
    """An administrator clears a rating flagged as too fast: the board may learn from it."""
    if not is_admin(actor):
        raise RatingServiceError(NOT_ADMIN)
    # The assignment's row, locked (a rating is append-only: the app may not lock it itself).
    Assignment.objects.select_for_update().get(pk=rating.assignment_id)
    rating = Rating.objects.get(pk=rating.pk)
    if not rating.too_fast:
        raise RatingServiceError(NOT_FLAGGED)
    existing = RatingClearance.objects.filter(rating=rating).first()
    if existing is not None:
        return existing
    clearance = RatingClearance.objects.create(
        rating=rating, cleared_by=actor, note=note.strip()[:500]
    )
    audit_record(
        action="rating.clear",
        actor=actor,
        obj=clearance,
        payload={"rating": rating.pk, "seconds": round(rating.seconds, 1)},
    )
    transaction.on_commit(lambda: _learn_from_rating(rating.pk))
    return clearance
