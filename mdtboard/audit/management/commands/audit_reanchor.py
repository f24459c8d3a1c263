"""``manage.py audit_reanchor --reason TEXT``: anchor the head of an intact audit chain whose
anchor file was lost, damaged or never written; the act is recorded on the chain."""

from __future__ import annotations

import getpass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mdtboard.audit.services import ReanchorRefused, audit_reanchor


class Command(BaseCommand):
    help = (
        "Anchor the current head of the audit chain after its anchor file was lost or damaged. "
        "Refuses a chain with a broken link; records audit.reanchored with the reason."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reason", required=True, help="why the anchor is rewritten")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            operator = getpass.getuser()
        except (KeyError, OSError):
            operator = "unknown"
        try:
            result = audit_reanchor(reason=options["reason"], operator=operator)
        except ReanchorRefused as exc:
            raise CommandError(str(exc)) from exc
        if result.kept is not None:
            self.stdout.write(f"previous anchor kept as {result.kept}")
        self.stdout.write(
            self.style.SUCCESS(
                f"audit chain intact ({result.checked} events); anchored at event "
                f"#{result.anchor.event_id}, which records this re-anchoring"
            )
        )
