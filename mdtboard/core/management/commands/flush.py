"""``manage.py flush`` as the database owner: it truncates every table, which the app's role
may not (mdtboard.core.dbroles). Django's transactional tests flush through here."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush

from mdtboard.core.dbroles import database_owner


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        with database_owner(options["database"]):
            super().handle(**options)
