"""``manage.py importcase PATH... --team NAME --user EMAIL``: import mdtboard.case/1 files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.services.dossiers import case_import
from mdtboard.accounts.models import Team, User


class Command(BaseCommand):
    help = (
        "Import case files (mdtboard.case/1). Each file is all-or-nothing; errors name the "
        "file, the JSON path and the problem. Exits 1 if any file was not imported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="files or folders of .json files")
        parser.add_argument("--team", required=True, help="team name or slug that owns the cases")
        parser.add_argument("--user", required=True, help="email of the importing clinician")

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
            result = case_import(actor=user, team=team, raw=path.read_bytes(), filename=str(path))
            if result.ok and result.dossier is not None:
                self.stdout.write(
                    f"imported {path} -> dossier {result.dossier.pk} ({result.dossier.case_id})"
                )
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
