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
from consult.review.models import (
    DECIDED,
    ClinicianReview,
    MdtMeeting,
    PlanReport,
    PlanReview,
    PlanVersion,
    ReviewReopen,
    ReviewStage,
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
    stage: str = ReviewStage.AWAITING
    cycle: int = 0
    reopenings: list[ReviewReopen] = field(default_factory=list)

    @property
    def current(self) -> VersionView:
        return self.versions[-1]

    @property
    def decision(self) -> ClinicianReview | None:
        """The team's decision in the current review cycle (None when reopened since)."""
        return next((r for r in reversed(self.reviews) if r.cycle == self.cycle), None)

    @property
    def stage_label(self) -> str:
        return str(ReviewStage(self.stage).label)

    @property
    def awaiting(self) -> bool:
        return self.stage == ReviewStage.AWAITING

    @property
    def is_decided(self) -> bool:
        """A decision of this cycle, not yet with its meeting."""
        return self.stage in DECIDED

    @property
    def may_record_meeting(self) -> bool:
        return self.stage in (*DECIDED, ReviewStage.MEETING)

    @property
    def may_reopen(self) -> bool:
        return self.stage in (*DECIDED, ReviewStage.MEETING)

    @property
    def history(self) -> list[ClinicianReview | ReviewReopen]:
        """Decisions and reopenings in the order they happened."""
        events: list[ClinicianReview | ReviewReopen] = [*self.reviews, *self.reopenings]
        return sorted(events, key=lambda e: (e.cycle, isinstance(e, ReviewReopen)))

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
        return review_status(self.stage, self.decision.decision if self.decision else None)


_DECISION_WORDS = {"accept": "accepted", "amend": "amended", "reject": "rejected"}


def review_status(stage: str, decision: str | None) -> str:
    """Where a review stands, in the words of the worklist."""
    if stage == ReviewStage.SIGNED and decision:
        return f"{_DECISION_WORDS[decision]}, signed off"
    if stage == ReviewStage.MEETING and decision:
        return f"{_DECISION_WORDS[decision]}, meeting recorded, awaiting sign-off"
    if stage in DECIDED and decision:
        return f"{_DECISION_WORDS[decision]}, awaiting the meeting"
    return "awaiting review"


def plan_consultation_get(*, user: User, pk: int) -> Consultation:
    """A consultation the user's team may review, with its plan; 404 when there is none."""
    consultation = consult_selectors.consultation_get(user=user, pk=pk)
    if not Plan.objects.filter(consultation=consultation).exists():
        raise Http404("This consultation has no plan yet")
    return consultation


@dataclass(frozen=True)
class MdtDecision:
    """The team's recorded decision with its meeting: what another app (rating studies) may
    take as the team's plan. ``version`` is the decided plan version."""

    consultation: Consultation
    decision: str  # accept | amend | reject
    review_id: int
    version: VersionView
    final_decision: str
    signed_off: bool

    @property
    def source_ref(self) -> str:
        return f"review.decision:{self.review_id}:plan-v{self.version.number}"


def mdt_decision_get(*, consultation: Consultation) -> MdtDecision | None:
    """The decision of the current review cycle once its meeting is recorded (None before)."""
    state = review_state_get(consultation=consultation)
    decision = state.decision
    if decision is None or state.meeting is None:
        return None
    if state.stage not in (ReviewStage.MEETING, ReviewStage.SIGNED):
        return None
    return MdtDecision(
        consultation=consultation,
        decision=str(decision.decision),
        review_id=decision.pk,
        version=state.version(decision.plan_number),
        final_decision=state.meeting.final_decision,
        signed_off=state.sign_off is not None,
    )


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
    progress = PlanReview.objects.filter(consultation=consultation).first()
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
        stage=progress.stage if progress is not None else ReviewStage.AWAITING,
        cycle=progress.cycle if progress is not None else 0,
        reopenings=list(
            ReviewReopen.objects.filter(consultation=consultation).select_related("reopened_by")
        ),
    )


def team_clinicians(*, consultation: Consultation) -> QuerySet[User]:
    """Who may be named responsible clinician: the clinicians of the patient's team."""
    return User.objects.filter(
        teams=consultation.dossier.patient.team_id, groups__name=Role.CLINICIAN, is_active=True
    ).order_by("display_name", "email")


def may_sign_off(*, user: User, state: ReviewState) -> bool:
    meeting = state.meeting
    return (
        has_role(user, Role.CLINICIAN)
        and state.stage == ReviewStage.MEETING
        and meeting is not None
        and meeting.responsible_id == user.pk
        and state.decision is not None
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


@dataclass(frozen=True)
class CitedUnit:
    """What a citation opens with: the source (organisation, guideline, version, year, its
    address) and the unit's paraphrase of it."""

    title: str
    text: str
    organisation: str
    guideline: str
    source_version: str
    year: int | None
    url: str


def evidence_details(*, version_ids: dict[str, int]) -> dict[str, CitedUnit]:
    """unit id -> the cited version's paraphrase with its source, in one query."""
    rows = UnitVersion.objects.filter(pk__in=version_ids.values()).select_related("source")
    by_pk = {
        row.pk: CitedUnit(
            title=row.title,
            text=row.text,
            organisation=row.source.organisation,
            guideline=row.source.title,
            source_version=row.source.version,
            year=row.source.year,
            url=row.source.url,
        )
        for row in rows
    }
    return {unit: by_pk[pk] for unit, pk in version_ids.items() if pk in by_pk}


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
    so the list reads as the agenda of the next meeting. Five queries whatever the count."""
    ids = [d.pk for d in dossiers]
    latest: dict[int, Consultation] = {}
    for consultation in Consultation.objects.filter(dossier_id__in=ids).order_by("created_at"):
        latest[consultation.dossier_id] = consultation
    cids = [c.pk for c in latest.values()]
    with_plan = set(
        Plan.objects.filter(consultation_id__in=cids).values_list("consultation_id", flat=True)
    )
    stages = dict(
        PlanReview.objects.filter(consultation_id__in=cids).values_list("consultation_id", "stage")
    )
    cycles = dict(
        PlanReview.objects.filter(consultation_id__in=cids).values_list("consultation_id", "cycle")
    )
    decisions: dict[int, str] = {}
    for cid, cycle, decision in ClinicianReview.objects.filter(
        consultation_id__in=cids
    ).values_list("consultation_id", "cycle", "decision"):
        if cycle == cycles.get(cid, 0):
            decisions[cid] = decision
    entries: dict[int, WorklistEntry] = {}
    for dossier_id, consultation in latest.items():
        if consultation.pk in with_plan:
            review = review_status(
                stages.get(consultation.pk, ReviewStage.AWAITING), decisions.get(consultation.pk)
            )
        else:
            review = ""
        entries[dossier_id] = WorklistEntry(
            consultation.pk, consultation.get_status_display(), review
        )
    return entries


@dataclass(frozen=True)
class SignedRecord:
    """A consultation of the dossier whose review was signed off: the record that stays as it
    was, whatever the dossier becomes."""

    consultation_id: int
    snapshot_number: int
    plan_number: int
    signed_at: datetime
    signed_by: str


def dossier_signed_records(*, dossier: LesionDossier) -> list[SignedRecord]:
    rows = SignOff.objects.filter(consultation__dossier=dossier).select_related(
        "consultation__snapshot", "signed_by"
    )
    return [
        SignedRecord(
            s.consultation_id,
            s.consultation.snapshot.number,
            s.plan_number,
            s.signed_at,
            str(s.signed_by),
        )
        for s in rows.order_by("signed_at")
    ]


# --- reports -------------------------------------------------------------------------------------
def report_get(*, user: User, pk: int) -> PlanReport:
    """A report whose consultation the user's team owns; 404 otherwise."""
    try:
        report = PlanReport.objects.select_related("consultation").get(pk=pk)
    except PlanReport.DoesNotExist as exc:
        raise Http404("No such report") from exc
    consult_selectors.consultation_get(user=user, pk=report.consultation_id)
    return report
