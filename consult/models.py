"""Patients (pseudonymised) and lesion dossiers with their frozen submission snapshots."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from clinical.frozen import FrozenFacts
from clinical.vocab import CANCER_TYPE_LABELS, CancerType
from mdtboard.accounts.models import Team

CANCER_TYPE_CHOICES = [(c.value, CANCER_TYPE_LABELS[c]) for c in CancerType]


class Patient(models.Model):
    """A pseudonymised patient: no names, no record numbers, owned by one team."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="patients")
    pseudonym = models.CharField(max_length=64)
    age_years = models.PositiveSmallIntegerField(null=True, blank=True)
    sex = models.CharField(max_length=8, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["team", "pseudonym"], name="patient_pseudonym_per_team")
        ]

    def __str__(self) -> str:
        return self.pseudonym


class DossierStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    SUBMITTED = "submitted", "Submitted"


class LesionDossier(models.Model):
    """One index lesion at the moment an MDT question is asked.

    ``data`` is the whole ``mdtboard.case/1`` document in canonical form (every field present,
    ``null`` = not available), validated against the field catalog in ``consult.casefile``.
    The columns beside it are copies for filtering and listing.
    """

    patient = models.ForeignKey(Patient, on_delete=models.PROTECT, related_name="dossiers")
    case_id = models.CharField(max_length=64)
    cancer_type = models.CharField(max_length=32, choices=CANCER_TYPE_CHOICES)
    status = models.CharField(
        max_length=16, choices=DossierStatus.choices, default=DossierStatus.DRAFT
    )
    data = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["cancer_type", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["patient", "case_id"], name="dossier_case_id_per_patient"
            )
        ]

    def __str__(self) -> str:
        return f"{self.case_id} ({self.get_cancer_type_display()})"

    @property
    def question(self) -> str:
        return str(self.data.get("question") or "")


class FactsOrigin(models.TextChoices):
    SUBMISSION = "submission", "computed when the dossier was submitted"
    RECOMPUTE = "recompute", "recomputed at a clinician's request"
    BACKFILL = "backfill", "computed at an upgrade (the snapshot predates frozen facts)"


class DossierSnapshot(models.Model):
    """The dossier exactly as submitted, with the facts derived from it then. Immutable (the
    database refuses UPDATE and DELETE); consultations reference a snapshot, so a later edit
    never changes what was deliberated, and a later calculator never changes what it shows.

    ``facts`` is the ``mdtboard.facts/1`` document of ``clinical.frozen`` (the calculators'
    results, every fact a rule reads, the version of the code that computed them); every page,
    report and export reads it (``frozen``) instead of computing the facts again."""

    dossier = models.ForeignKey(LesionDossier, on_delete=models.PROTECT, related_name="snapshots")
    number = models.PositiveIntegerField()
    data = models.JSONField()
    content_hash = models.CharField(max_length=64, db_index=True)
    facts = models.JSONField(default=dict)
    facts_version = models.CharField(max_length=64, blank=True)
    facts_hash = models.CharField(max_length=64, blank=True)
    facts_origin = models.CharField(
        max_length=16, choices=FactsOrigin.choices, default=FactsOrigin.SUBMISSION
    )
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dossier", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["dossier", "number"], name="snapshot_number_per_dossier"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dossier.case_id} v{self.number} ({self.content_hash[:12]})"

    @property
    def frozen(self) -> FrozenFacts:
        """The facts as computed when the snapshot was made."""
        return FrozenFacts.from_json(self.facts)


# --- lesions over time --------------------------------------------------------------------


class LesionKind(models.TextChoices):
    PRIMARY = "primary", "primary tumour"
    NODAL = "nodal", "lymph node"
    METASTASIS = "metastasis", "metastasis"


class Lesion(models.Model):
    """One lesion of a patient, followed across dossiers by its id in the case files ("L1").
    Recorded from the dossiers' ``lesions[]`` (FORMAT.md §4) when a dossier is saved."""

    patient = models.ForeignKey(Patient, on_delete=models.CASCADE, related_name="lesions")
    lesion_id = models.CharField(max_length=40)
    site = models.CharField(max_length=200, blank=True)
    laterality = models.CharField(max_length=16, blank=True)
    kind = models.CharField(max_length=16, choices=LesionKind.choices, blank=True)
    target = models.BooleanField(default=False)
    is_index = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["patient", "lesion_id"]
        constraints = [
            models.UniqueConstraint(fields=["patient", "lesion_id"], name="lesion_id_per_patient")
        ]

    def __str__(self) -> str:
        return f"{self.lesion_id} {self.site}".strip()


class LesionMeasurement(models.Model):
    """One reading of a lesion on one date, in millimetres (and a PET Deauville score)."""

    lesion = models.ForeignKey(Lesion, on_delete=models.CASCADE, related_name="measurements")
    date = models.DateField()
    modality = models.CharField(max_length=16, blank=True)
    longest_diameter_mm = models.FloatField(null=True, blank=True)
    short_axis_mm = models.FloatField(null=True, blank=True)
    viable_enhancing_mm = models.FloatField(null=True, blank=True)
    deauville = models.PositiveSmallIntegerField(null=True, blank=True)
    # the dossier whose case file recorded it (kept when that dossier is edited again)
    dossier = models.ForeignKey(
        LesionDossier, on_delete=models.SET_NULL, null=True, related_name="measurements"
    )

    class Meta:
        ordering = ["lesion", "date"]
        constraints = [
            models.UniqueConstraint(fields=["lesion", "date"], name="one_measurement_per_date"),
            models.CheckConstraint(
                condition=models.Q(deauville__isnull=True)
                | models.Q(deauville__gte=1, deauville__lte=5),
                name="deauville_1_to_5",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.lesion.lesion_id} on {self.date.isoformat()}"


# --- consultations ------------------------------------------------------------------------


class ConsultationStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class EngineChoice(models.TextChoices):
    GUIDELINE = "guideline", "Guideline engine (deterministic, offline)"
    LLM = "llm", "LLM agents (guideline engine as fallback)"


class Consultation(models.Model):
    """One deliberation on one frozen dossier snapshot."""

    snapshot = models.ForeignKey(
        DossierSnapshot, on_delete=models.PROTECT, related_name="consultations"
    )
    dossier = models.ForeignKey(
        LesionDossier, on_delete=models.PROTECT, related_name="consultations"
    )
    status = models.CharField(
        max_length=16, choices=ConsultationStatus.choices, default=ConsultationStatus.QUEUED
    )
    engine = models.CharField(max_length=16, choices=EngineChoice.choices)
    engine_label = models.CharField(max_length=120, blank=True)
    config = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    last_seq = models.PositiveIntegerField(default=0)
    # A run holds a lease that every committed step renews; a worker that dies lets it lapse,
    # and the next worker to start resumes the consultation.
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    prompt_versions = models.JSONField(default=dict, blank=True)
    kb_versions = models.JSONField(default=list, blank=True)
    tokens_prompt = models.PositiveIntegerField(default=0)
    tokens_completion = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    error = models.CharField(max_length=500, blank=True)
    # What the status alone would hide: "20 of 57 turns answered by the guideline engine:
    # token budget reached" (blank when the LLM answered every turn it was asked).
    status_note = models.CharField(max_length=300, blank=True)
    # The "Start consultation" form that asked for it: one form, one consultation, however
    # often it is sent (each run of an LLM costs tokens).
    idempotency_key = models.UUIDField(null=True, blank=True, unique=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return f"consultation {self.pk} on {self.dossier.case_id} ({self.status})"

    @property
    def status_text(self) -> str:
        """ "completed — 20 of 57 turns answered by the guideline engine: token budget
        reached": the status with what a clinician must know about it."""
        return f"{self.status} — {self.status_note}" if self.status_note else str(self.status)

    @property
    def is_finished(self) -> bool:
        return self.status in (
            ConsultationStatus.COMPLETED,
            ConsultationStatus.FAILED,
            ConsultationStatus.CANCELLED,
        )


class AgentMessage(models.Model):
    """One completed step of the protocol (a role's turn, a review, a vote, the gate, ...):
    its structured result is also the journal a resumed run reads instead of redoing it."""

    consultation = models.ForeignKey(
        Consultation, on_delete=models.CASCADE, related_name="messages"
    )
    step_key = models.CharField(max_length=120)
    round = models.PositiveSmallIntegerField(default=0)
    role = models.CharField(max_length=40, blank=True)
    kind = models.CharField(max_length=40)
    payload = models.JSONField()
    confidence = models.FloatField(null=True, blank=True)
    evidence_refs = models.JSONField(default=list, blank=True)
    tokens_prompt = models.PositiveIntegerField(default=0)
    tokens_completion = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0)
    cost_usd = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    model_name = models.CharField(max_length=120, blank=True)
    fallback = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["consultation", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["consultation", "step_key"], name="one_message_per_step"
            )
        ]

    def __str__(self) -> str:
        return f"{self.consultation_id}:{self.step_key}"


class ConsultationEvent(models.Model):
    """Everything that happened, in order, as the board shows it; replayed to late joiners."""

    consultation = models.ForeignKey(Consultation, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    role = models.CharField(max_length=40, blank=True)
    round = models.PositiveSmallIntegerField(default=0)
    payload = models.JSONField()
    message = models.ForeignKey(
        AgentMessage, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["consultation", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["consultation", "seq"], name="one_event_per_seq")
        ]

    def __str__(self) -> str:
        return f"{self.consultation_id}#{self.seq} {self.kind}"


class Round(models.Model):
    consultation = models.ForeignKey(Consultation, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveSmallIntegerField()
    residual = models.JSONField(default=dict, blank=True)
    agreement = models.FloatField(null=True, blank=True)
    stopped = models.BooleanField(default=False)

    class Meta:
        ordering = ["consultation", "number"]
        constraints = [
            models.UniqueConstraint(fields=["consultation", "number"], name="one_round_number")
        ]

    def __str__(self) -> str:
        return f"{self.consultation_id} round {self.number}"


class EvidenceNode(models.Model):
    class Kind(models.TextChoices):
        QUESTION = "question"
        HYPOTHESIS = "hypothesis"
        ANALYSIS = "analysis"
        EVIDENCE = "evidence"
        CRITIQUE = "critique"

    class Status(models.TextChoices):
        PROPOSED = "proposed"
        SUPPORTED = "supported"
        CONTESTED = "contested"
        REJECTED = "rejected"

    consultation = models.ForeignKey(
        Consultation, on_delete=models.CASCADE, related_name="evidence_nodes"
    )
    node_id = models.CharField(max_length=120)
    parent_node_id = models.CharField(max_length=120, blank=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    text = models.TextField()
    refs = models.JSONField(default=list, blank=True)
    author_role = models.CharField(max_length=40, blank=True)
    round = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED)

    class Meta:
        ordering = ["consultation", "id"]
        constraints = [
            models.UniqueConstraint(fields=["consultation", "node_id"], name="one_node_id")
        ]

    def __str__(self) -> str:
        return self.node_id


class Conflict(models.Model):
    consultation = models.ForeignKey(
        Consultation, on_delete=models.CASCADE, related_name="conflicts"
    )
    round = models.PositiveSmallIntegerField(default=0)
    between = models.JSONField(default=list)
    kind = models.CharField(max_length=20)
    score = models.FloatField(default=0)
    resolution = models.TextField()

    def __str__(self) -> str:
        return f"{self.kind} conflict {self.between}"


class Plan(models.Model):
    """The ``mdtboard.plan/1`` document of a finished consultation. Immutable and hashed."""

    consultation = models.OneToOneField(Consultation, on_delete=models.PROTECT, related_name="plan")
    payload = models.JSONField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"plan of consultation {self.consultation_id}"


class FhirImportSource(models.TextChoices):
    UPLOAD = "upload", "uploaded bundle"
    SERVER = "server", "FHIR server"
    COMMAND = "command", "command line"


class FhirImport(models.Model):
    """Where each value of a dossier imported from a FHIR Bundle came from: the resource, code,
    system and date of every field, the values not chosen, and what was not imported, as the
    review screen showed them before the dossier was saved."""

    dossier = models.OneToOneField(
        LesionDossier, on_delete=models.PROTECT, related_name="fhir_import"
    )
    source = models.CharField(max_length=16, choices=FhirImportSource.choices)
    filename = models.CharField(max_length=255, blank=True)
    bundle_sha256 = models.CharField(max_length=64)
    as_of = models.DateField(help_text="The date of the MDT question: ages are computed on it.")
    provenance = models.JSONField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"FHIR import of dossier {self.dossier_id}"
