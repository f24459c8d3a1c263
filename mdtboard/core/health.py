"""Reachability checks behind /healthz: database, Redis, at least one Celery worker, and no
consultation left waiting on a worker that is gone."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection

from consult.models import Consultation, ConsultationStatus
from consult.selectors import consultation_worker_silence
from mdtboard.celery import app as celery_app


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    latency_ms: float


class Unhealthy(Exception):
    """A check that ran and found a problem; its message is safe to show anyone."""


def _timed(name: str, probe: Callable[[], str]) -> Check:
    started = time.perf_counter()
    try:
        detail = probe()
        ok = True
    except Unhealthy as exc:
        detail, ok = str(exc), False
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


def _consultations() -> str:
    # A worker answering pings is not enough: one that died mid-run leaves its consultation
    # "running" until a worker starts and recovers it.

    waiting = Consultation.objects.filter(
        status__in=[ConsultationStatus.QUEUED, ConsultationStatus.RUNNING]
    )
    silences = [
        silence
        for consultation in waiting
        if (silence := consultation_worker_silence(consultation=consultation)) is not None
    ]
    if silences:
        raise Unhealthy(f"no live worker: a consultation has waited {max(silences)} s")
    return "every consultation in progress has a live worker"


def health_checks() -> list[Check]:
    return [
        _timed("database", _database),
        _timed("redis", _redis),
        _timed("worker", _worker),
        _timed("consultations", _consultations),
    ]
