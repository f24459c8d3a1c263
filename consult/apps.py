from __future__ import annotations

from django.apps import AppConfig


class ConsultConfig(AppConfig):
    name = "consult"
    verbose_name = "Consultations"
