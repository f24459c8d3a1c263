"""Reachability checks behind /healthz: database, Redis and at least one Celery worker."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection

from mdtboard.celery import app as celery_app


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    latency_ms: float


def _timed(name: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = probe()
        ok = True
    except Exception as exc:  # noqa: BLE001 - any failure means "down"; say which kind
        detail, ok = type(exc).__name__, False
    return Check(name, ok, detail, round((time.perf_counter() - started) * 1000, 1))


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return f"pgvector {row[0]}" if row else "pgvector missing"


def _redis() -> str:
    client = redis.Redis.from_url(
        settings.REDIS_CELERY_URL, socket_timeout=1, socket_connect_timeout=1
    )
    client.ping()
    return "ping ok"


def _worker() -> str:
    # Return at the first answer rather than waiting out the timeout for stragglers.
    replies = celery_app.control.broadcast("ping", reply=True, limit=1, timeout=1.0)
    if not replies:
        raise LookupError("no worker answered")
    return f"{len(replies)} worker(s)"


def health_checks() -> list[Check]:
    return [_timed("database", _database), _timed("redis", _redis), _timed("worker", _worker)]
