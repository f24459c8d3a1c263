"""A Redis restart in the middle of a consultation: the worker reconnects and the run ends."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings

from consult.models import AgentMessage, Consultation, ConsultationStatus
from consult.services.consultations import consultation_start
from mdtboard import embedded
from mdtboard.core.management.commands.runstack import worker_argv
from tests.fixtures.consultations import assert_unbroken, submitted
from tests.fixtures.seed import load_seed
from tests.fixtures.waiting import wait_until
from tests.stack import Proc, _spawn, child_env

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def restart_redis(*, down_s: float = 1.0) -> None:
    """Stop the embedded Redis and start it again on the same socket, as an operator (or a
    crash and a supervisor) would."""
    var_dir = Path(settings.VAR_DIR)
    assert embedded.stop_redis(var_dir), "the embedded Redis was not running"
    # The outage itself (not a wait for anything): long enough for every client to notice
    # the server is gone.
    time.sleep(down_s)
    embedded.ensure_redis(var_dir)
    # This process's pooled broker connection still points at the old server: its first use
    # fails once, and the next one reconnects.
    from mdtboard.celery import app

    deadline = time.monotonic() + 10
    while True:
        try:
            app.control.ping(timeout=0.2)
            return
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "this process could not reach Redis again"


@pytest.fixture
def stack_worker(celery_worker_proc: Any, llm_stub: Any) -> Iterator[Proc]:
    """A worker started exactly as `make run` starts it (prefork, gossip, mingle, events), in
    place of the session's solo worker, which is started again afterwards."""
    from django.conf import settings as django_settings

    from mdtboard.celery import app

    celery_worker_proc.stop()
    name = f"stack-{os.getpid()}"
    proc = _spawn(
        "celery-stack-worker",
        [*worker_argv(2), "--hostname", f"{name}@%h"],
        child_env(str(django_settings.DATABASES["default"]["NAME"]), llm_stub.env()),
    )
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=0.5, destination=[f"{name}@{socket.gethostname()}"]):
        assert proc.popen.poll() is None, f"the worker exited early:\n{proc.tail()}"
        assert time.monotonic() < deadline, f"the worker did not answer:\n{proc.tail()}"
    try:
        # the consultation can only be run by this worker
        workers = {node for reply in app.control.ping(timeout=1) for node in reply}
        assert workers == {f"{name}@{socket.gethostname()}"}, f"other workers: {workers}"
        yield proc
    finally:
        proc.stop(timeout=30)
        celery_worker_proc.restart()


def wait_finished(consultation: Consultation, *, seconds: float, worker: Proc) -> Consultation:
    def finished() -> bool:
        consultation.refresh_from_db()
        assert worker.popen.poll() is None, f"the worker died:\n{worker.tail(80)}"
        return consultation.is_finished

    wait_until(finished, timeout=seconds, interval=0.2, what="the consultation to finish")
    return consultation


@pytest.mark.django_db(transaction=True)
def test_a_redis_restart_mid_consultation_leaves_the_worker_running_and_the_run_finishes(
    clinician: Any, team: Any, llm_env: Any, stack_worker: Proc
) -> None:
    load_seed()
    from tests.consult.llm_responder import clinical_responder

    # given an LLM consultation under way on a worker started as `make run` starts it
    llm_env.switch.responder = clinical_responder(delay_s=0.5)
    dossier = submitted(clinician, team, "pub-hcc-02.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm")
    wait_until(
        lambda: AgentMessage.objects.filter(consultation=consultation).count() >= 3,
        timeout=90,
        what="the worker to start the consultation",
    )

    # when Redis goes away and comes back on the same socket
    restart_redis()

    # then the worker is still alive and the consultation completes, nothing lost or doubled
    done = wait_finished(consultation, seconds=120, worker=stack_worker)
    assert done.status == ConsultationStatus.COMPLETED
    assert_unbroken(done)
    # and a consultation started after the restart is taken up too (not left "Queued")
    later = consultation_start(actor=clinician, dossier=dossier, engine="guideline")
    assert wait_finished(later, seconds=60, worker=stack_worker).status == (
        ConsultationStatus.COMPLETED
    )
