"""Comparator plans, studies, their randomised packets, rater assignments and ratings."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from consult.models import Consultation, LesionDossier, Plan
from consult.rating.rubric import DIMENSIONS, GUESS_CHOICES, PREFERENCE_CHOICES

POSITION_CHOICES = (("A", "A"), ("B", "B"))
DIMENSION_CHOICES = tuple((d.key, d.label) for d in DIMENSIONS)


class ComparatorSource(models.TextChoices):
    ENTERED = "entered", "Entered by a clinician"
    IMPORTED = "imported", "Imported (mdtboard.plan/1)"
    # The MDT decision that clinician review (consult/review) records on the system's plan;
    # see comparator_from_mdt_decision. Not independent of the system's plan.
    MDT_DECISION = "mdt_decision", "MDT decision of the clinician review"
    DEMO = "demo", "Demo: built from the case file's expected block"


class ComparatorPlan(models.Model):
    """The human MDT plan for a dossier, as ``mdtboard.plan/1``. Append-only: a correction is
    a new version (``number``), so a packet keeps pointing at what its raters scored."""

    dossier = models.ForeignKey(
        LesionDossier, on_delete=models.PROTECT, related_name="comparator_plans"
    )
    number = models.PositiveIntegerField()
    payload = models.JSONField()
    content_hash = models.CharField(max_length=64)
    source = models.CharField(max_length=20, choices=ComparatorSource.choices)
    # Where a plan recorded elsewhere came from ("review.planversion:12"); blank otherwise.
    source_ref = models.CharField(max_length=200, blank=True)
    # How long the clinicians took to write it: the human arm's response time (EvoMDT Fig. 4b).
    minutes_to_write = models.PositiveIntegerField(null=True, blank=True)
    # Entered by a clinician who attests having written it without seeing the system's plan.
    attested_blind = models.BooleanField(default=False)
    # Made from the team's decision on the system's plan: "accept" or "amend" (blank else).
    derived_decision = models.CharField(max_length=8, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dossier", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["dossier", "number"], name="rating_comparator_number_per_dossier"
            ),
            models.CheckConstraint(
                condition=models.Q(derived_decision="") | models.Q(source="mdt_decision"),
                name="rating_comparator_decision_only_when_derived",
            ),
        ]

    def __str__(self) -> str:
        return f"comparator v{self.number} for {self.dossier.case_id}"

    @property
    def independent(self) -> bool:
        """Whether it was made apart from the system's plan. The team's decision on that plan
        (accepted, or amended from it) is not: it starts from what it would be compared with."""
        return self.source != ComparatorSource.MDT_DECISION

    @property
    def provenance(self) -> str:
        """How it was made, in words."""
        if self.source == ComparatorSource.MDT_DECISION:
            how = {"accept": "accepted", "amend": "amended"}.get(self.derived_decision)
            return (
                f"the team's decision on the system's plan ({how} it)"
                if how
                else "the team's decision on the system's plan"
            )
        if self.source == ComparatorSource.ENTERED:
            return (
                "entered by a clinician who attests not having seen the system's plan"
                if self.attested_blind
                else "entered by a clinician (not attested as written without the system's plan)"
            )
        return str(self.get_source_display()).lower()


class StudyStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class Study(models.Model):
    """A single-blind rating study. ``seed`` and the allocation it produced (the packets'
    strata, blocks and A/B positions, the raters' case orders) stay on the server: no page a
    rater can open shows them."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=StudyStatus.choices, default=StudyStatus.OPEN)
    raters = models.JSONField()  # the rater ids the allocation was drawn for
    raters_per_packet = models.PositiveSmallIntegerField()
    block_sizes = models.JSONField()
    seed = models.BigIntegerField()
    allocation_hash = models.CharField(max_length=64)
    llm_arm = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name


class Packet(models.Model):
    """One case of a study: the system plan and the comparator, one shown as A, the other B."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="packets")
    consultation = models.ForeignKey(Consultation, on_delete=models.PROTECT, related_name="+")
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, related_name="+")
    comparator = models.ForeignKey(ComparatorPlan, on_delete=models.PROTECT, related_name="+")
    cancer_type = models.CharField(max_length=32)
    complexity = models.CharField(max_length=16)
    complexity_reasons = models.JSONField(default=list)
    sequence = models.PositiveIntegerField()
    block = models.PositiveIntegerField()
    block_size = models.PositiveSmallIntegerField()
    system_position = models.CharField(max_length=1, choices=POSITION_CHOICES)
    # How alike the two plans read once blinded (0-1, word sequence): 1 means the rater sees
    # the same plan twice. Null for packets made before it was measured.
    similarity = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["study", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "consultation"], name="rating_one_packet_per_consultation"
            ),
            models.UniqueConstraint(fields=["study", "sequence"], name="rating_packet_sequence"),
        ]

    def __str__(self) -> str:
        return f"packet {self.sequence} of study {self.study_id}"

    @property
    def stratum(self) -> str:
        return f"{self.cancer_type} / {self.complexity}"

    def arm_of(self, position: str) -> str:
        """'system' or 'comparator': what the plan a rater saw at ``position`` was."""
        return "system" if position == self.system_position else "comparator"


class Assignment(models.Model):
    """A packet given to one rater, at a place in that rater's own case order."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="assignments")
    packet = models.ForeignKey(Packet, on_delete=models.PROTECT, related_name="assignments")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rating_assignments"
    )
    order = models.PositiveIntegerField()
    # Set by the server when the rater first opens the packet: the start of the response time.
    opened_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "rater", "order"]
        constraints = [
            models.UniqueConstraint(fields=["packet", "rater"], name="rating_one_assignment"),
            models.UniqueConstraint(
                fields=["study", "rater", "order"], name="rating_assignment_order"
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.rater_id}, #{self.order})"


class Rating(models.Model):
    """A submitted rating: locked (the database refuses UPDATE and DELETE)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="rating")
    preference = models.CharField(max_length=8, choices=PREFERENCE_CHOICES)
    system_guess = models.CharField(max_length=8, choices=GUESS_CHOICES)
    comment = models.TextField(blank=True)
    seconds = models.FloatField()
    too_fast = models.BooleanField()
    submitted_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"rating of assignment {self.assignment_id}"


class RatingClearance(models.Model):
    """An administrator looked at a rating flagged as too fast and clears it: from then on the
    board may learn from it. Append-only, like the rating it clears."""

    rating = models.OneToOneField(Rating, on_delete=models.PROTECT, related_name="clearance")
    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    note = models.CharField(max_length=500, blank=True)
    cleared_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"clearance of rating {self.rating_id}"


class Score(models.Model):
    rating = models.ForeignKey(Rating, on_delete=models.PROTECT, related_name="scores")
    position = models.CharField(max_length=1, choices=POSITION_CHOICES)
    dimension = models.CharField(max_length=40, choices=DIMENSION_CHOICES)
    value = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["rating", "position", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["rating", "position", "dimension"], name="rating_one_score"
            ),
            models.CheckConstraint(
                condition=models.Q(value__gte=1, value__lte=5), name="rating_score_1_to_5"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.position}.{self.dimension}={self.value}"


class LLMRating(models.Model):
    """The LLM rater's scores of a packet: a separate arm, never shown to physicians."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="llm_ratings")
    packet = models.ForeignKey(Packet, on_delete=models.PROTECT, related_name="llm_ratings")
    model = models.CharField(max_length=120)
    prompt_version = models.CharField(max_length=40)
    preference = models.CharField(max_length=8, choices=PREFERENCE_CHOICES)
    system_guess = models.CharField(max_length=8, choices=GUESS_CHOICES)
    comment = models.TextField(blank=True)
    tokens_prompt = models.PositiveIntegerField(default=0)
    tokens_completion = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "packet"]
        constraints = [
            models.UniqueConstraint(fields=["packet", "model"], name="rating_one_llm_rating")
        ]

    def __str__(self) -> str:
        return f"LLM rating of packet {self.packet_id} ({self.model})"


class LLMScore(models.Model):
    llm_rating = models.ForeignKey(LLMRating, on_delete=models.PROTECT, related_name="scores")
    position = models.CharField(max_length=1, choices=POSITION_CHOICES)
    dimension = models.CharField(max_length=40, choices=DIMENSION_CHOICES)
    value = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["llm_rating", "position", "dimension"]
        constraints = [
            models.UniqueConstraint(
                fields=["llm_rating", "position", "dimension"], name="rating_one_llm_score"
            ),
            models.CheckConstraint(
                condition=models.Q(value__gte=1, value__lte=5), name="rating_llm_score_1_to_5"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.position}.{self.dimension}={self.value}"
