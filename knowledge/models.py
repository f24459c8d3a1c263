"""Guideline sources, atomic recommendation units, their immutable versions and embeddings."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from clinical.vocab import UnitCancerType, UnitKind

EMBEDDING_DIM = 384  # all-MiniLM-L6-v2; an endpoint model must be configured to this size


class GuidelineSource(models.Model):
    key = models.CharField(max_length=80, unique=True)  # bundle.KEY_PATTERN (dots allowed)
    organisation = models.CharField(max_length=120)
    title = models.CharField(max_length=300)
    version = models.CharField(max_length=40)
    year = models.PositiveSmallIntegerField()
    jurisdiction = models.CharField(max_length=40)
    url = models.URLField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["organisation", "-year"]

    def __str__(self) -> str:
        return f"{self.organisation} {self.title} ({self.version})"


class KnowledgeUnit(models.Model):
    """The identity of an atomic recommendation; its content lives in its versions."""

    key = models.CharField(max_length=80, unique=True)
    kind = models.CharField(max_length=32, choices=[(k.value, k.value) for k in UnitKind])
    cancer_type = models.CharField(
        max_length=32, choices=[(c.value, c.value) for c in UnitCancerType]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["key"]
        indexes = [models.Index(fields=["cancer_type", "kind"])]

    def __str__(self) -> str:
        return self.key


class VersionStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    IN_REVIEW = "in_review", "In review"
    PUBLISHED = "published", "Published"
    RETIRED = "retired", "Retired"


class UnitVersion(models.Model):
    """One immutable state of a unit. Only ``status`` and the review columns (reviewer, dates,
    hot-fix flag) ever change, and a database trigger enforces it: content, hash and author
    are fixed at insert, and a published version can only be retired."""

    # The only columns that ever change; the app's database role may update these and no
    # others, and delete nothing (mdtboard.core.dbroles), beneath the trigger.
    MUTABLE_FIELDS = (
        "status",
        "submitted_at",
        "reviewed_by",
        "published_at",
        "retired_at",
        "hotfix",
        "hotfix_reason",
    )

    unit = models.ForeignKey(KnowledgeUnit, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    source = models.ForeignKey(GuidelineSource, on_delete=models.PROTECT, related_name="+")
    content = models.JSONField()  # bundle.unit_content(): everything but the key
    content_hash = models.CharField(max_length=64)
    diff = models.TextField(blank=True)  # unified diff against the previous version
    title = models.CharField(max_length=200)
    text = models.TextField()
    anchor = models.CharField(max_length=200)
    grade_system = models.CharField(max_length=40)
    grade_native = models.CharField(max_length=80)
    grade_ordinal = models.PositiveSmallIntegerField()
    search = SearchVectorField()
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(
        max_length=16, choices=VersionStatus.choices, default=VersionStatus.DRAFT
    )
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    published_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    hotfix = models.BooleanField(default=False)
    hotfix_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["unit", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "number"], name="unitversion_number_per_unit"),
            # Retrieval must never see two live versions of one unit.
            models.UniqueConstraint(
                fields=["unit"], condition=Q(status="published"), name="one_published_per_unit"
            ),
        ]
        indexes = [
            GinIndex(fields=["search"], name="unitversion_search_gin"),
            models.Index(fields=["status"]),
        ]

    def __str__(self) -> str:
        return f"{self.unit.key} v{self.number} ({self.status})"

    @property
    def provenance(self) -> str:
        return f"{self.unit.key}@v{self.number}:{self.content_hash[:12]}"


class UnitEmbedding(models.Model):
    """The vector of one version's text, by one provider. Written by the worker on publish."""

    version = models.OneToOneField(UnitVersion, on_delete=models.CASCADE, related_name="embedding")
    provider = models.CharField(max_length=120)
    embedding = VectorField(dimensions=EMBEDDING_DIM)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            HnswIndex(
                name="unitembedding_hnsw_cosine",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]

    def __str__(self) -> str:
        return f"embedding of {self.version_id} ({self.provider})"


class ApprovalKind(models.TextChoices):
    PUBLISH = "publish", "Publish a version that weakens a safety rule"
    RETIRE = "retire", "Retire"
    HOTFIX = "hotfix", "Second review of a hot-fix"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REFUSED = "refused", "Refused"
    WITHDRAWN = "withdrawn", "Withdrawn"
    SUPERSEDED = "superseded", "Superseded"


class ApprovalRequest(models.Model):
    """A change to the knowledge base that waits for a second person (four eyes): a
    retirement, or the publication of a version that weakens a published safety rule, takes
    effect only when someone other than who asked approves it; a hot-fix, live at once, waits
    for a second person to confirm it afterwards. ``reasons`` are the classifier's words for
    what the change does (knowledge.safety_change). Only the decision columns ever change,
    once, and a database trigger enforces it."""

    MUTABLE_FIELDS = ("status", "decided_by", "decided_at", "decision_note")

    kind = models.CharField(max_length=16, choices=ApprovalKind.choices)
    unit = models.ForeignKey(KnowledgeUnit, on_delete=models.PROTECT, related_name="approvals")
    version = models.ForeignKey(UnitVersion, on_delete=models.PROTECT, related_name="approvals")
    requested_by = models.ForeignKey(  # None: the system (the seed load run by an operator)
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField(blank=True)
    reasons = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "kind"],
                condition=Q(status="pending"),
                name="one_pending_approval_per_version_and_kind",
            )
        ]
        indexes = [models.Index(fields=["status", "kind"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.version} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING
