"""Reads of the consult app. Every lookup checks that the user may see the object."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import Http404
from django.utils import timezone

from consult.journal import lease
from consult.models import (
    Consultation,
    ConsultationStatus,
    DossierSnapshot,
    DossierStatus,
    FhirImport,
    LesionDossier,
    Patient,
)
from knowledge.cases import Case
from mdtboard.accounts.models import Team
from mdtboard.accounts.roles import Role, has_role, is_admin
from mdtboard.audit.hashing import payload_hash


def _require_clinical_role(user: Any) -> None:
    # Raters judge blinded packets and curators the knowledge base: neither opens dossiers.
    if not has_role(user, Role.CLINICIAN, Role.ADMIN):
        raise PermissionDenied


def teams_for(*, user: Any) -> QuerySet[Team]:
    if is_admin(user):
        return Team.objects.all()
    return Team.objects.filter(members=user)


def patient_list(*, user: Any, cancer_type: str = "") -> QuerySet[Patient]:
    _require_clinical_role(user)
    patients = Patient.objects.filter(team__in=teams_for(user=user)).select_related("team")
    if cancer_type:
        patients = patients.filter(dossiers__cancer_type=cancer_type).distinct()
    return patients.annotate(dossier_count=Count("dossiers")).order_by("team__name", "pseudonym")


def patient_get(*, user: Any, pk: int) -> Patient:
    """The patient if the user's teams own it (clinicians and admins only); 404 otherwise."""
    _require_clinical_role(user)
    try:
        return (
            Patient.objects.select_related("team").filter(team__in=teams_for(user=user)).get(pk=pk)
        )
    except Patient.DoesNotExist as exc:
        raise Http404("No such patient") from exc


def dossier_list(
    *,
    user: Any,
    cancer_type: str = "",
    status: str = "",
    updated_from: date | None = None,
    updated_to: date | None = None,
    patient_id: int | None = None,
) -> QuerySet[LesionDossier]:
    _require_clinical_role(user)
    dossiers = LesionDossier.objects.filter(patient__team__in=teams_for(user=user))
    if cancer_type:
        dossiers = dossiers.filter(cancer_type=cancer_type)
    if status:
        dossiers = dossiers.filter(status=status)
    if updated_from:
        dossiers = dossiers.filter(updated_at__date__gte=updated_from)
    if updated_to:
        dossiers = dossiers.filter(updated_at__date__lte=updated_to)
    if patient_id:
        dossiers = dossiers.filter(patient_id=patient_id)
    return dossiers.select_related("patient", "patient__team").order_by("-updated_at")


def dossier_get(*, user: Any, pk: int) -> LesionDossier:
    """The dossier if the user's teams own it; 404 otherwise, so its existence is not leaked."""
    _require_clinical_role(user)
    try:
        return (
            LesionDossier.objects.select_related("patient", "patient__team")
            .filter(patient__team__in=teams_for(user=user))
            .get(pk=pk)
        )
    except LesionDossier.DoesNotExist as exc:
        raise Http404("No such dossier") from exc


def dossier_frozen_snapshot(*, dossier: LesionDossier) -> DossierSnapshot | None:
    """The snapshot whose frozen facts describe the dossier as it stands: its latest, when the
    dossier is submitted and unchanged since. None for a draft (its facts are not frozen yet)."""
    if dossier.status != DossierStatus.SUBMITTED:
        return None
    latest = dossier.snapshots.order_by("-number").first()
    if latest is None or latest.content_hash != payload_hash(dossier.data):
        return None
    return latest


def dossier_fhir_import(*, dossier: LesionDossier) -> FhirImport | None:
    """Where the dossier's values came from, if it was imported from a FHIR record (the caller
    has already been allowed to see the dossier)."""
    return FhirImport.objects.select_related("imported_by").filter(dossier=dossier).first()


def consultation_get(*, user: Any, pk: int) -> Consultation:
    """The consultation if the user's teams own its patient (admins see all); 404 otherwise."""
    _require_clinical_role(user)
    try:
        return (
            Consultation.objects.select_related(
                "dossier", "dossier__patient", "dossier__patient__team", "snapshot", "created_by"
            )
            .filter(dossier__patient__team__in=teams_for(user=user))
            .get(pk=pk)
        )
    except Consultation.DoesNotExist as exc:
        raise Http404("No such consultation") from exc


def consultation_can_watch(*, user: Any, consultation_id: int) -> bool:
    """The WebSocket's check: the same rule as the board page, without raising."""
    try:
        consultation_get(user=user, pk=consultation_id)
    except (Http404, PermissionDenied):
        return False
    return True


def consultation_can_cancel(*, user: Any, consultation_id: int) -> bool:
    """Only the clinician who started it (or an administrator) stops a consultation."""
    started_by = (
        Consultation.objects.filter(pk=consultation_id)
        .values_list("created_by_id", flat=True)
        .first()
    )
    return is_admin(user) or (started_by is not None and started_by == user.pk)


def consultation_worker_silence(
    *, consultation: Consultation, now: datetime | None = None
) -> int | None:
    """Seconds since any worker was last heard from about this consultation, if that is long
    enough to mean none is working on it: a running one whose lease lapsed, a queued one that
    nobody picked up; None otherwise (finished, or a worker is on it)."""
    now = now or timezone.now()
    if consultation.status == ConsultationStatus.RUNNING:
        if consultation.lease_until is None:
            heard = consultation.started_at or consultation.created_at
        else:
            heard = consultation.lease_until - lease.LEASE  # the last renewal
        stale_after = lease.LEASE_STALE_AFTER
    elif consultation.status == ConsultationStatus.QUEUED:
        heard, stale_after = consultation.created_at, lease.QUEUED_STALE_AFTER
    else:
        return None
    silence = now - heard
    return int(silence.total_seconds()) if silence >= stale_after else None


def consultations_for_dossier(*, dossier: LesionDossier) -> QuerySet[Consultation]:
    return dossier.consultations.select_related("created_by").order_by("-created_at")


class DossierCases:
    """The dossiers a user may open, for the curator pages' retrieval diagnostics
    (registered with knowledge.cases when the app starts)."""

    def choices(self, *, user: Any) -> list[tuple[int, str]]:
        return [
            (d.pk, f"{d.case_id} – {d.patient.pseudonym} ({d.patient.team.name})")
            for d in dossier_list(user=user)[:200]
        ]

    def get(self, *, user: Any, pk: int) -> Case:
        dossier = dossier_get(user=user, pk=pk)
        return Case(case_id=dossier.case_id, cancer_type=dossier.cancer_type, data=dossier.data)
