from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "mdtboard.core"
    label = "core"
    verbose_name = "mdtboard core"
