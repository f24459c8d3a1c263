"""PDF reports have a queue of their own, which `make run` gives a worker of its own: a burst
of PDF requests never holds the slots a clinician's consultation is waiting for."""

from __future__ import annotations

from mdtboard.celery import app
from mdtboard.core.management.commands.runstack import report_worker_argv, worker_argv


def _queue(task_name: str) -> str:
    return str(app.amqp.router.route({}, task_name)["queue"].name)


def _consumed(argv: list[str]) -> set[str]:
    return set(argv[argv.index("--queues") + 1].split(","))


def test_the_pdf_goes_to_the_reports_queue_and_the_consultation_does_not() -> None:
    from consult.review.tasks import report_render
    from consult.tasks import consultation_run

    assert _queue(report_render.name) == "reports"
    assert _queue(consultation_run.name) == "consultations"
    # each queue has a binding of its own: a shared one would deliver a task twice
    bindings = [(q.exchange.name, q.routing_key) for q in app.amqp.queues.values()]
    assert len(bindings) == len(set(bindings))


def test_make_run_renders_pdfs_on_a_worker_that_runs_no_consultation() -> None:
    consultation_worker, report_worker = _consumed(worker_argv(2)), _consumed(report_worker_argv())
    assert report_worker == {"reports"}
    assert "consultations" in consultation_worker
    assert "reports" not in consultation_worker
    # between them, every queue a task can be routed to is consumed
    assert consultation_worker | report_worker == set(app.amqp.queues)
    # and the two workers answer pings under different names
    assert "--hostname" in report_worker_argv()
    assert "--hostname" not in worker_argv(2)


def test_the_compose_file_splits_the_workers_as_make_run_does() -> None:
    from pathlib import Path

    import yaml

    compose = Path(__file__).resolve().parents[3] / "docker" / "compose.yaml"
    services = yaml.safe_load(compose.read_text(encoding="utf-8"))["services"]

    def consumed(command: list[str]) -> set[str]:
        return set(command[command.index("--queues") + 1].split(","))

    worker = consumed(services["worker"]["command"])
    reports = consumed(services["report-worker"]["command"])
    assert worker == _consumed(worker_argv(2))
    assert reports == _consumed(report_worker_argv())
    assert worker | reports == set(app.amqp.queues)
    assert "--hostname" in services["report-worker"]["command"]
