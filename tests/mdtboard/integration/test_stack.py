"""The real services: pgvector, a Celery worker process, Redis, Daphne + channels-redis."""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any

import pytest
from django.db import connection
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from consult.broadcasts import user_notify
from mdtboard.core import health
from mdtboard.core.tasks import ping
from tests.stack import in_thread

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.django_db
def test_database_has_the_vector_extension() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    assert row is not None
    # Vector maths works, not just the catalogue entry.
    with connection.cursor() as cursor:
        cursor.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector")
        assert cursor.fetchone()[0] == pytest.approx(1.0)


def test_celery_task_round_trip_through_a_real_worker(celery_worker_proc: Any) -> None:
    result = ping.delay()
    assert result.get(timeout=30) == "pong"
    assert "core.ping" in celery_worker_proc.log.read_text()


def test_consultations_have_their_own_queue_which_the_worker_consumes(
    celery_worker_proc: Any,
) -> None:
    from consult.tasks import consultation_run
    from mdtboard.celery import app

    # a consultation is never queued behind embedding or import work...
    route = app.amqp.router.route({}, consultation_run.name)
    assert route["queue"].name == "consultations"
    # and every task lands in exactly one queue (a shared binding would deliver it twice)
    bindings = [(q.exchange.name, q.routing_key) for q in app.amqp.queues.values()]
    assert len(bindings) == len(set(bindings))
    assert route["queue"].routing_key == "consultations"
    # ...and a worker started without -Q (the tests' one) listens to every queue, PDFs too
    ping.delay().get(timeout=30)  # the worker is up
    queues = app.control.inspect(timeout=5).active_queues() or {}
    consumed = {q["name"] for worker in queues.values() for q in worker}
    assert {"consultations", "reports", "celery"} <= consumed


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_every_service_up(client: Any, celery_worker_proc: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert {name for name, check in body["checks"].items() if check["ok"]} == {
        "database",
        "redis",
        "worker",
        "consultations",
    }
    assert body["checks"]["database"]["detail"].startswith("pgvector")


@pytest.mark.django_db
def test_healthz_is_503_and_names_the_service_when_redis_is_down(
    client: Any, settings: Any, tmp_path: Any
) -> None:
    settings.REDIS_CELERY_URL = f"unix://{tmp_path}/no-redis-here.sock"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "down"
    assert body["checks"]["redis"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True


@pytest.mark.django_db
def test_healthz_is_503_when_no_worker_answers(client: Any, monkeypatch: Any) -> None:
    # No worker process in this test: what the broker says when nobody answers a ping.
    monkeypatch.setattr(health.celery_app.control, "broadcast", lambda *a, **kw: [])
    response = client.get("/healthz")
    assert response.status_code == 503
    worker = response.json()["checks"]["worker"]
    assert (worker["ok"], worker["detail"]) == (False, "LookupError")
    assert worker["latency_ms"] >= 0


def _ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/ws/notifications/"


@pytest.mark.django_db(transaction=True)
def test_websocket_round_trip_through_daphne_and_channels_redis(
    daphne_server: str, client: Any, clinician: Any, colleague: Any
) -> None:
    # given a logged-in clinician's session
    client.force_login(clinician)
    cookie = SimpleCookie()
    cookie["sessionid"] = client.cookies["sessionid"].value
    headers = {"Cookie": cookie.output(header="", sep=";").strip(), "Origin": daphne_server}
    with connect(_ws_url(daphne_server), additional_headers=headers, open_timeout=10) as ws:
        # when this process broadcasts to that user, and to a colleague, over channels-redis
        in_thread(user_notify, user_id=colleague.pk, level="info", text="for the colleague only")
        in_thread(user_notify, user_id=clinician.pk, level="success", text="Plan <b>ready</b>")
        # then only the clinician's notice arrives, escaped, as an htmx out-of-band fragment
        fragment = ws.recv(timeout=10)
    assert 'hx-swap-oob="beforeend"' in fragment
    assert "Plan &lt;b&gt;ready&lt;/b&gt;" in fragment
    assert "colleague" not in fragment


@pytest.mark.django_db(transaction=True)
def test_websocket_refuses_anonymous_connections(daphne_server: str) -> None:
    # A consumer that closes before accepting makes Daphne refuse the handshake.
    with pytest.raises(InvalidStatus) as excinfo:
        connect(
            _ws_url(daphne_server), additional_headers={"Origin": daphne_server}, open_timeout=10
        )
    assert excinfo.value.response.status_code == 403


def test_tasks_publish_through_the_configured_broker_in_any_process() -> None:
    # A process that never loads the URLconf (a command, a benchmark) must still publish to
    # our Redis, not to Celery's unconfigured default app (AMQP on localhost).
    import subprocess
    import sys

    from tests.stack import REPO

    code = (
        "import django; django.setup(); from consult.tasks import consultation_run;"
        "print(consultation_run.app.conf.broker_url)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert out.stdout.strip().startswith(("redis", "rediss", "redis+socket"))
