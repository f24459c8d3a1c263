"""``manage.py audit_verify``: check the audit hash chain; exit 1 at the first broken link."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from mdtboard.audit.services import audit_verify


class Command(BaseCommand):
    help = "Verify the audit log's hash chain and report the first broken link."

    def handle(self, *args: Any, **options: Any) -> None:
        report = audit_verify()
        if not report.ok and report.broken_event_id == 0:
            # The anchor, not a row: no event to name.
            raise CommandError(f"audit chain NOT VERIFIED: {report.reason}")
        if not report.ok:
            raise CommandError(
                f"audit chain BROKEN at event #{report.broken_event_id}: {report.reason} "
                f"({report.checked} events read)"
            )
        self.stdout.write(self.style.SUCCESS(f"audit chain intact: {report.checked} events"))
