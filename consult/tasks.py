"""Celery interfaces of the consult app: they take ids and call a service."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from consult.services.consultations import consultation_run as run_service
from consult.services.consultations import consultations_recover


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


@worker_ready.connect
def _recover_interrupted_runs(sender: Any = None, **kwargs: Any) -> None:
    # A worker killed mid-run leaves its consultation "running" with a lapsing lease; the
    # next worker to start picks it up where the step journal says it stopped.
    consultations_recover()
