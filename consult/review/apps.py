from __future__ import annotations

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    """Clinician review, plan versions, the MDT decision, PDF reports and exports. Its own
    label and migrations, so that the consult app's migrations stay untouched."""

    name = "consult.review"
    label = "review"
    verbose_name = "Clinician review and reports"
