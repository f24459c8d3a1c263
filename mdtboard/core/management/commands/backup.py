"""``manage.py backup``: a compressed dump of the configured database and its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mdtboard.core.backups import BackupError, backup_create


class Command(BaseCommand):
    help = (
        "Dump the configured database (pg_dump -Fc) to var/backups/mdtboard-<UTC time>.dump "
        "with a JSON manifest beside it, and print the dump's path. Backups hold clinical "
        "data: keep them encrypted and access-controlled."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, help="where to write the dump")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = backup_create(output=options["output"])
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        manifest = result.manifest
        self.stderr.write(
            f"{manifest['size']} bytes, sha256 {manifest['sha256']}, "
            f"manifest {result.manifest_path}"
        )
        reports = manifest["reports"]
        self.stderr.write(f"{len(reports['files'])} report file(s) in {reports['file']}")
        for missing in result.reports_unavailable:
            # Not in the backup: render it again from its plan version after a restore.
            self.stderr.write(
                f"WARNING: report #{missing['id']} not backed up ({missing['reason']}): "
                f"{missing['path']}"
            )
        # Alone on stdout, so that scripts can take it: FILE=$(manage.py backup).
        self.stdout.write(str(result.path))
