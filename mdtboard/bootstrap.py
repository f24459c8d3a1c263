"""Start the embedded PostgreSQL and Redis a process needs, before Django reads its settings.

The settings only parse the environment. A process that may need the embedded servers (no
DATABASE_URL / REDIS_URL) calls ``embedded_servers()`` first: manage.py, the ASGI entry point,
the Celery app when it loads its configuration, the benchmarks, and the test suite (through
the pytest plugin mdtboard.pytest_plugin, since pytest-django loads the settings before any
conftest). It starts what is missing under var/ (or finds it running) and hands the addresses
to the settings in MDTBOARD_EMBEDDED_DATABASE_URL (the owner), MDTBOARD_EMBEDDED_APP_DATABASE_URL
(the app's ordinary role, which it also creates) and MDTBOARD_EMBEDDED_REDIS_URL, which child
processes inherit. Tools that only import the settings (the type checker, a deployment with
real servers) start nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import environ

from mdtboard import embedded

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_VAR = "MDTBOARD_EMBEDDED_DATABASE_URL"  # the owner's address (migrate, backups)
APP_DATABASE_VAR = "MDTBOARD_EMBEDDED_APP_DATABASE_URL"  # the app's ordinary role
REDIS_VAR = "MDTBOARD_EMBEDDED_REDIS_URL"


def embedded_servers() -> None:
    """Start (or find) the embedded servers the environment asks for; idempotent."""
    # The settings read .env too; read it first so that its DATABASE_URL / REDIS_URL count.
    if (BASE_DIR / ".env").exists():
        environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
    if os.environ.get("DJANGO_SETTINGS_MODULE", "").endswith(".production"):
        return  # production never falls back to embedded servers: its settings say so
    var_dir = Path(os.environ.get("MDTBOARD_VAR_DIR") or BASE_DIR / "var")
    database = os.environ.get("MDTBOARD_DB_NAME") or "mdtboard"

    if not os.environ.get("DATABASE_URL", "").strip() and not _started(DATABASE_VAR, database):
        owner_uri = embedded.ensure_postgres(var_dir, database=database)
        embedded.ensure_app_role(var_dir)
        os.environ[DATABASE_VAR] = owner_uri
        os.environ[APP_DATABASE_VAR] = embedded.app_role_uri(owner_uri)
    if not os.environ.get("REDIS_URL", "").strip() and not os.environ.get(REDIS_VAR):
        os.environ[REDIS_VAR] = embedded.ensure_redis(var_dir)


def _started(variable: str, database: str) -> bool:
    """Whether an earlier call (here or in a parent process) started the server for this
    database: a benchmark switches MDTBOARD_DB_NAME before it bootstraps."""
    url = os.environ.get(variable, "")
    return bool(url) and url.split("?")[0].rstrip("/").rsplit("/", 1)[-1] == database
