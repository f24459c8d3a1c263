"""Celery interfaces of the rating app: they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from consult.rating.llm_rater import study_llm_rate as run_service


@shared_task(name="rating.study_llm_rate", soft_time_limit=3600, time_limit=3660)
def study_llm_rate(study_id: int) -> dict[str, int]:
    """Score a study's packets with the LLM rater; a rerun scores only what is missing."""
    run = run_service(study_id=study_id)
    return {"scored": run.scored, "failed": run.failed, "skipped": run.skipped}
