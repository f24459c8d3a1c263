"""Running case files from the command line: import (or update), submit, deliberate."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from consult.casefile.validate import parse_case_bytes
from consult.fhir.parse import looks_like_fhir
from consult.journal.broadcaster import broadcasts_drain
from consult.models import Consultation, LesionDossier
from consult.services.consultations import consultation_run, consultation_start
from consult.services.dossiers import DossierError, dossier_create, dossier_submit, dossier_update
from consult.services.fhir import bundle_import
from mdtboard.accounts.models import Team, User
from mdtboard.accounts.roles import Role
from mdtboard.accounts.services import team_get_or_create, user_create

CLI_EMAIL = "cli@system.mdtboard.invalid"
CLI_TEAM = "Command line"


def cli_identity() -> tuple[User, Team]:
    """The account the command line acts as: a clinician that cannot log in (no password,
    inactive), in a team of its own that only administrators see."""
    team = team_get_or_create(name=CLI_TEAM)
    user = User.objects.filter(email=CLI_EMAIL).first()
    if user is None:
        user = user_create(
            email=CLI_EMAIL, role=Role.CLINICIAN, display_name="Command line", teams=[team]
        )
        User.objects.filter(pk=user.pk).update(is_active=False)
        user.refresh_from_db()
    return user, team


def case_run(
    *,
    raw: bytes,
    filename: str,
    engine: str,
    max_rounds: int = 3,
    actor: User | None = None,
    team: Any = None,
) -> Consultation:
    """Import the case (or update the dossier with the same case id), submit it, and run a
    consultation synchronously. A FHIR Bundle is mapped to a new dossier first. Raises
    DossierError with every problem of a bad file."""
    if actor is None or team is None:
        actor, team = cli_identity()
    if looks_like_fhir(raw):
        # A FHIR Bundle is mapped to a new dossier (its case id is new each time); the
        # command prints nothing of the mapping, the dossier keeps its provenance.
        with transaction.atomic():
            result, _ = bundle_import(actor=actor, team=team, raw=raw, filename=filename)
            if result.dossier is None:
                raise DossierError("The FHIR bundle has errors.", result.errors)
            dossier_submit(actor=actor, dossier=result.dossier)
            consultation = consultation_start(
                actor=actor,
                dossier=result.dossier,
                engine=engine,
                max_rounds=max_rounds,
                enqueue=False,
            )
        return _run(consultation)
    parsed = parse_case_bytes(raw, filename=filename)
    if not parsed.ok or parsed.data is None:
        raise DossierError("The case file has errors.", list(parsed.errors))
    data = parsed.data
    with transaction.atomic():
        existing = LesionDossier.objects.filter(
            patient__team=team,
            case_id=data["case_id"],
            patient__pseudonym=(data.get("patient") or {}).get("pseudonym"),
        ).first()
        if existing is None:
            dossier = dossier_create(actor=actor, team=team, data=data, source=filename)
        else:
            dossier = dossier_update(actor=actor, dossier=existing, data=data)
        dossier_submit(actor=actor, dossier=dossier)
        consultation = consultation_start(
            actor=actor, dossier=dossier, engine=engine, max_rounds=max_rounds, enqueue=False
        )
    return _run(consultation)


def _run(consultation: Consultation) -> Consultation:
    consultation_run(consultation_id=consultation.pk)
    broadcasts_drain()  # a command-line process exits right after: let the board hear the end
    consultation.refresh_from_db()
    return consultation
