"""Settings for the test suite: the same real services, separate Redis databases."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SECRET_KEY", "test-only-not-secret")
os.environ["DJANGO_DEBUG"] = "false"
# Keep tests off the databases a running `make run` uses, so a dev worker never steals test tasks.
os.environ.setdefault("REDIS_DB_CELERY", "3")
os.environ.setdefault("REDIS_DB_CHANNELS", "4")
os.environ.setdefault("REDIS_DB_CACHE", "5")

from .base import *  # noqa: F403
from .base import (
    AUDIT_HMAC_KEY,
    DATABASES,
    SECRET_KEY,
    STATIC_ROOT,
    STORAGES,
    derived_audit_key,
)

# Subprocesses started by the tests (Daphne, Celery worker) must use the test database that
# pytest-django created, not the development one.
if os.environ.get("MDTBOARD_TEST_DATABASE_NAME"):
    DATABASES["default"]["NAME"] = os.environ["MDTBOARD_TEST_DATABASE_NAME"]

WHITENOISE_USE_FINDERS = True
# WhiteNoise warns at every start when STATIC_ROOT is missing; finders serve static/ here.
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
ACCOUNT_RATE_LIMITS = False  # type: ignore[assignment]  # allauth: False disables them

AUDIT_HMAC_KEY = AUDIT_HMAC_KEY or derived_audit_key(SECRET_KEY)
# Anchoring writes a file per event; tests that check it point it at a temporary file.
AUDIT_ANCHOR_PATH = "off"

# As in production, whatever a developer's .env says. The personas of the roles that need
# two-factor have an authenticator app (tests/fixtures/personas.py, make_user); the e2e
# login enters codes.
MFA_REQUIRED_ROLES = ["admin", "curator"]
SESSION_IDLE_TIMEOUT = 30 * 60
# The test worker must not pick up runs that tests leave "running" on purpose (lease tests);
# the sweep itself is tested directly.
CONSULTATION_RECOVER_EVERY_S = 0.0
SESSION_COOKIE_AGE = 8 * 3600
# The memory's maintenance pass is tested directly; the test worker keeps no timer for it.
MEMORY_PRUNE_EVERY_S = 0.0
CELERY_BEAT_SCHEDULE = {}
