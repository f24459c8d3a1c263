from __future__ import annotations

from django.apps import AppConfig


class ConsultConfig(AppConfig):
    name = "consult"
    verbose_name = "Consultations"

    def ready(self) -> None:
        # The curator's retrieval diagnostics check applicability against a dossier;
        # knowledge does not import consult, so the dossiers are handed to it here.
        from consult.selectors import DossierCases
        from knowledge.cases import case_source_register

        case_source_register(DossierCases())
