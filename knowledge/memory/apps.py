from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Experience memory and governed evolution. Its own label and migrations, so that the
    knowledge app's migrations stay untouched."""

    name = "knowledge.memory"
    label = "memory"
    verbose_name = "Experience memory and governed evolution"
