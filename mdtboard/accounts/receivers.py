"""Signal receivers of the accounts app: thin, they call services."""

from __future__ import annotations

from typing import Any

from mdtboard.accounts.services import roles_sync


def sync_roles_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    roles_sync(using=using)
