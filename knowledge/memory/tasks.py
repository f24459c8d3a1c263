"""Celery interfaces of the experience memory: they call a service. The prune and propose
pass runs periodically (celery beat, or each worker's own timer when no beat runs)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from knowledge.memory.evolution import evolution_propose
from knowledge.memory.pruning import memory_prune

logger = logging.getLogger(__name__)


@shared_task(name="memory.memory_maintain", soft_time_limit=600, time_limit=660)
def memory_maintain() -> dict[str, int]:
    """Cache-and-prune the store, then draw evolution proposals from what remains."""
    run = memory_prune()
    proposals = evolution_propose()
    return {
        "duplicates": run.duplicates,
        "stale": run.stale,
        "over_capacity": run.over_capacity,
        "active_after": run.active_after,
        "proposals": len(proposals),
    }


def _timer(stop: threading.Event, every_s: float) -> None:
    while not stop.wait(every_s):
        try:
            memory_maintain.delay()
        except Exception as exc:  # noqa: BLE001 - the next tick tries again
            logger.warning("memory maintenance could not be queued (%s)", type(exc).__name__)


@worker_ready.connect
def _schedule_maintenance(sender: Any = None, **kwargs: Any) -> None:
    # `make run` starts no celery beat: each worker queues the pass on its own timer (the
    # pass is idempotent, so two workers doing it is harmless).
    from django.conf import settings

    every_s = float(settings.MEMORY_PRUNE_EVERY_S)
    if every_s > 0:
        threading.Thread(
            target=_timer,
            args=(threading.Event(), every_s),
            name="memory-maintenance",
            daemon=True,
        ).start()
