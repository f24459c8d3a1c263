"""Production settings: real PostgreSQL and Redis from the environment, HTTPS only."""

from __future__ import annotations

import os

# Fail fast: production never falls back to the embedded servers or a default key.
for _name in (
    "DJANGO_SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_ALLOWED_HOSTS",
    "EMAIL_URL",
):
    if not os.environ.get(_name):
        raise RuntimeError(f"{_name} must be set in production")

from .base import *  # noqa: E402,F403
from .base import env  # noqa: E402

DEBUG = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 30)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
