"""Celery interfaces of the consult app: they take ids and call a service."""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from consult.learning import experience_forget_review as forget_service
from consult.learning import experience_from_rating as rating_service
from consult.learning import experience_from_review as review_service
from consult.services.consultations import consultation_run as run_service
from consult.services.consultations import consultations_recover
from mdtboard.celery import app


@shared_task(
    name="consult.consultation_run",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=900,
    time_limit=960,
)
def consultation_run(consultation_id: int) -> str:
    """Run or resume one consultation; idempotent (finished runs and done steps are kept)."""
    return run_service(consultation_id=consultation_id)


logger = logging.getLogger(__name__)


@shared_task(name="consult.experience_from_review", acks_late=True, soft_time_limit=300)
def experience_from_review(review_id: int) -> int | None:
    """The CorrectKB or ChainKB entry a clinician's decision teaches (idempotent)."""
    return review_service(review_id=review_id)


@shared_task(name="consult.experience_forget_review", acks_late=True, soft_time_limit=120)
def experience_forget_review(review_id: int) -> int:
    """A reopened decision teaches nothing any more: retire what was learnt from it."""
    return forget_service(review_id=review_id)


@shared_task(name="consult.experience_from_rating", acks_late=True, soft_time_limit=300)
def experience_from_rating(rating_id: int) -> int | None:
    """Vet the study's ratings again and learn from those that pass (idempotent)."""
    return rating_service(rating_id=rating_id)


def _consultations_waiting() -> int | None:
    """Messages waiting in the consultations queue, or None when the broker cannot say."""
    try:
        with app.connection_for_write() as connection:
            declared = connection.default_channel.queue_declare(queue="consultations", passive=True)
            return int(declared.message_count)
    except Exception:  # noqa: BLE001 - no answer means "do not guess"
        return None


def _sweep(stop: threading.Event, every_s: float) -> None:
    """Look for runs left "running" with a lapsed lease (a run whose last database write
    failed, a worker that hung) every ``every_s``: not only when a worker starts. Runs still
    "queued" after two minutes are requeued only when the consultations queue is empty, i.e.
    their message was lost (the broker was down when they were started), not merely waiting."""
    from django.db import connections

    while not stop.wait(every_s):
        try:
            consultations_recover(queued=_consultations_waiting() == 0)
        except Exception as exc:  # noqa: BLE001 - the next sweep tries again
            logger.warning("recovery sweep failed (%s)", type(exc).__name__)
        finally:
            connections.close_all()


@worker_ready.connect
def _recover_interrupted_runs(sender: Any = None, **kwargs: Any) -> None:
    # A worker killed mid-run leaves its consultation "running" with a lapsing lease; the
    # next worker to start picks it up where the step journal says it stopped, and every
    # running worker sweeps again each minute.
    from django.conf import settings

    consultations_recover()
    every_s = float(settings.CONSULTATION_RECOVER_EVERY_S)
    if every_s > 0:
        threading.Thread(
            target=_sweep,
            args=(threading.Event(), every_s),
            name="consultation-recovery",
            daemon=True,
        ).start()
