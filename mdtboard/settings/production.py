"""Production settings: real PostgreSQL and Redis from the environment, HTTPS only."""

from __future__ import annotations

import os

# Fail fast: production never falls back to the embedded servers or a default key.
for _name in (
    "DJANGO_SECRET_KEY",
    "AUDIT_HMAC_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "DJANGO_ALLOWED_HOSTS",
    "EMAIL_URL",
):
    if not os.environ.get(_name):
        raise RuntimeError(f"{_name} must be set in production")

from .base import *  # noqa: E402,F403
from .base import (  # noqa: E402
    ALLOWED_HOSTS,
    AUDIT_ANCHOR_PATH,
    AUDIT_HMAC_KEY,
    EMAIL_CONFIG,
    SECRET_KEY,
    env,
)

# Weak values refused, not just missing ones (Django's own deploy check wants 50 characters).
MIN_SECRET_LENGTH = 50
MIN_AUDIT_KEY_LENGTH = 32
if len(SECRET_KEY) < MIN_SECRET_LENGTH or len(set(SECRET_KEY)) < 5:
    raise RuntimeError(
        f"DJANGO_SECRET_KEY is too weak: use at least {MIN_SECRET_LENGTH} random characters"
    )
if len(AUDIT_HMAC_KEY) < MIN_AUDIT_KEY_LENGTH or AUDIT_HMAC_KEY == SECRET_KEY:
    raise RuntimeError(
        f"AUDIT_HMAC_KEY must be at least {MIN_AUDIT_KEY_LENGTH} random characters, "
        "different from DJANGO_SECRET_KEY"
    )
if AUDIT_ANCHOR_PATH.strip().lower() == "off":
    # Without the anchor, deleting the newest audit events, or rewriting the chain with the
    # key, goes unnoticed (mdtboard.audit.anchor).
    raise RuntimeError(
        "AUDIT_ANCHOR_PATH=off is refused in production: set it to a file on a volume the "
        "database server cannot write, or leave it empty for var/audit-anchor.json"
    )
if any(host == "*" or host.startswith("*") or not host.strip() for host in ALLOWED_HOSTS):
    raise RuntimeError("DJANGO_ALLOWED_HOSTS must name the hosts, not a wildcard")
if EMAIL_CONFIG["EMAIL_BACKEND"] in (
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
):
    # Invitations and password-reset links would end up in a log instead of a mailbox.
    raise RuntimeError("EMAIL_URL must be a real mail server in production (e.g. smtp+tls://)")

DEBUG = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 30)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
