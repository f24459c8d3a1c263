from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "mdtboard.accounts"
    label = "accounts"
    verbose_name = "Accounts and teams"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from mdtboard.accounts import receivers

        # Role groups follow the permissions every app defines, so sync after each migrate.
        post_migrate.connect(receivers.sync_roles_after_migrate, dispatch_uid="accounts-roles")
