"""``manage.py restore PATH``: replace the database's contents with a checked backup."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from mdtboard.core.backups import BackupError, backup_check, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup made by `manage.py backup` into the configured database, replacing "
        "all its data. Checks the dump against its manifest first; asks for the database name "
        "unless --yes is given. Stop the web server and the worker first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the .dump file (its .json manifest beside)")
        parser.add_argument(
            "--yes", action="store_true", help="do not ask: replace the current data"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        database = str(connection.settings_dict["NAME"])
        try:
            manifest = backup_check(path=path)
            if not options["yes"]:
                self._confirm(database, manifest)
            result = backup_restore(path=path)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restored {path.name} (made {manifest['created_at']}) into {database}")
        for name, count in result.row_counts.items():
            expected = manifest["row_counts"].get(name)
            note = "" if count == expected else "  MISMATCH"
            self.stdout.write(f"  {name}: {count} (backup: {expected}){note}")
        head = result.chain_head
        self.stdout.write(
            f"audit chain intact, re-anchored at event #{head.event_id} {head.hash}"
            if head
            else "audit log empty in the backup"
        )
        if result.previous_anchor_kept:
            self.stdout.write(f"previous audit anchor kept as {result.previous_anchor_kept}")
        self.stdout.write(
            f"report files restored, each matching its hash: {result.reports_restored}"
        )
        if result.reports_missing:
            ids = ", ".join(f"#{pk}" for pk in result.reports_missing)
            self.stdout.write(
                f"reports without their file (request them again on the plan page): {ids}"
            )
        if result.mismatched:
            raise CommandError(
                "row counts differ from the manifest: " + ", ".join(result.mismatched)
            )

    def _confirm(self, database: str, manifest: dict[str, Any]) -> None:
        refused = f"refused: restoring replaces all data in {database}; confirm or pass --yes"
        if not sys.stdin.isatty():
            raise CommandError(refused)
        self.stdout.write(
            f"This replaces ALL data in database {database!r} with the backup made "
            f"{manifest['created_at']} of {manifest['database']!r}."
        )
        try:
            typed = input(f"Type the database name ({database}) to go on: ")
        except EOFError:
            typed = ""
        if typed.strip() != database:
            raise CommandError(refused)
