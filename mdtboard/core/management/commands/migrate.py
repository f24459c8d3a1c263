"""``manage.py migrate`` as the database owner, then the app's role granted what it may do
(mdtboard.core.dbroles). pytest-django's test databases are migrated through here too."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import migrate

from mdtboard.core.dbroles import app_role_grant, database_owner


class Command(migrate.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"]
        with database_owner(using):
            super().handle(*args, **options)
            role = app_role_grant(using=using)
        if role and options["verbosity"] >= 2:
            self.stdout.write(f"Granted the app's role {role} its privileges.")
