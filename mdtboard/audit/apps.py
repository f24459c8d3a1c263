from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "mdtboard.audit"
    label = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        from mdtboard.audit import receivers  # noqa: F401 - connects the login receivers.
