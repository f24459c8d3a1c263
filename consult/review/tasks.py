"""Celery interfaces of the review: they take ids and call a service."""

from __future__ import annotations

from celery import shared_task

from consult.review.services import report_render as render_service


@shared_task(name="review.report_render", soft_time_limit=120, time_limit=150)
def report_render(report_id: int) -> str:
    """Render one PDF report (the ``reports`` queue: CELERY_TASK_ROUTES); a report already
    rendered is left alone."""
    return render_service(report_id=report_id)
