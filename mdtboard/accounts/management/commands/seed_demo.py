"""``manage.py seed_demo``: demo teams and one user per role; prints the logins."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from mdtboard.accounts.services import demo_credentials_path, demo_seed


class Command(BaseCommand):
    help = "Create the demo teams and users (once) and print their logins."

    def handle(self, *args: Any, **options: Any) -> None:
        logins = demo_seed(credentials_file=demo_credentials_path())
        self.stdout.write("Demo logins (this machine only; kept in var/demo-credentials.json):")
        for login in logins:
            teams = ", ".join(login.teams) or "-"
            self.stdout.write(
                f"  {login.role:<10} {login.email:<32} {login.password}   teams: {teams}"
            )
