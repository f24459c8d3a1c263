"""``manage.py importcase PATH... --team NAME --user EMAIL [--as-of DATE]``: import
mdtboard.case/1 files and FHIR R4 Bundles."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.fhir.parse import looks_like_fhir
from consult.services.dossiers import case_import
from consult.services.fhir import bundle_import
from mdtboard.accounts.models import Team, User


class Command(BaseCommand):
    help = (
        "Import case files (mdtboard.case/1) and FHIR R4 Bundles (mCODE / US Core). Each file "
        "is all-or-nothing; errors name the file, the JSON or FHIR path and the problem. A "
        "bundle's summary (fields imported, what was not and why) stands in for the review "
        "screen. Exits 1 if any file was not imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="files or folders of .json files")
        parser.add_argument("--team", required=True, help="team name or slug that owns the cases")
        parser.add_argument("--user", required=True, help="email of the importing clinician")
        parser.add_argument(
            "--as-of",
            type=date.fromisoformat,
            default=None,
            help="FHIR bundles: the date of the MDT question (yyyy-mm-dd; default today)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            user = User.objects.get(email__iexact=options["user"], is_active=True)
        except User.DoesNotExist as exc:
            raise CommandError(f"no active user {options['user']!r}") from exc
        team = (
            Team.objects.filter(slug=options["team"]).first()
            or Team.objects.filter(name=options["team"]).first()
        )
        if team is None:
            raise CommandError(f"no team {options['team']!r}")
        files: list[Path] = []
        for path in options["paths"]:
            if path.is_dir():
                files.extend(sorted(path.glob("*.json")))
            elif path.is_file():
                files.append(path)
            else:
                raise CommandError(f"{path}: no such file or folder")
        failed = 0
        for path in files:
            raw = path.read_bytes()
            summary: list[str] = []
            if looks_like_fhir(raw):
                result, preview = bundle_import(
                    actor=user, team=team, raw=raw, filename=str(path), as_of=options["as_of"]
                )
                if preview.mapping is not None and result.ok:
                    summary = [
                        f"  FHIR: {len(preview.mapping.values)} values imported, "
                        f"{len(preview.mapping.not_imported)} items not imported"
                    ] + [
                        f"  not imported: {item.path} {item.what}: {item.reason}"
                        for item in preview.mapping.not_imported
                    ]
            else:
                result = case_import(actor=user, team=team, raw=raw, filename=str(path))
            if result.ok and result.dossier is not None:
                self.stdout.write(
                    f"imported {path} -> dossier {result.dossier.pk} ({result.dossier.case_id})"
                )
                for line in summary:
                    self.stdout.write(line)
                for warning in result.warnings:
                    self.stdout.write(f"  warning: {warning}")
            else:
                failed += 1
                for error in result.errors:
                    self.stderr.write(str(error))
        if failed:
            raise CommandError(
                f"{failed} of {len(files)} file(s) not imported; nothing of them was saved"
            )
