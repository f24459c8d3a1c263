"""CorrectKB and ChainKB entries, which consultations they informed, and the governed versions
of prompts and consensus weights.

Entries point at the consultation, review or rating they came from by id only: the knowledge
app never imports consult (pyproject's import contracts)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from knowledge.models import EMBEDDING_DIM


class EntryKind(models.TextChoices):
    CORRECT = "correct", "CorrectKB"  # a plan the team accepted or raters scored well
    CHAIN = "chain", "ChainKB"  # a plan amended, rejected or rated poorly, with a reflection


class EntryStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class EntrySource(models.TextChoices):
    REVIEW_ACCEPT = "review_accept", "Plan accepted"
    REVIEW_AMEND = "review_amend", "Plan amended"
    REVIEW_REJECT = "review_reject", "Plan rejected"
    RATING_GOOD = "rating_good", "Rated well"
    RATING_POOR = "rating_poor", "Rated poorly"
    MANUAL = "manual", "Written by an administrator"


class ExperienceEntry(models.Model):
    """One past case as the board may recall it. CorrectKB: case summary, question, final plan,
    key reasoning. ChainKB: case summary, the correct plan (as amended), the board's initial
    hypothesis, its analysis, its final conclusion and the reflection on the error."""

    kind = models.CharField(max_length=8, choices=EntryKind.choices)
    status = models.CharField(max_length=8, choices=EntryStatus.choices, default="active")
    source = models.CharField(max_length=16, choices=EntrySource.choices)
    # "review:12", "rating:7": one entry per review or rating, however often its task runs.
    source_ref = models.CharField(max_length=40)
    consultation_ref = models.PositiveIntegerField(null=True, blank=True)
    # The case (dossier) and the person whose judgement it records: a pattern for evolution
    # needs distinct cases and distinct reviewers, not one case or one reviewer many times.
    case_ref = models.PositiveIntegerField(null=True, blank=True)
    judged_by_ref = models.PositiveIntegerField(null=True, blank=True)
    cancer_type = models.CharField(max_length=32)
    case_summary = models.TextField()
    question = models.TextField(blank=True)
    # CorrectKB: the final plan; ChainKB: the correct plan, as the team amended or decided it.
    plan = models.TextField()
    key_reasoning = models.TextField(blank=True)  # CorrectKB
    initial_hypothesis = models.TextField(blank=True)  # ChainKB
    analysis = models.TextField(blank=True)
    final_conclusion = models.TextField(blank=True)
    error_reflection = models.TextField(blank=True)
    # What the correction was about, as data: the patterns evolution proposals are drawn from
    # ({"removed": [modality, ...], "added": [...], "safety": bool, "reason": "..."}).
    signals = models.JSONField(default=dict, blank=True)
    written_by = models.CharField(max_length=120, default="template")  # or "llm:<model>"
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_provider = models.CharField(max_length=120, blank=True)
    # Cache-and-prune bookkeeping: how often it was recalled, and how often a plan it informed
    # was then accepted (it helped).
    times_used = models.PositiveIntegerField(default=0)
    times_helped = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    retired_reason = models.CharField(max_length=300, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "source_ref"], name="one_entry_per_source"),
            models.CheckConstraint(
                condition=Q(kind="correct") | ~Q(error_reflection=""),
                name="chain_entry_reflects_on_its_error",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "cancer_type"]),
            HnswIndex(
                name="experience_hnsw_cosine",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.cancer_type}, {self.status})"

    @property
    def label(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"

    @property
    def lesson(self) -> str:
        """What a board member reads of it: the plan, and why it was right or wrong."""
        if self.kind == EntryKind.CORRECT:
            return f"Accepted: {self.plan}" + (
                f" Key reasoning: {self.key_reasoning}" if self.key_reasoning else ""
            )
        return f"Corrected to: {self.plan} Reflection: {self.error_reflection}"

    @property
    def shared_lesson(self) -> str:
        """What a board recalls of it for another patient, possibly of another team: the plan
        and what the correction changed, as data. The reviewer's free-text reason, the key
        reasoning and the written reflection may name the patient or their circumstances, so
        they stay on the administrator's page and never travel into another case's plan."""
        if self.kind == EntryKind.CORRECT:
            return f"Accepted: {self.plan}"
        signals = self.signals or {}
        removed = ", ".join(str(m) for m in signals.get("removed") or []) or "nothing"
        added = ", ".join(str(m) for m in signals.get("added") or []) or "nothing"
        text = f"Corrected to: {self.plan} Taken out: {removed}. Put in: {added}."
        if signals.get("safety"):
            text += " The correction concerned safety."
        return text

    def embedding_text(self) -> str:
        return f"{self.cancer_type} {self.case_summary} {self.question}"


class ExperienceUse(models.Model):
    """An entry recalled by a consultation (its plan lists it as a past case that informed it).
    ``helped`` is set when that plan is later accepted."""

    entry = models.ForeignKey(ExperienceEntry, on_delete=models.CASCADE, related_name="uses")
    consultation_ref = models.PositiveIntegerField()
    similarity = models.FloatField()
    helped = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "consultation_ref"], name="one_use_per_consultation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.entry_id} used by consultation {self.consultation_ref}"


class VersionStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"  # waits for an administrator; changes nothing
    ACTIVE = "active", "Active"  # what new consultations use
    SUPERSEDED = "superseded", "Superseded"  # was active; a later approval replaced it
    REJECTED = "rejected", "Rejected"
    ROLLED_BACK = "rolled_back", "Rolled back"


class _Governed(models.Model):
    """A proposal that takes effect only once an administrator approves it."""

    number = models.PositiveIntegerField()
    status = models.CharField(
        max_length=12, choices=VersionStatus.choices, default=VersionStatus.PROPOSED
    )
    rationale = models.TextField()
    # The ChainKB entries the proposal was drawn from, and the pattern they share.
    based_on = models.JSONField(default=list, blank=True)
    pattern = models.CharField(max_length=200, blank=True)
    proposed_by = models.CharField(max_length=120, default="system")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.CharField(max_length=500, blank=True)
    # The version that was active when this one was approved: a rollback restores it.
    replaces = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    rolled_back_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )
    rolled_back_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class PromptVersion(_Governed):
    """A refinement of one prompt: the file's default (``consult/engine/prompts``) with this
    addendum appended. At most one active version per prompt; none means the file alone."""

    prompt = models.CharField(max_length=40)
    addendum = models.TextField()
    content_hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["prompt", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["prompt", "number"], name="one_prompt_version_number"),
            models.UniqueConstraint(
                fields=["prompt"],
                condition=Q(status="active"),
                name="one_active_prompt_version",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prompt} m{self.number} ({self.status})"

    @property
    def label(self) -> str:
        return f"m{self.number}:{self.content_hash[:12]}"


class WeightVersion(_Governed):
    """Offsets added to the consensus weights the engine derives for each case (consensus.py),
    one small step per proposal and never beyond the cap. None active: the engine's own."""

    offsets = models.JSONField()  # role -> offset, cumulative over the versions before it

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["number"], name="one_weight_version_number"),
            models.UniqueConstraint(
                fields=["status"],
                condition=Q(status="active"),
                name="one_active_weight_version",
            ),
        ]

    def __str__(self) -> str:
        return f"weights w{self.number} ({self.status})"

    @property
    def label(self) -> str:
        return f"w{self.number}"


class PruneRun(models.Model):
    """One pass of cache-and-prune, with what it did: the admin page's figures."""

    ran_at = models.DateTimeField(auto_now_add=True)
    examined = models.PositiveIntegerField(default=0)
    embedded = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0)
    stale = models.PositiveIntegerField(default=0)
    over_capacity = models.PositiveIntegerField(default=0)
    kept_helped = models.PositiveIntegerField(default=0)
    active_after = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"prune run {self.pk} at {self.ran_at:%Y-%m-%d %H:%M}"
