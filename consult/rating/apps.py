from __future__ import annotations

from django.apps import AppConfig


class RatingConfig(AppConfig):
    name = "consult.rating"
    label = "rating"
    verbose_name = "Rating studies"
