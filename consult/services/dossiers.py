"""Patients and lesion dossiers: create, edit, submit (freeze), import and export case files."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from clinical.frozen import FrozenFacts, changed_facts, freeze
from consult.casefile.fields import FORMAT_ID
from consult.casefile.validate import (
    MAX_BYTES,
    CaseError,
    case_to_canonical,
    case_warnings,
    parse_case_bytes,
    validate_case,
)
from consult.models import (
    DossierSnapshot,
    DossierStatus,
    FactsOrigin,
    LesionDossier,
    Patient,
)
from consult.services.lesions import lesions_record
from mdtboard.accounts.models import Team, User
from mdtboard.accounts.roles import is_admin
from mdtboard.audit.hashing import payload_hash as content_hash
from mdtboard.audit.services import audit_record


class DossierError(Exception):
    """A change that cannot be made; ``errors`` say why, field by field."""

    def __init__(self, message: str, errors: list[CaseError] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


NOT_A_MEMBER = "You can only file cases for a team you belong to."
CHANGED_MEANWHILE = (
    "Someone saved this dossier after you opened this page, so your changes were not saved "
    "(they are still in the form below). Open the section again to see the current values."
)
HAS_ERRORS = "The dossier has errors; correct them before saving."
CASE_ID_TAKEN = "This patient already has a dossier with case id {case_id!r}."
NOT_IMPORTED_WITH_OTHERS = (
    "This file is correct, but nothing was imported: {count} other {files} errors, and the "
    "files of one import are saved together or not at all. Correct the errors and import all "
    "the files again."
)


def _check_member(actor: User, team: Team) -> None:
    # An administrator sees every team's cases (selectors.teams_for), so may file one for any
    # team: a department's cases imported centrally, or a case for a team being set up.
    if not is_admin(actor) and not actor.teams.filter(pk=team.pk).exists():
        raise DossierError(NOT_A_MEMBER)


def _patient_for(*, team: Team, data: dict[str, Any], actor: User) -> Patient:
    details = data["patient"]
    patient, created = Patient.objects.get_or_create(
        team=team,
        pseudonym=details["pseudonym"],
        defaults={
            "age_years": details["age_years"],
            "sex": details["sex"] or "",
            "created_by": actor,
        },
    )
    if created:
        audit_record(action="patient.create", actor=actor, obj=patient, payload={"team": team.pk})
    else:
        # The most recent dossier is the best knowledge of age and sex; null keeps what we had.
        patient.age_years = (
            details["age_years"] if details["age_years"] is not None else patient.age_years
        )
        patient.sex = details["sex"] or patient.sex
        patient.save(update_fields=["age_years", "sex", "updated_at"])
    return patient


def _validated(data: Any, *, filename: str) -> dict[str, Any]:
    errors = validate_case(data, filename=filename)
    if errors:
        raise DossierError(HAS_ERRORS, errors)
    return case_to_canonical(data)


@transaction.atomic
def dossier_create(
    *, actor: User, team: Team, data: dict[str, Any], source: str = "form"
) -> LesionDossier:
    """Create a draft dossier (and its patient, by pseudonym within the team)."""
    _check_member(actor, team)
    canonical = _validated(data, filename=source)
    if not canonical["patient"]["pseudonym"]:
        raise DossierError(
            HAS_ERRORS,
            [CaseError(source, "$.patient.pseudonym", "A pseudonym is needed to file the case.")],
        )
    patient = _patient_for(team=team, data=canonical, actor=actor)
    if patient.dossiers.filter(case_id=canonical["case_id"]).exists():
        raise DossierError(CASE_ID_TAKEN.format(case_id=canonical["case_id"]))
    try:
        with transaction.atomic():
            dossier = LesionDossier.objects.create(
                patient=patient,
                case_id=canonical["case_id"],
                cancer_type=canonical["cancer_type"],
                data=canonical,
                created_by=actor,
            )
    except IntegrityError as exc:  # a concurrent import of the same case id
        raise DossierError(CASE_ID_TAKEN.format(case_id=canonical["case_id"])) from exc
    lesions_record(dossier=dossier)
    audit_record(
        action=f"dossier.{'import' if source != 'form' else 'create'}",
        actor=actor,
        obj=dossier,
        payload={
            "patient": patient.pk,
            "cancer_type": dossier.cancer_type,
            "hash": content_hash(canonical),
        },
    )
    return dossier


def dossier_version(dossier: LesionDossier) -> str:
    """A fingerprint of the dossier's content, for an edit form to say what it was based on."""
    return content_hash(dossier.data)


@transaction.atomic
def dossier_update(
    *, actor: User, dossier: LesionDossier, data: dict[str, Any], base: str | None = None
) -> LesionDossier:
    """Replace the dossier's draft content. A submitted dossier goes back to draft: its
    snapshot stays as it was, and consultations keep referencing that snapshot. With ``base``
    (the ``dossier_version`` an edit form was filled in against), a dossier that changed in
    the meantime is refused rather than silently overwritten."""
    dossier = LesionDossier.objects.select_for_update().get(pk=dossier.pk)
    if base is not None and base != dossier_version(dossier):
        raise DossierError(CHANGED_MEANWHILE, [])
    canonical = _validated(data, filename=dossier.case_id)
    if canonical["case_id"] != dossier.case_id:
        raise DossierError(
            HAS_ERRORS,
            [CaseError(dossier.case_id, "$.case_id", "The case id cannot change once filed.")],
        )
    if canonical["patient"]["pseudonym"] != dossier.patient.pseudonym:
        raise DossierError(
            HAS_ERRORS,
            [
                CaseError(
                    dossier.case_id,
                    "$.patient.pseudonym",
                    "The pseudonym links the dossier to its patient and cannot change here.",
                )
            ],
        )
    changed = sorted(
        f"{section}.{key}"
        for section, values in canonical.items()
        if isinstance(values, dict)
        for key, value in values.items()
        if (dossier.data.get(section) or {}).get(key) != value
    ) + sorted(
        k for k, v in canonical.items() if not isinstance(v, dict) and dossier.data.get(k) != v
    )
    if not changed:
        return dossier
    dossier.data = canonical
    dossier.cancer_type = canonical["cancer_type"]
    dossier.status = DossierStatus.DRAFT
    dossier.save()
    _patient_for(team=dossier.patient.team, data=canonical, actor=actor)
    lesions_record(dossier=dossier)
    # Field names, never values: the audit log holds no clinical data.
    audit_record(
        action="dossier.edit",
        actor=actor,
        obj=dossier,
        payload={"fields": changed, "hash": content_hash(canonical)},
    )
    return dossier


def _snapshot_create(
    *,
    dossier: LesionDossier,
    data: dict[str, Any],
    digest: str,
    actor: User,
    number: int,
    origin: FactsOrigin,
) -> DossierSnapshot:
    """A new snapshot of ``data`` with its facts computed now, once: every later reading
    (pages, report, exports, the engine) reads them from the snapshot."""
    document = freeze(data).to_json()
    return DossierSnapshot.objects.create(
        dossier=dossier,
        number=number,
        data=data,
        content_hash=digest,
        facts=document,
        facts_version=document["version"],
        facts_hash=content_hash(document),
        facts_origin=origin,
        submitted_by=actor,
    )


@transaction.atomic
def dossier_submit(*, actor: User, dossier: LesionDossier) -> DossierSnapshot:
    """Freeze the dossier as an immutable, hashed snapshot for consultations to reference,
    with the facts the calculators derive from it now."""
    dossier = LesionDossier.objects.select_for_update().get(pk=dossier.pk)
    errors = validate_case(dossier.data, filename=dossier.case_id)
    if errors:
        raise DossierError(HAS_ERRORS, errors)
    digest = content_hash(dossier.data)
    latest = dossier.snapshots.order_by("-number").first()
    if latest is not None and latest.content_hash == digest:
        # Nothing changed since the last submission: the same snapshot, and the same facts
        # (new calculators are applied only by an explicit recompute).
        snapshot = latest
    else:
        snapshot = _snapshot_create(
            dossier=dossier,
            data=dossier.data,
            digest=digest,
            actor=actor,
            number=(latest.number + 1) if latest else 1,
            origin=FactsOrigin.SUBMISSION,
        )
    dossier.status = DossierStatus.SUBMITTED
    dossier.submitted_at = timezone.now()
    dossier.save(update_fields=["status", "submitted_at", "updated_at"])
    audit_record(
        action="dossier.submit",
        actor=actor,
        obj=dossier,
        payload={"snapshot": snapshot.pk, "hash": digest, "facts_version": snapshot.facts_version},
    )
    return snapshot


FACTS_ALREADY_CURRENT = (
    "The facts of this snapshot were computed by the calculators in use now; recomputing them "
    "would change nothing."
)
NO_SNAPSHOT = "The dossier has not been submitted yet: there are no frozen facts to recompute."


@transaction.atomic
def snapshot_recompute(*, actor: User, dossier: LesionDossier) -> DossierSnapshot:
    """Compute the facts of the dossier's latest snapshot again with today's calculators, as a
    new snapshot of the same content (the old one, and every consultation on it, keep the facts
    they were made with). Audited with the names of the facts whose value changed."""
    _check_member(actor, dossier.patient.team)
    dossier = LesionDossier.objects.select_for_update().get(pk=dossier.pk)
    latest = dossier.snapshots.order_by("-number").first()
    if latest is None:
        raise DossierError(NO_SNAPSHOT)
    before = FrozenFacts.from_json(latest.facts) if latest.facts else None
    if before is not None and before.current:
        raise DossierError(FACTS_ALREADY_CURRENT)
    snapshot = _snapshot_create(
        dossier=dossier,
        data=latest.data,
        digest=latest.content_hash,
        actor=actor,
        number=latest.number + 1,
        origin=FactsOrigin.RECOMPUTE,
    )
    audit_record(
        action="dossier.recompute",
        actor=actor,
        obj=dossier,
        # Names of facts, never their values: the audit log holds no clinical data.
        payload={
            "from_snapshot": latest.pk,
            "snapshot": snapshot.pk,
            "hash": snapshot.content_hash,
            "from_facts_version": latest.facts_version,
            "facts_version": snapshot.facts_version,
            "facts_hash": snapshot.facts_hash,
            "changed": changed_facts(before, snapshot.frozen) if before else None,
        },
    )
    return snapshot


@dataclass
class ImportResult:
    filename: str
    dossier: LesionDossier | None = None
    errors: list[CaseError] = field(default_factory=list)
    warnings: list[CaseError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.dossier is not None


def case_import(*, actor: User, team: Team, raw: bytes, filename: str) -> ImportResult:
    """Import one ``mdtboard.case/1`` file. A file with any error imports nothing."""
    parsed = parse_case_bytes(raw, filename=filename)
    if not parsed.ok or parsed.data is None:
        return ImportResult(filename, errors=list(parsed.errors))
    try:
        dossier = dossier_create(actor=actor, team=team, data=parsed.data, source=filename)
    except DossierError as exc:
        errors = exc.errors or [CaseError(filename, "$", str(exc))]
        return ImportResult(filename, errors=[_named(e, filename) for e in errors])
    return ImportResult(filename, dossier=dossier, warnings=list(parsed.warnings))


# Uploads are streamed to disk by Django; never read more than this into memory.
UPLOAD_READ_LIMIT = 4 * MAX_BYTES


def case_import_upload(*, actor: User, team: Team, upload: Any) -> ImportResult:
    """Import an uploaded file, refusing oversized ones without reading them whole."""
    name = str(getattr(upload, "name", "") or "upload.json")
    size = int(getattr(upload, "size", 0) or 0)
    if size > UPLOAD_READ_LIMIT:
        return ImportResult(
            name,
            errors=[
                CaseError(
                    name,
                    "$",
                    f"The file is {size / (1024 * 1024):.1f} MiB; case files may be at most "
                    f"{MAX_BYTES // 1024} KiB.",
                )
            ],
        )
    return case_import(actor=actor, team=team, raw=upload.read(), filename=name)


def case_import_uploads(*, actor: User, team: Team, uploads: Sequence[Any]) -> list[ImportResult]:
    """Import several uploaded files together: all of them, or none if any has an error.

    A partial import is easy to miss in a long result list and awkward to repeat (the files
    that made it in are then refused as duplicates), so one bad file holds back the others.
    """
    with transaction.atomic():
        results = [case_import_upload(actor=actor, team=team, upload=upload) for upload in uploads]
        failed = sum(1 for result in results if not result.ok)
        if failed:
            transaction.set_rollback(True)
    if not failed:
        return results
    held_back = NOT_IMPORTED_WITH_OTHERS.format(
        count=failed, files="file has" if failed == 1 else "files have"
    )
    return [
        result
        if not result.ok
        else ImportResult(result.filename, errors=[CaseError(result.filename, "$", held_back)])
        for result in results
    ]


def _named(error: CaseError, filename: str) -> CaseError:
    return CaseError(filename, error.path, error.message, error.severity)


def dossier_export(*, actor: User, dossier: LesionDossier) -> dict[str, Any]:
    """The dossier as an ``mdtboard.case/1`` document, exactly as stored."""
    audit_record(
        action="dossier.export",
        actor=actor,
        obj=dossier,
        payload={"hash": content_hash(dossier.data)},
    )
    return dict(dossier.data)


def draft_case(*, cancer_type: str, pseudonym: str, question: str = "") -> dict[str, Any]:
    """A new, empty case document: every field "not available" until the clinician fills it."""
    stamp = timezone.localdate().strftime("%Y%m%d")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", pseudonym).strip("-._")[:40] or "case"
    return case_to_canonical(
        {
            "format": FORMAT_ID,
            "case_id": f"{slug}-{stamp}-{timezone.now().strftime('%H%M%S')}",
            "cancer_type": cancer_type,
            "question": question or None,
            "patient": {"pseudonym": pseudonym},
        }
    )


def dossier_warnings(dossier: LesionDossier) -> list[CaseError]:
    return case_warnings(dossier.data, filename=dossier.case_id)
