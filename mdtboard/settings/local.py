"""Settings for ``make run`` on a developer's or demo machine."""

from __future__ import annotations

import os

# A fixed development key so `make run` needs no setup; production refuses to start without one.
os.environ.setdefault("DJANGO_SECRET_KEY", "local-development-only-not-secret")
os.environ.setdefault("DJANGO_DEBUG", "true")

from .base import *  # noqa: F403
from .base import AUDIT_HMAC_KEY, SECRET_KEY, STATIC_ROOT, STORAGES, derived_audit_key, env

# Serve static files straight from static/ without collectstatic.
WHITENOISE_USE_FINDERS = True
# WhiteNoise warns at every start when STATIC_ROOT is missing; finders serve static/ here.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_AUTOREFRESH = True
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

AUDIT_HMAC_KEY = AUDIT_HMAC_KEY or derived_audit_key(SECRET_KEY)

# Two-factor is not enforced on a development or demo machine unless asked for: the demo
# curator and administrator (`make run`, manage.py seed_demo) have no authenticator app, and a
# demo should open with the printed credentials alone. MFA_REQUIRED_ROLES=admin,curator in .env
# shows what production does.
MFA_REQUIRED_ROLES = env.list("MFA_REQUIRED_ROLES", default=[])
