"""Settings for ``make run`` on a developer's or demo machine."""

from __future__ import annotations

import os

# A fixed development key so `make run` needs no setup; production refuses to start without one.
os.environ.setdefault("DJANGO_SECRET_KEY", "local-development-only-not-secret")
os.environ.setdefault("DJANGO_DEBUG", "true")

from .base import *  # noqa: F403
from .base import STORAGES

# Serve static files straight from static/ without collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
