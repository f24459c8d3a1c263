"""Reads of the rating app. Every lookup checks that the user may see the object: raters only
their own assignments, clinicians their teams' dossiers, administrators the studies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import Http404

from consult import selectors as consult_selectors
from consult.models import Consultation, ConsultationStatus, DossierStatus, LesionDossier, Plan
from consult.presenters import SectionView, case_sections
from consult.rating.blinding import BlindPlan, blind_packet, pair_similarity
from consult.rating.models import Assignment, ComparatorPlan, ComparatorSource, Rating, Study
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, has_role, is_admin

# What a rater must not see of the dossier: its identifiers (a case id such as "pub-hcc-01"
# can be looked up; a pseudonym is still an identifier).
HIDDEN_FROM_RATERS = frozenset({"format", "case_id", "patient.pseudonym"})
# Shown once, above the sections.
SHOWN_APART = frozenset({"question"})


def _require_admin(user: User) -> None:
    if not is_admin(user):
        raise PermissionDenied


# --- the system plan ------------------------------------------------------------------------


def system_plan_get(*, consultation: Consultation) -> Plan | None:
    """The consultation's plan (``consult.models.Plan``), the system arm of a packet."""
    return Plan.objects.filter(consultation=consultation).first()


# --- comparator plans -----------------------------------------------------------------------


def comparator_current(*, dossier: LesionDossier) -> ComparatorPlan | None:
    """The dossier's newest comparator plan version."""
    return dossier.comparator_plans.order_by("-number").first()


def comparator_dossiers(*, user: User) -> QuerySet[LesionDossier]:
    """Submitted dossiers of the user's teams, with how many comparator versions each has."""
    return (
        consult_selectors.dossier_list(user=user, status=DossierStatus.SUBMITTED)
        .annotate(comparator_count=Count("comparator_plans"))
        .order_by("case_id")
    )


def comparator_dossier_get(*, user: User, pk: int) -> LesionDossier:
    """The dossier, if the user's teams own it (404 otherwise; 403 for other roles)."""
    return consult_selectors.dossier_get(user=user, pk=pk)


def comparator_get(*, user: User, pk: int) -> ComparatorPlan:
    """A comparator version, if the user's teams own its dossier; 404 otherwise."""
    if not has_role(user, Role.CLINICIAN, Role.ADMIN):
        raise PermissionDenied
    try:
        return ComparatorPlan.objects.select_related("dossier", "created_by").get(
            pk=pk, dossier__patient__team__in=consult_selectors.teams_for(user=user)
        )
    except ComparatorPlan.DoesNotExist as exc:
        raise Http404("No such comparator plan") from exc


def comparator_versions(*, dossier: LesionDossier) -> QuerySet[ComparatorPlan]:
    return dossier.comparator_plans.select_related("created_by").order_by("-number")


# --- studies (administrators) -----------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A case a study can pair: the consultation's plan and the comparator a study would take
    (the newest independent one; else the newest, which is the team's decision on the
    system's plan and is left out unless the administrator includes such comparators)."""

    consultation: Consultation
    comparator: ComparatorPlan
    similarity: float | None = None  # how alike the pair reads once blinded

    @property
    def independent(self) -> bool:
        return self.comparator.independent


def study_candidates(*, user: User, with_similarity: bool = True) -> list[Candidate]:
    """Finished consultations with a plan whose dossier has a comparator plan: what a study
    can pair. The newest consultation of a dossier first."""
    _require_admin(user)
    consultations = list(
        Consultation.objects.filter(status=ConsultationStatus.COMPLETED)
        .filter(Exists(Plan.objects.filter(consultation=OuterRef("pk"))))
        .filter(Exists(ComparatorPlan.objects.filter(dossier=OuterRef("dossier"))))
        .select_related("dossier", "dossier__patient__team", "plan")
        .order_by("dossier__case_id", "-finished_at")
    )
    latest: dict[int, ComparatorPlan] = {}
    independent: dict[int, ComparatorPlan] = {}
    for comparator in ComparatorPlan.objects.filter(
        dossier__in=[c.dossier_id for c in consultations]
    ).order_by("dossier", "number"):
        latest[comparator.dossier_id] = comparator
        if comparator.source != ComparatorSource.MDT_DECISION:
            independent[comparator.dossier_id] = comparator
    out = []
    for c in consultations:
        comparator = independent.get(c.dossier_id) or latest[c.dossier_id]
        similarity = (
            pair_similarity(c.plan.payload, comparator.payload) if with_similarity else None
        )
        out.append(Candidate(c, comparator, similarity))
    return out


def rater_choices() -> QuerySet[User]:
    return User.objects.filter(is_active=True, groups__name=Role.RATER.value).order_by("email")


def study_list(*, user: User) -> QuerySet[Study]:
    _require_admin(user)
    return Study.objects.annotate(
        packet_count=Count("packets", distinct=True),
        assignment_count=Count("assignments", distinct=True),
        rated_count=Count("assignments__rating", distinct=True),
    ).order_by("-created_at")


def study_get(*, user: User, pk: int) -> Study:
    _require_admin(user)
    try:
        return Study.objects.select_related("created_by").get(pk=pk)
    except Study.DoesNotExist as exc:
        raise Http404("No such study") from exc


@dataclass(frozen=True)
class RaterProgress:
    rater: User
    assigned: int
    rated: int
    too_fast: int


def study_flagged_ratings(*, study: Study) -> QuerySet[Rating]:
    """Ratings submitted under 30 s: the board learns from them only once cleared."""
    return (
        Rating.objects.filter(assignment__study=study, too_fast=True)
        .select_related("assignment__rater", "assignment__packet", "clearance__cleared_by")
        .order_by("submitted_at")
    )


def study_rating_get(*, user: User, study: Study, pk: int) -> Rating:
    _require_admin(user)
    try:
        return Rating.objects.get(pk=pk, assignment__study=study)
    except Rating.DoesNotExist as exc:
        raise Http404("No such rating") from exc


def study_progress(*, study: Study) -> list[RaterProgress]:
    rows = (
        Assignment.objects.filter(study=study)
        .values("rater")
        .annotate(
            assigned=Count("id"),
            rated=Count("rating"),
            too_fast=Count("rating", filter=Q(rating__too_fast=True)),
        )
    )
    raters = User.objects.in_bulk([r["rater"] for r in rows])
    return sorted(
        (RaterProgress(raters[r["rater"]], r["assigned"], r["rated"], r["too_fast"]) for r in rows),
        key=lambda p: p.rater.email,
    )


# --- raters: their queue and their packets ----------------------------------------------------


def rater_queue(*, user: User) -> QuerySet[Assignment]:
    """The user's own assignments, in each study's case order for them; nothing of the
    packet but whether it is rated."""
    return (
        Assignment.objects.filter(rater=user)
        .select_related("study")
        .annotate(is_rated=Exists(Rating.objects.filter(assignment=OuterRef("pk"))))
        .order_by("-study__created_at", "order")
    )


def assignment_get(*, user: User, pk: int) -> Assignment:
    """The user's own assignment; anyone else's looks absent (404)."""
    try:
        return Assignment.objects.select_related(
            "study",
            "packet",
            "packet__plan",
            "packet__comparator",
            "packet__consultation__snapshot",
        ).get(pk=pk, rater=user)
    except Assignment.DoesNotExist as exc:
        raise Http404("No such packet") from exc


def assignment_rating(*, assignment: Assignment) -> Rating | None:
    return Rating.objects.filter(assignment=assignment).prefetch_related("scores").first()


@dataclass(frozen=True)
class PacketView:
    number: int  # the place in the rater's queue
    total: int
    question: str
    summary: list[SectionView]
    plans: tuple[tuple[str, BlindPlan], ...]  # ("A", plan), ("B", plan)


def case_summary(data: dict[str, Any]) -> list[SectionView]:
    """The dossier as a rater reads it: demographics, diagnosis, the index lesion, staging,
    biomarkers, laboratory values and organ function, comorbidities and preferences; no
    identifiers."""
    out = []
    for section in case_sections(data):
        rows = [r for r in section.rows if r.path not in HIDDEN_FROM_RATERS | SHOWN_APART]
        out.append(SectionView(section.key, section.label, rows, section.prior_therapies))
    return out


def packet_documents(*, assignment: Assignment) -> dict[str, dict[str, Any]]:
    """The two plan documents by the position the rater sees them in."""
    packet = assignment.packet
    system, comparator = packet.plan.payload, packet.comparator.payload
    if packet.system_position == "A":
        return {"A": system, "B": comparator}
    return {"A": comparator, "B": system}


def packet_view(*, assignment: Assignment) -> PacketView:
    data = assignment.packet.consultation.snapshot.data
    documents = packet_documents(assignment=assignment)
    return PacketView(
        number=assignment.order,
        total=Assignment.objects.filter(study=assignment.study, rater=assignment.rater).count(),
        question=str(data.get("question") or ""),
        summary=case_summary(data),
        plans=tuple(zip(("A", "B"), blind_packet(documents["A"], documents["B"]), strict=True)),
    )
