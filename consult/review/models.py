"""What the clinicians decide about a board's plan: amended plan versions, reviews, the MDT
meeting, the responsible clinician's sign-off, and the PDF reports rendered from them.

Version 1 of a plan is the board's own proposal (``consult.Plan``); amendments are versions
2, 3, ... here. Versions, reviews, reopenings and sign-offs are append-only in the database.
Where the review stands is one row per consultation (``PlanReview``), moved only by the
transitions of its state machine (docs/review-states.md); the database refuses any other move."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django_fsm import FSMField, FSMModelMixin, transition

from consult.models import Consultation


class ReviewStage(models.TextChoices):
    AWAITING = "awaiting_review", "Awaiting review"
    ACCEPTED = "accepted", "Accepted"
    AMENDED = "amended", "Amended"
    REJECTED = "rejected", "Rejected"
    MEETING = "meeting_recorded", "Meeting recorded"
    SIGNED = "signed_off", "Signed off"


DECIDED = [ReviewStage.ACCEPTED, ReviewStage.AMENDED, ReviewStage.REJECTED]


class PlanReview(FSMModelMixin, models.Model):
    """Where the team's review of one consultation's plan stands. Forward only: a decision
    (accept, amend, reject), then the meeting, then the sign-off; changing a decision is an
    explicit reopening (``ReviewReopen``), which starts a new review cycle. The services move
    it only through these transitions, under the consultation's row lock."""

    consultation = models.OneToOneField(
        Consultation, on_delete=models.PROTECT, related_name="plan_review"
    )
    stage = FSMField(
        max_length=20, choices=ReviewStage.choices, default=ReviewStage.AWAITING, protected=True
    )
    # 0 until the first reopening; each reopening starts the next cycle, with its own decision.
    cycle = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    # The app's database role may UPDATE only these columns, and never DELETE (dbroles).
    MUTABLE_FIELDS: ClassVar[tuple[str, ...]] = ("stage", "cycle", "updated_at")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(stage__in=ReviewStage.values), name="plan_review_known_stage"
            )
        ]

    def __str__(self) -> str:
        return f"review of consultation {self.consultation_id}: {self.stage} (cycle {self.cycle})"

    @transition(field=stage, source=ReviewStage.AWAITING, target=ReviewStage.ACCEPTED)
    def accept(self) -> None:
        """The team accepts the current plan version."""

    @transition(field=stage, source=ReviewStage.AWAITING, target=ReviewStage.AMENDED)
    def amend(self) -> None:
        """The team amends the current version into a new one, which is its decision."""

    @transition(field=stage, source=ReviewStage.AWAITING, target=ReviewStage.REJECTED)
    def reject(self) -> None:
        """The team rejects the plan, with the reason."""

    @transition(field=stage, source=[*DECIDED, ReviewStage.MEETING], target=ReviewStage.MEETING)
    def record_meeting(self) -> None:
        """The meeting that discussed the decision is recorded (or corrected)."""

    @transition(field=stage, source=ReviewStage.MEETING, target=ReviewStage.SIGNED)
    def sign_off(self) -> None:
        """The responsible clinician signs the decided version off; nothing changes after."""

    @transition(field=stage, source=[*DECIDED, ReviewStage.MEETING], target=ReviewStage.AWAITING)
    def reopen(self) -> None:
        """The decision is taken back, with a reason: the next cycle awaits a new one."""
        self.cycle += 1


class ReasonKind(models.TextChoices):
    """Why a plan was rejected: a clinical reason teaches the board; an administrative one
    (a duplicate, the wrong patient, entered in error) does not."""

    CLINICAL = "clinical", "Clinical"
    ADMINISTRATIVE = "administrative", "Administrative (duplicate, wrong patient, entered in error)"


class PlanVersion(models.Model):
    """A plan amended by the clinicians: immutable and hashed like the proposal it amends."""

    consultation = models.ForeignKey(
        Consultation, on_delete=models.PROTECT, related_name="plan_versions"
    )
    number = models.PositiveSmallIntegerField()
    based_on = models.PositiveSmallIntegerField()
    payload = models.JSONField()
    content_hash = models.CharField(max_length=64)
    reason = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # One form submission makes at most one version, however often the button is pressed.
    idempotency_key = models.UUIDField(unique=True)

    class Meta:
        ordering = ["consultation", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["consultation", "number"], name="one_plan_version_number"
            ),
            models.CheckConstraint(
                condition=Q(number__gte=2) & Q(based_on__lt=models.F("number")),
                name="plan_version_amends_an_earlier_one",
            ),
        ]

    def __str__(self) -> str:
        return f"plan v{self.number} of consultation {self.consultation_id}"


class Decision(models.TextChoices):
    ACCEPT = "accept", "Accepted"
    AMEND = "amend", "Amended"
    REJECT = "reject", "Rejected"


class ClinicianReview(models.Model):
    """The team's decision on one plan version, recorded by one clinician: one per review
    cycle, so the decision of a cycle is never followed by a second one (a reopening starts a
    new cycle)."""

    consultation = models.ForeignKey(Consultation, on_delete=models.PROTECT, related_name="reviews")
    decision = models.CharField(max_length=8, choices=Decision.choices)
    reason = models.TextField(blank=True)
    plan_number = models.PositiveSmallIntegerField()
    plan_hash = models.CharField(max_length=64)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    idempotency_key = models.UUIDField(unique=True)
    cycle = models.PositiveSmallIntegerField(default=0)
    # For a rejection: whether its reason is clinical (blank: recorded before it was asked).
    reason_kind = models.CharField(max_length=16, choices=ReasonKind.choices, blank=True)

    class Meta:
        ordering = ["consultation", "created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision="accept") | ~Q(reason=""),
                name="amend_or_reject_has_a_reason",
            ),
            # One decision per cycle: twenty tabs that each load the form record one accept.
            models.UniqueConstraint(
                fields=["consultation", "cycle"], name="one_decision_per_review_cycle"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} of plan v{self.plan_number} ({self.consultation_id})"


class ReviewReopen(models.Model):
    """A decision taken back, with the reason: it closes ``cycle`` and the review awaits the
    decision of the next one. The decisions before it stay on record."""

    consultation = models.ForeignKey(
        Consultation, on_delete=models.PROTECT, related_name="review_reopenings"
    )
    cycle = models.PositiveSmallIntegerField()
    reason = models.TextField()
    reopened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    idempotency_key = models.UUIDField(unique=True)

    class Meta:
        ordering = ["consultation", "cycle"]
        constraints = [
            models.UniqueConstraint(fields=["consultation", "cycle"], name="one_reopen_per_cycle"),
            models.CheckConstraint(condition=~Q(reason=""), name="reopen_has_a_reason"),
        ]

    def __str__(self) -> str:
        return f"reopening of cycle {self.cycle} ({self.consultation_id})"


class MdtMeeting(models.Model):
    """The meeting that discussed the case. Editable until the plan is signed off."""

    consultation = models.OneToOneField(
        Consultation, on_delete=models.PROTECT, related_name="meeting"
    )
    held_on = models.DateField()
    # [{"name": "...", "specialty": "..."}]: colleagues from other departments need no account.
    attendees = models.JSONField(default=list)
    final_decision = models.TextField()
    dissent = models.TextField(blank=True)
    responsible = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    recorded_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"MDT meeting {self.held_on} ({self.consultation_id})"


class SignOff(models.Model):
    """The responsible clinician signs the decided plan version: after this nothing about the
    review changes. One per consultation."""

    consultation = models.OneToOneField(
        Consultation, on_delete=models.PROTECT, related_name="sign_off"
    )
    review = models.ForeignKey(ClinicianReview, on_delete=models.PROTECT, related_name="+")
    plan_number = models.PositiveSmallIntegerField()
    plan_hash = models.CharField(max_length=64)
    signed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    signed_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"sign-off of plan v{self.plan_number} ({self.consultation_id})"


class ReportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RENDERING = "rendering", "Rendering"
    DONE = "done", "Ready"
    FAILED = "failed", "Failed"


class PaperSize(models.TextChoices):
    A4 = "a4", "A4"
    LETTER = "letter", "US Letter"


class ReportAppendix(models.TextChoices):
    """What the clinician may add after the two-page summary."""

    EVIDENCE = "evidence", "Evidence cited, with each guideline's words"
    GATES = "gates", "Every safety gate, including those that passed"
    MEMBERS = "members", "Board members' conclusions, reviews and votes"
    DOSSIER = "dossier", "The dossier as submitted, with derived facts"
    TIMELINE = "timeline", "The patient's course over time: treatments, scans with response, labs"


class PlanReport(models.Model):
    """A PDF report of one plan version, rendered by the worker and kept under MEDIA_ROOT
    (never served directly: a view checks who asks)."""

    consultation = models.ForeignKey(Consultation, on_delete=models.PROTECT, related_name="reports")
    plan_number = models.PositiveSmallIntegerField()
    plan_hash = models.CharField(max_length=64)
    paper = models.CharField(max_length=8, choices=PaperSize.choices, default=PaperSize.A4)
    # The appendix sections chosen (ReportAppendix values, in their order); empty is the
    # two-page summary alone.
    appendix = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=12, choices=ReportStatus.choices, default=ReportStatus.QUEUED
    )
    progress = models.PositiveSmallIntegerField(default=0)
    step = models.CharField(max_length=120, blank=True)
    path = models.CharField(max_length=300, blank=True)  # relative to MEDIA_ROOT
    size_bytes = models.PositiveIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    render_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"report {self.pk} of plan v{self.plan_number} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (ReportStatus.DONE, ReportStatus.FAILED)

    @property
    def unclaimed(self) -> bool:
        """Queued for a minute and no worker has started it: the page says so."""
        from django.utils import timezone

        waited = (timezone.now() - self.created_at).total_seconds()
        return self.status == ReportStatus.QUEUED and waited > 60
