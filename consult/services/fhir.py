"""FHIR R4 / mCODE: preview a Bundle, import it into a dossier after review, export a dossier
as an mCODE Bundle and a signed plan as a CarePlan (audited like the JSON exports)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils import timezone

from clinical.calculators import derive_all
from consult.casefile.validate import CaseError
from consult.fhir.export import dossier_bundle, plan_careplan
from consult.fhir.mapping import DEFAULT_QUESTION, FhirMapping, MappingError, map_bundle
from consult.fhir.parse import MAX_BYTES as MAX_BUNDLE_BYTES
from consult.fhir.parse import FhirError, looks_like_fhir, parse_bundle_bytes
from consult.models import Consultation, FhirImport, FhirImportSource, LesionDossier
from consult.review.selectors import review_state_get
from consult.services.dossiers import DossierError, ImportResult, dossier_create
from mdtboard.accounts.models import Team, User
from mdtboard.audit.hashing import payload_hash as content_hash
from mdtboard.audit.services import audit_record

# The review screen's signed state is good for this long; then the bundle is uploaded again.
PREVIEW_MAX_AGE_S = 2 * 3600
_SALT = "consult.fhir.preview"
PREVIEW_EXPIRED = (
    "This review has expired or was changed; upload the bundle again to review it afresh."
)


@dataclass
class FhirPreview:
    """What the review screen shows: the case, where each value came from, what was left out,
    what the board will still need; ``token`` carries it (signed) to the confirm step."""

    filename: str
    sha256: str
    as_of: date
    mapping: FhirMapping | None = None
    errors: list[FhirError] = field(default_factory=list)
    token: str = ""
    needs_data: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.mapping is not None and not self.errors


def fhir_pseudonym(*, patient_id: str | None, sha256: str) -> str:
    """A stable pseudonym for the record's patient: a keyed hash of the FHIR Patient id (the
    same patient imported again gets the same pseudonym), never the id itself."""
    basis = patient_id or sha256
    digest = hmac.new(
        settings.SECRET_KEY.encode("utf-8"), basis.encode("utf-8"), hashlib.sha256
    ).hexdigest()
    return f"FHIR-{digest[:10].upper()}"


def _needs_data(case: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Derived facts the board cannot compute from this case, with the fields it lacks."""
    out = []
    for name, fact in derive_all(case).items():
        if fact.value is None and fact.inputs_missing:
            out.append((name, list(dict.fromkeys(fact.inputs_missing))))
    return out


FHIR_ALONE = (
    "A FHIR Bundle is reviewed before anything is saved: import it on its own, without other files."
)


def upload_is_fhir(upload: Any) -> bool:
    """True for an uploaded file whose JSON names a FHIR resourceType (a case file never does)."""
    upload.seek(0)
    head = upload.read(65536)
    upload.seek(0)
    return looks_like_fhir(head if isinstance(head, bytes) else head.encode("utf-8"))


def fhir_upload_preview(*, upload: Any, as_of: date | None) -> FhirPreview:
    """The review of an uploaded bundle; an oversized file is refused without being read."""
    name = str(getattr(upload, "name", "") or "bundle.json")
    size = int(getattr(upload, "size", 0) or 0)
    if size > MAX_BUNDLE_BYTES:
        preview = FhirPreview(filename=name, sha256="", as_of=as_of or timezone.localdate())
        preview.errors = [
            FhirError(
                name,
                "Bundle",
                f"The file is {size / (1024 * 1024):.1f} MiB; FHIR bundles are limited to "
                f"{MAX_BUNDLE_BYTES // (1024 * 1024)} MiB.",
            )
        ]
        return preview
    return bundle_preview(raw=upload.read(), filename=name, as_of=as_of)


def bundle_preview(
    *, raw: bytes, filename: str, as_of: date | None = None, question: str | None = None
) -> FhirPreview:
    """Read and map a bundle without saving anything."""
    as_of = as_of or timezone.localdate()
    sha = hashlib.sha256(raw).hexdigest()
    preview = FhirPreview(filename=filename, sha256=sha, as_of=as_of)
    parsed = parse_bundle_bytes(raw, filename=filename)
    if not parsed.ok:
        preview.errors = list(parsed.errors)
        return preview
    try:
        patient = next((r for _, r in parsed.resources if r.get_resource_type() == "Patient"), None)
        pseudonym = fhir_pseudonym(
            patient_id=getattr(patient, "id", None) if patient is not None else None, sha256=sha
        )
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        mapping = map_bundle(
            parsed,
            as_of=as_of,
            pseudonym=pseudonym,
            case_id=f"fhir-{sha[:8]}-{stamp}",
            question=question or DEFAULT_QUESTION,
        )
    except MappingError as exc:
        preview.errors = [FhirError(filename, exc.path, exc.message)]
        return preview
    preview.mapping = mapping
    preview.needs_data = _needs_data(mapping.case)
    preview.token = signing.dumps(
        {
            "case": mapping.case,
            "provenance": mapping.provenance(),
            "sha256": sha,
            "filename": filename[:255],
            "as_of": as_of.isoformat(),
            "needs": preview.needs_data,
        },
        salt=_SALT,
        compress=True,
    )
    return preview


@transaction.atomic
def _create(
    *,
    actor: User,
    team: Team,
    case: dict[str, Any],
    provenance: dict[str, Any],
    sha256: str,
    filename: str,
    as_of: date,
    source: str,
) -> LesionDossier:
    dossier = dossier_create(actor=actor, team=team, data=case, source=filename or "fhir")
    FhirImport.objects.create(
        dossier=dossier,
        source=source,
        filename=filename[:255],
        bundle_sha256=sha256,
        as_of=as_of,
        provenance=provenance,
        imported_by=actor,
    )
    # What was imported and from which bundle, never the values (no PHI in the audit log).
    audit_record(
        action="dossier.import_fhir",
        actor=actor,
        obj=dossier,
        payload={
            "bundle_sha256": sha256,
            "source": source,
            "fields": len(provenance.get("values", [])),
            "not_imported": len(provenance.get("not_imported", [])),
            "hash": content_hash(case),
        },
    )
    return dossier


def preview_state(token: str) -> dict[str, Any]:
    """What the review screen showed, from its signed token (BadSignature if expired or
    changed)."""
    state: dict[str, Any] = signing.loads(token, salt=_SALT, max_age=PREVIEW_MAX_AGE_S)
    return state


def bundle_import_confirm(
    *, actor: User, team: Team, token: str, pseudonym: str, question: str
) -> LesionDossier:
    """Save what the review screen showed; the clinician may change the pseudonym and the
    question, nothing else (the token is signed: an edited case is refused)."""
    try:
        state = preview_state(token)
    except signing.BadSignature as exc:
        raise DossierError(PREVIEW_EXPIRED) from exc
    case = dict(state["case"])
    case["patient"] = {**case["patient"], "pseudonym": pseudonym.strip()}
    case["question"] = question.strip() or None
    return _create(
        actor=actor,
        team=team,
        case=case,
        provenance=state["provenance"],
        sha256=state["sha256"],
        filename=state["filename"],
        as_of=date.fromisoformat(state["as_of"]),
        source=FhirImportSource.UPLOAD,
    )


def bundle_import(
    *,
    actor: User,
    team: Team,
    raw: bytes,
    filename: str,
    as_of: date | None = None,
    source: str = FhirImportSource.COMMAND,
) -> tuple[ImportResult, FhirPreview]:
    """Import a bundle in one step (command line, FHIR server): the printed summary stands in
    for the review screen. Nothing is saved when the bundle has errors."""
    preview = bundle_preview(raw=raw, filename=filename, as_of=as_of)
    if not preview.ok or preview.mapping is None:
        errors = [CaseError(filename, e.path, e.message) for e in preview.errors]
        return ImportResult(filename, errors=errors), preview
    try:
        dossier = _create(
            actor=actor,
            team=team,
            case=preview.mapping.case,
            provenance=preview.mapping.provenance(),
            sha256=preview.sha256,
            filename=filename,
            as_of=preview.as_of,
            source=source,
        )
    except DossierError as exc:
        errors = exc.errors or [CaseError(filename, "Bundle", str(exc))]
        return ImportResult(filename, errors=list(errors)), preview
    return ImportResult(filename, dossier=dossier), preview


def dossier_export_fhir(*, actor: User, dossier: LesionDossier) -> dict[str, Any]:
    """The dossier as an mCODE patient Bundle (audited like the JSON export)."""
    document = dossier_bundle(dossier.data, on=timezone.localdate())
    audit_record(
        action="dossier.export",
        actor=actor,
        obj=dossier,
        payload={"format": "fhir", "hash": content_hash(dossier.data)},
    )
    return document


class NotSigned(Exception):
    """Only a signed plan is exported as a CarePlan."""


NOT_SIGNED = "The plan is exported as a FHIR CarePlan once the responsible clinician has signed it."


def plan_export_careplan(*, actor: User, consultation: Consultation) -> dict[str, Any]:
    """The signed plan version as a FHIR CarePlan (audited like the plan exports)."""
    state = review_state_get(consultation=consultation)
    if state.sign_off is None:
        raise NotSigned(NOT_SIGNED)
    version = next(
        (v for v in state.versions if v.number == state.sign_off.plan_number), state.current
    )
    meeting = state.meeting
    dossier = consultation.dossier
    document = plan_careplan(
        version.payload,
        pseudonym=dossier.patient.pseudonym,
        case_id=dossier.case_id,
        signed_by=str(state.sign_off.signed_by),
        signed_at=state.sign_off.signed_at.isoformat(timespec="seconds"),
        decision=meeting.final_decision if meeting is not None else "",
        dissent=meeting.dissent if meeting is not None else "",
        plan_version=version.number,
        facts=(
            f"derived facts frozen with dossier snapshot {consultation.snapshot.number}, "
            f"calculators {consultation.snapshot.facts_version}"
        ),
    )
    audit_record(
        action="plan.export",
        actor=actor,
        obj=consultation,
        payload={
            "format": "fhir-careplan",
            "plan_version": version.number,
            "plan_hash": version.content_hash,
        },
    )
    return document
