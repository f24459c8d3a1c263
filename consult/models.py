"""Patients (pseudonymised) and lesion dossiers with their frozen submission snapshots."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from mdtboard.accounts.models import Team


class CancerType(models.TextChoices):
    HCC = "hcc", "Hepatocellular carcinoma"
    LUNG_ADENOCARCINOMA = "lung_adenocarcinoma", "Lung adenocarcinoma"
    BREAST = "breast", "Breast cancer"
    LYMPHOMA = "lymphoma", "Lymphoma"
    OTHER = "other", "Other"


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
    cancer_type = models.CharField(max_length=32, choices=CancerType.choices)
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


class DossierSnapshot(models.Model):
    """The dossier exactly as submitted. Immutable (the database refuses UPDATE and DELETE);
    consultations reference a snapshot, so a later edit never changes what was deliberated."""

    dossier = models.ForeignKey(LesionDossier, on_delete=models.PROTECT, related_name="snapshots")
    number = models.PositiveIntegerField()
    data = models.JSONField()
    content_hash = models.CharField(max_length=64, db_index=True)
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
