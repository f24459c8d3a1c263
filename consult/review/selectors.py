"""Reads for the review: the plan's versions, the team's decisions, the record behind a plan
(agent messages, events, the evidence tree, read from the saved rows), evidence links, the
worklist, and reports. Every lookup by id checks the user's team (404 otherwise)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from consult import selectors as consult_selectors
from consult.models import (
    AgentMessage,
    Consultation,
    ConsultationEvent,
    EvidenceNode,
    LesionDossier,
    Plan,
)
from consult.rating.models import ComparatorPlan
from consult.review.models import (
    ClinicianReview,
    MdtMeeting,
    PlanReport,
    PlanVersion,
    SignOff,
)
from knowledge.models import UnitVersion
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, has_role


@dataclass(frozen=True)
class VersionView:
    """One version of a consultation's plan: 1 is the board's proposal, 2+ amendments."""

    number: int
    payload: dict[str, Any]
    content_hash: str
    created_at: datetime
    author: str
    reason: str
    based_on: int | None


@dataclass
class ReviewState:
    consultation: Consultation
    versions: list[VersionView]
    reviews: list[ClinicianReview]
    meeting: MdtMeeting | None
    sign_off: SignOff | None
    reports: list[PlanReport] = field(default_factory=list)

    @property
    def current(self) -> VersionView:
        return self.versions[-1]

    @property
    def decision(self) -> ClinicianReview | None:
        return self.reviews[-1] if self.reviews else None

    @property
    def decided(self) -> VersionView:
        """The version the team's current decision concerns (the latest when undecided)."""
        if self.decision is None:
            return self.current
        return self.version(self.decision.plan_number)

    def version(self, number: int) -> VersionView:
        for version in self.versions:
            if version.number == number:
                return version
        raise Http404("No such plan version")

    @property
    def status(self) -> str:
        """What the worklist says about the case."""
        if self.sign_off is not None:
            return "signed off"
        if self.decision is not None:
            return self.decision.get_decision_display().lower() + ", awaiting sign-off"
        return "awaiting review"


def plan_consultation_get(*, user: Any, pk: int) -> Consultation:
    """A consultation the user's team may review, with its plan; 404 when there is none."""
    consultation = consult_selectors.consultation_get(user=user, pk=pk)
    if not Plan.objects.filter(consultation=consultation).exists():
        raise Http404("This consultation has no plan yet")
    return consultation


def comparator_latest(*, consultation: Consultation) -> ComparatorPlan | None:
    """The dossier's newest comparator plan (what a rating study would pair with the plan)."""
    return (
        ComparatorPlan.objects.filter(dossier_id=consultation.dossier_id)
        .order_by("-number")
        .first()
    )


def comparator_ref(decision: ClinicianReview) -> str:
    """How a comparator plan names the decision it was made from (its ``source_ref``)."""
    return f"review.decision:{decision.pk}:plan-v{decision.plan_number}"


def plan_versions(*, consultation: Consultation) -> list[VersionView]:
    plan = Plan.objects.get(consultation=consultation)
    versions = [
        VersionView(
            number=1,
            payload=plan.payload,
            content_hash=plan.content_hash,
            created_at=plan.created_at,
            author=f"the board ({plan.payload.get('engine', '')})",
            reason="",
            based_on=None,
        )
    ]
    for amended in PlanVersion.objects.filter(consultation=consultation).select_related("author"):
        versions.append(
            VersionView(
                number=amended.number,
                payload=amended.payload,
                content_hash=amended.content_hash,
                created_at=amended.created_at,
                author=str(amended.author),
                reason=amended.reason,
                based_on=amended.based_on,
            )
        )
    return versions


def review_state_get(*, consultation: Consultation, with_reports: bool = False) -> ReviewState:
    reviews = list(
        ClinicianReview.objects.filter(consultation=consultation)
        .select_related("reviewer")
        .order_by("created_at", "id")
    )
    meeting = (
        MdtMeeting.objects.filter(consultation=consultation).select_related("responsible").first()
    )
    sign_off = SignOff.objects.filter(consultation=consultation).select_related("signed_by").first()
    reports = (
        list(PlanReport.objects.filter(consultation=consultation).order_by("-created_at")[:5])
        if with_reports
        else []
    )
    return ReviewState(
        consultation=consultation,
        versions=plan_versions(consultation=consultation),
        reviews=reviews,
        meeting=meeting,
        sign_off=sign_off,
        reports=reports,
    )


def team_clinicians(*, consultation: Consultation) -> QuerySet[Any]:
    """Who may be named responsible clinician: the clinicians of the patient's team."""
    return User.objects.filter(
        teams=consultation.dossier.patient.team_id, groups__name=Role.CLINICIAN, is_active=True
    ).order_by("display_name", "email")


def may_sign_off(*, user: Any, state: ReviewState) -> bool:
    meeting = state.meeting
    return (
        has_role(user, Role.CLINICIAN)
        and meeting is not None
        and meeting.responsible_id == user.pk
        and state.decision is not None
        and state.sign_off is None
    )


# --- the record behind a plan (saved rows, not the live board) ----------------------------------
def consultation_messages(*, consultation: Consultation) -> QuerySet[AgentMessage]:
    return AgentMessage.objects.filter(consultation=consultation).order_by("id")


def consultation_event_rows(*, consultation: Consultation) -> QuerySet[ConsultationEvent]:
    return ConsultationEvent.objects.filter(consultation=consultation).order_by("seq")


def consultation_evidence_nodes(*, consultation: Consultation) -> QuerySet[EvidenceNode]:
    return EvidenceNode.objects.filter(consultation=consultation).order_by("id")


def consultation_models(*, consultation: Consultation) -> list[str]:
    """The LLM models that answered (empty for the guideline engine)."""
    names = (
        AgentMessage.objects.filter(consultation=consultation)
        .exclude(model_name="")
        .values_list("model_name", flat=True)
        .distinct()
    )
    return sorted(names)


# --- evidence ----------------------------------------------------------------------------------
def evidence_version_ids(*, refs: list[dict[str, Any]]) -> dict[str, int]:
    """unit id -> the published UnitVersion a plan's evidence entry cites ("v3:abcdef..."
    names the version number and the start of its content hash)."""
    wanted: dict[tuple[str, int], str] = {}
    for ref in refs:
        unit_id, version = str(ref.get("unit_id") or ""), str(ref.get("version") or "")
        number, _, prefix = version.removeprefix("v").partition(":")
        if unit_id and number.isdigit():
            wanted[(unit_id, int(number))] = prefix
    if not wanted:
        return {}
    rows = UnitVersion.objects.filter(
        unit__key__in={unit for unit, _ in wanted},
        number__in={n for _, n in wanted},
        published_at__isnull=False,
    ).values_list("pk", "unit__key", "number", "content_hash")
    found: dict[str, int] = {}
    for pk, unit_key, unit_number, content_hash in rows:
        expected = wanted.get((str(unit_key), int(unit_number)))
        if expected is not None and str(content_hash).startswith(expected):
            found[str(unit_key)] = int(pk)
    return found


def evidence_titles(*, version_ids: dict[str, int]) -> dict[str, str]:
    """unit id -> the title of the cited version: what a clinician reads instead of the id."""
    rows = UnitVersion.objects.filter(pk__in=version_ids.values()).values_list("pk", "title")
    titles = dict(rows)
    return {unit: str(titles[pk]) for unit, pk in version_ids.items() if pk in titles}


def unit_titles(*, keys: set[str]) -> dict[str, str]:
    """unit id -> the title of its newest published version (for citations that name only
    the unit, such as a member's claims)."""
    rows = (
        UnitVersion.objects.filter(unit__key__in=keys, published_at__isnull=False)
        .order_by("unit__key", "number")
        .values_list("unit__key", "title")
    )
    return {str(key): str(title) for key, title in rows}  # the newest number wins


# --- the worklist --------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorklistEntry:
    consultation_id: int | None
    consultation_status: str
    review_status: str


def dossier_worklist(*, dossiers: list[LesionDossier]) -> dict[int, WorklistEntry]:
    """For each dossier: its latest consultation and where the team's review of it stands,
    so the list reads as the agenda of the next meeting. Four queries whatever the count."""
    ids = [d.pk for d in dossiers]
    latest: dict[int, Consultation] = {}
    for consultation in Consultation.objects.filter(dossier_id__in=ids).order_by("created_at"):
        latest[consultation.dossier_id] = consultation
    cids = [c.pk for c in latest.values()]
    with_plan = set(
        Plan.objects.filter(consultation_id__in=cids).values_list("consultation_id", flat=True)
    )
    signed = set(
        SignOff.objects.filter(consultation_id__in=cids).values_list("consultation_id", flat=True)
    )
    decisions: dict[int, str] = {}
    for cid, decision in (
        ClinicianReview.objects.filter(consultation_id__in=cids)
        .order_by("created_at", "id")
        .values_list("consultation_id", "decision")
    ):
        decisions[cid] = decision
    labels = {"accept": "accepted", "amend": "amended", "reject": "rejected"}
    entries: dict[int, WorklistEntry] = {}
    for dossier_id, consultation in latest.items():
        if consultation.pk in signed:
            review = f"{labels[decisions[consultation.pk]]}, signed off"
        elif consultation.pk in decisions:
            review = f"{labels[decisions[consultation.pk]]}, awaiting sign-off"
        elif consultation.pk in with_plan:
            review = "awaiting review"
        else:
            review = ""
        entries[dossier_id] = WorklistEntry(
            consultation.pk, consultation.get_status_display(), review
        )
    return entries


# --- reports -------------------------------------------------------------------------------------
def report_get(*, user: Any, pk: int) -> PlanReport:
    """A report whose consultation the user's team owns; 404 otherwise."""
    try:
        report = PlanReport.objects.select_related("consultation").get(pk=pk)
    except PlanReport.DoesNotExist as exc:
        raise Http404("No such report") from exc
    consult_selectors.consultation_get(user=user, pk=report.consultation_id)
    return report
