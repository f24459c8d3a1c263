"""Consultations on the real database: persistence, sequence, immutability, LLM mode over
HTTP, cancel, the CLI, and a worker killed mid-run."""

from __future__ import annotations

import json
import threading
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, transaction

from consult.models import (
    AgentMessage,
    Consultation,
    ConsultationEvent,
    ConsultationStatus,
    EvidenceNode,
    Plan,
    Round,
)
from consult.services.consultations import (
    ConsultationError,
    consultation_cancel,
    consultation_run,
    consultation_start,
)
from consult.services.dossiers import case_import
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import assert_unbroken, submitted
from tests.fixtures.seed import load_seed
from tests.fixtures.waiting import wait_until
from tests.llm_stub import StubReply
from tests.paths import PUBLIC_CASES, REPO

pytestmark = pytest.mark.slow

# How long a held-back LLM reply waits at most: a run that wrongly waits for it fails slowly
# instead of hanging.
REPLY_DEADLINE_S = 60


# The engine's step store writes from asgiref's worker thread, as in production, so these
# tests commit (transaction=True) for that thread to see their data.
@pytest.mark.django_db(transaction=True)
def test_guideline_consultation_persists_every_step_in_sequence(clinician: Any, team: Any) -> None:
    load_seed()
    dossier = submitted(clinician, team, "pub-hcc-03.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    # when it runs
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    consultation.refresh_from_db()
    # then the plan is stored, hashed, with the staging the calculators derive
    assert consultation.status == ConsultationStatus.COMPLETED
    plan = consultation.plan
    assert plan.payload["format"] == "mdtboard.plan/1"
    assert plan.payload["staging"]["bclc"] == "C"
    assert len(plan.content_hash) == 64
    # every event persisted with an unbroken sequence, one message per step
    assert_unbroken(consultation)
    kinds = set(
        ConsultationEvent.objects.filter(consultation=consultation).values_list("kind", flat=True)
    )
    assert {
        "intake",
        "triage",
        "retrieval",
        "message",
        "critique",
        "residual",
        "vote",
        "consensus",
        "gate",
        "review",
        "plan",
        "status",
    } <= kinds
    assert EvidenceNode.objects.filter(consultation=consultation, kind="evidence").exists()
    # (Safety objects in round 1 to bevacizumab with untreated varices; Treatment answers in
    # round 2, where the board agrees and stops)
    last = plan.payload["rounds"]
    assert last == 2
    assert Round.objects.filter(consultation=consultation, number=last, stopped=True).exists()
    # and the versions used are recorded
    assert consultation.kb_versions
    assert "treatment" in consultation.prompt_versions
    assert AuditEvent.objects.filter(
        action="consultation.completed", object_id=str(consultation.pk)
    ).exists()
    # running it again changes nothing
    assert consultation_run(consultation_id=consultation.pk) == "skipped"
    with (
        pytest.raises(DatabaseError, match="permission denied for table consult_plan"),
        transaction.atomic(),
    ):
        Plan.objects.filter(pk=plan.pk).update(payload={})


@pytest.mark.django_db
def test_consultation_needs_a_submitted_dossier(clinician: Any, team: Any) -> None:
    path = PUBLIC_CASES / "pub-lung-03.json"
    dossier = case_import(
        actor=clinician, team=team, raw=path.read_bytes(), filename=path.name
    ).dossier
    with pytest.raises(ConsultationError, match="Submit the dossier first"):
        consultation_start(actor=clinician, dossier=dossier, enqueue=False)


@pytest.mark.django_db(transaction=True)
def test_cancelled_consultation_stops_and_says_so(
    clinician: Any, colleague: Any, team: Any
) -> None:
    load_seed()
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    with pytest.raises(ConsultationError, match="Only the clinician who started"):
        consultation_cancel(actor=colleague, consultation=consultation)
    consultation_cancel(actor=clinician, consultation=consultation)
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.CANCELLED
    assert consultation_run(consultation_id=consultation.pk) == "skipped"
    assert ConsultationEvent.objects.filter(consultation=consultation, kind="cancelled").exists()


@pytest.mark.django_db(transaction=True)
def test_llm_consultation_runs_the_protocol_against_the_stub_over_http(
    clinician: Any, team: Any, llm_env: Any
) -> None:
    load_seed()
    # given the safety member disagrees in round 1, in its review and on the draft
    from tests.consult.llm_responder import clinical_responder

    def agrees(role: str, r: int) -> bool:
        return not (role == "safety" and r == 1)

    llm_env.switch.responder = clinical_responder(vote=agrees, review=agrees)
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    consultation.refresh_from_db()
    plan = consultation.plan.payload
    # then a second round ran with the residual context, and the plan came from the LLM turns
    assert plan["engine"] == "llm:stub-model"
    assert plan["rounds"] == 2
    assert Round.objects.filter(consultation=consultation).count() == 2
    assert "osimertinib" in json.dumps(plan["recommendation"]).lower()
    messages = AgentMessage.objects.filter(consultation=consultation, kind="report")
    assert messages.exists()
    # each report asked the model, or (round 2) carried a member's unchanged round-1 report
    # over without a call: no residual item concerned that member (issue 27)
    called = [m for m in messages if not m.payload.get("carried_over")]
    carried = [m for m in messages if m.payload.get("carried_over")]
    assert all(m.tokens_prompt > 0 and m.model_name == "stub-model" for m in called)
    assert all(m.round == 2 and m.tokens_prompt == 0 for m in carried)
    # Treatment answers Safety's objection; Safety, to whom nothing was objected (Treatment
    # agreed with its report), keeps its report
    assert "treatment" in {m.role for m in called if m.round == 2}
    assert "safety" in {m.role for m in carried}
    assert consultation.tokens_prompt > 0
    assert_unbroken(consultation)


@pytest.mark.django_db(transaction=True)
def test_cancel_interrupts_members_waiting_on_the_llm(
    clinician: Any, team: Any, llm_env: Any
) -> None:
    load_seed()
    from tests.consult.llm_responder import clinical_responder

    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)

    replies = threading.Event()

    def cancel(request: Any) -> None:
        # the clinician presses Cancel while the cross-reviews are out; they are answered only
        # once the run is over, so a run that waited for them would hang until the deadline
        Consultation.objects.filter(pk=consultation.pk).update(cancel_requested=True)
        replies.wait(timeout=REPLY_DEADLINE_S)

    llm_env.switch.responder = _on_cross_review(cancel, clinical_responder())
    try:
        assert consultation_run(consultation_id=consultation.pk) == "cancelled"
    finally:
        replies.set()
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.CANCELLED
    keys = set(
        AgentMessage.objects.filter(consultation=consultation).values_list("step_key", flat=True)
    )
    # the reports finished before the cancel are kept; the reviews asked of the LLM were not
    # waited for (a specialist's check made by its domain's rules asks nothing and may be kept),
    # and nothing after them was asked for
    assert "r1.report.treatment" in keys
    asked = ("safety", "diagnostic", "treatment")
    assert not [k for k in keys if k.startswith("r1.review.") and k.split(".")[2] in asked]
    assert "r1.synthesis" not in keys
    assert not Plan.objects.filter(consultation=consultation).exists()
    assert ConsultationEvent.objects.filter(
        consultation=consultation, kind="status", payload__status="cancelled"
    ).exists()
    assert_unbroken(consultation)


def _on_cross_review(react: Any, answer: Any) -> Any:
    """A stub responder that calls ``react(request)`` on every cross-review request."""

    def respond(request: Any) -> Any:
        schema = (request.json_schema or {}).get("title")
        if schema in ("CrossReview", "CrossReviews") or '"title": "CrossReview' in request.system:
            from django.db import connection

            try:
                react(request)
            finally:
                connection.close()  # the stub's thread: leave no connection behind
        return answer(request)

    return respond


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_members_wait_on_a_slow_llm(
    clinician: Any, team: Any, llm_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_seed()
    from datetime import timedelta

    from django.utils import timezone

    from consult.journal import lease
    from tests.consult.llm_responder import clinical_responder

    # given a lease shorter than one LLM call
    monkeypatch.setattr(lease, "LEASE", timedelta(seconds=3))
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    held: list[bool] = []

    def lease_end() -> Any:
        return Consultation.objects.get(pk=consultation.pk).lease_until

    def slow_review(request: Any) -> None:
        # the reviewer thinks for longer than the lease the run held when it asked lasts
        first = lease_end()
        assert first is not None
        wait_until(lambda: timezone.now() > first, timeout=10, what="the first lease to end")
        lease_until = lease_end()
        held.append(lease_until is not None and lease_until > timezone.now())

    llm_env.switch.responder = _on_cross_review(slow_review, clinical_responder())
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    # then the waiting worker kept its lease: a worker starting meanwhile would not take over
    assert held
    assert all(held)


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_lease_was_taken_over_stops_and_leaves_the_run_alone(
    clinician: Any, team: Any, llm_env: Any
) -> None:
    load_seed()
    from datetime import timedelta

    from django.utils import timezone

    from tests.consult.llm_responder import clinical_responder

    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)

    def taken_over(request: Any) -> None:
        # another worker claims the run (as if this one's lease had lapsed)
        Consultation.objects.filter(pk=consultation.pk).update(
            lease_owner="elsewhere:1", lease_until=timezone.now() + timedelta(minutes=5)
        )
        # a reply this run stops waiting for once it sees the takeover: it comes only after
        replies.wait(timeout=REPLY_DEADLINE_S)

    replies = threading.Event()
    llm_env.switch.responder = _on_cross_review(taken_over, clinical_responder())
    try:
        assert consultation_run(consultation_id=consultation.pk) == "skipped"
    finally:
        replies.set()
    consultation.refresh_from_db()
    # then this worker wrote nothing more and left the run to its new owner
    assert consultation.status == ConsultationStatus.RUNNING
    assert consultation.lease_owner == "elsewhere:1"
    keys = set(
        AgentMessage.objects.filter(consultation=consultation).values_list("step_key", flat=True)
    )
    assert not any(key.startswith("r1.review.") for key in keys)
    assert not Plan.objects.filter(consultation=consultation).exists()
    assert_unbroken(consultation)


@pytest.mark.django_db(transaction=True)
def test_a_failed_write_fails_the_run_and_keeps_what_was_written(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_seed()
    from consult.journal.store import DbStepStore

    written = DbStepStore._commit

    def commit(self: Any, steps: Any) -> bool:
        if any(done.key == "r1.synthesis" for done, _ in steps):
            raise DatabaseError("disk full")
        return written(self, steps)

    monkeypatch.setattr(DbStepStore, "_commit", commit)
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "failed"
    consultation.refresh_from_db()
    # then the run failed with the error's type only, and no plan stands without its journal
    assert consultation.status == ConsultationStatus.FAILED
    assert consultation.error == "DatabaseError"
    assert not Plan.objects.filter(consultation=consultation).exists()
    keys = set(
        AgentMessage.objects.filter(consultation=consultation).values_list("step_key", flat=True)
    )
    # the steps written before the failing transaction stay (a resume starts from them)
    assert {"intake", "triage"} <= keys
    assert not {"r1.synthesis", "gate", "plan"} & keys
    assert_unbroken(consultation)


@pytest.mark.django_db(transaction=True)
def test_an_llm_endpoint_misconfigured_after_start_fails_the_run_and_says_why(
    clinician: Any, team: Any, llm_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    # when the worker runs with half of the endpoint's configuration
    monkeypatch.delenv("OPENAI_MODEL")
    assert consultation_run(consultation_id=consultation.pk) == "failed"
    consultation.refresh_from_db()
    # then the run is over (not left "running"), and the board names the missing variable
    assert consultation.status == ConsultationStatus.FAILED
    assert "OPENAI_MODEL is required" in consultation.error
    assert consultation.lease_owner == ""
    assert ConsultationEvent.objects.filter(
        consultation=consultation, kind="status", payload__status="failed"
    ).exists()


@pytest.mark.django_db(transaction=True)
def test_llm_reply_invalid_twice_falls_back_to_the_guideline_engine(
    clinician: Any, team: Any, llm_env: Any
) -> None:
    load_seed()
    default = llm_env.switch.default

    def respond(request: Any) -> Any:
        if request.role == "treatment":
            return StubReply(content="this is not JSON")
        return default(request)

    llm_env.switch.responder = respond
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    consultation_run(consultation_id=consultation.pk)
    treatment = AgentMessage.objects.get(consultation=consultation, step_key="r1.report.treatment")
    assert "LLMInvalidOutput" in treatment.fallback
    # and the two requests the failed turn made are accounted for, not recorded as free
    assert treatment.tokens_prompt > 0
    assert treatment.model_name == "stub-model"
    assert (
        "osimertinib"
        in json.dumps(
            Consultation.objects.get(pk=consultation.pk).plan.payload["recommendation"]
        ).lower()
    )


@pytest.mark.django_db(transaction=True)
def test_runcase_prints_the_plan_as_json(capsys: Any) -> None:
    load_seed()
    out = StringIO()
    call_command("runcase", str(PUBLIC_CASES / "pub-lymph-02.json"), "--format", "json", stdout=out)
    plan = json.loads(out.getvalue())
    assert plan["format"] == "mdtboard.plan/1"
    assert "watch" in json.dumps(plan["recommendation"]).lower()


@pytest.mark.django_db(transaction=True)
def test_runcase_reads_a_prior_therapy_with_line_zero() -> None:
    # given the file once refused ("0 is outside 1-30"): line 0 marks an unnumbered course
    load_seed()
    path = REPO / "tests" / "consult" / "fixtures" / "regressions" / "prior-therapy-line-zero.json"
    out = StringIO()
    # when it is run from the command line
    call_command("runcase", str(path), "--format", "json", stdout=out)
    # then a plan comes back for the relapsed lymphoma
    plan = json.loads(out.getvalue())
    assert plan["case_id"] == "regression-prior-therapy-line-zero"
    assert plan["recommendation"]["components"]


@pytest.mark.django_db(transaction=True)
def test_runcase_runs_a_consultation_on_a_fhir_bundle() -> None:
    # given HL7's mCODE example record of a breast cancer patient (Jenny M)
    load_seed()
    path = REPO / "tests" / "fixtures" / "fhir" / "Bundle-mcode-patient-bundle-jenny-m.json"
    out = StringIO()
    # when it is run from the command line as a case file would be
    call_command("runcase", str(path), "--format", "json", stdout=out)
    # then the board deliberates on the mapped breast case and asks for what the record lacks
    plan = json.loads(out.getvalue())
    assert plan["format"] == "mdtboard.plan/1"
    assert plan["case_id"].startswith("fhir-")
    assert plan["staging"]["breast_subtype"] is None  # ER/HER2 given without the grade
    assert plan["needs_data"]


@pytest.mark.django_db(transaction=True)
def test_evaluate_reports_every_public_case_concordant() -> None:
    load_seed()
    out = StringIO()
    call_command("evaluate", "--cases", str(PUBLIC_CASES), stdout=out)
    assert "public      12/12  concordant" in out.getvalue()
    assert "total       12/12  concordant (guideline)" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_evaluate_reports_a_broken_case_file_and_goes_on(tmp_path: Any) -> None:
    load_seed()
    (tmp_path / "a-broken.json").write_text('{"format": "mdtboard.case/1", "case_id": ')
    (tmp_path / "b-list.json").write_text("[1, 2]")
    (tmp_path / "c-good.json").write_bytes((PUBLIC_CASES / "pub-lymph-02.json").read_bytes())
    out = StringIO()
    with pytest.raises(CommandError, match="not every case is concordant"):
        call_command("evaluate", "--cases", str(tmp_path), stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line[:2] in ("a-", "b-", "c-")]
    assert lines[0].startswith("a-broken")
    assert "ERROR" in lines[0]
    assert lines[1].startswith("b-list")
    assert "ERROR" in lines[1]
    assert lines[2].startswith("c-good")
    assert "concordant" in lines[2]
    assert "Watchful waiting" in lines[2]  # the primary pathway is in the table
    assert "1/3 concordant" in out.getvalue()


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_consultation_resumes_after_restart(
    clinician: Any, team: Any, llm_env: Any, celery_worker_proc: Any
) -> None:
    load_seed()
    from tests.consult.llm_responder import clinical_responder

    # given an LLM consultation whose every call takes a while
    llm_env.switch.responder = clinical_responder(delay_s=0.4)
    dossier = submitted(clinician, team, "pub-hcc-02.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm")
    # when the worker is killed after some steps were committed
    wait_until(
        lambda: AgentMessage.objects.filter(consultation=consultation).count() >= 6,
        timeout=60,
        what="the worker to start the consultation",
    )
    celery_worker_proc.kill()
    done_before = set(
        AgentMessage.objects.filter(consultation=consultation).values_list("step_key", flat=True)
    )
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.RUNNING
    # and a worker starts again
    celery_worker_proc.restart()
    wait_until(
        lambda: Consultation.objects.get(pk=consultation.pk).status != ConsultationStatus.RUNNING,
        timeout=120,
        what="the consultation to be resumed",
    )
    # then it completed, with an unbroken sequence and no step done twice
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.COMPLETED
    assert_unbroken(consultation)
    resumed = ConsultationEvent.objects.filter(
        consultation=consultation, kind="status", payload__resumed=True
    )
    assert resumed.exists()
    assert done_before <= set(
        AgentMessage.objects.filter(consultation=consultation).values_list("step_key", flat=True)
    )


@pytest.mark.django_db
def test_start_with_the_broker_down_keeps_the_consultation_queued_without_an_error(
    clinician: Any,
    team: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # given a broker that refuses the task (Redis down)
    from consult import tasks

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("redis is down")

    monkeypatch.setattr(tasks.consultation_run, "delay", refuse)
    dossier = submitted(clinician, team, "pub-hcc-02.json")
    # when the clinician starts a consultation
    with django_capture_on_commit_callbacks(execute=True):
        consultation = consultation_start(actor=clinician, dossier=dossier)
    # then no error reaches them and the consultation waits, queued, for a worker to recover it
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.QUEUED


def _drop_connection_at(step: str, times: int) -> Any:
    """A step-store commit that, the first ``times`` times it writes ``step``, has its
    database backend terminated under it (what a database restart or failover does)."""
    from django.db import connection

    from consult.journal.store import DbStepStore

    written = DbStepStore._commit
    dropped = {"n": 0}

    def commit(self: Any, steps: Any) -> bool:
        if dropped["n"] < times and any(done.key == step for done, _ in steps):
            dropped["n"] += 1
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return written(self, steps)

    return commit


@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_is_resumed_on_a_new_one(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_seed()
    from consult.journal.store import DbStepStore
    from consult.services import consultations

    monkeypatch.setattr(consultations, "DB_RETRY_DELAYS", (0.0, 0.0))
    monkeypatch.setattr(DbStepStore, "_commit", _drop_connection_at("r1.synthesis", times=1))
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    # when the database connection is killed under the run once
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    # then the run resumed from its saved steps and finished with its plan
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.COMPLETED
    assert Plan.objects.filter(consultation=consultation).exists()
    assert_unbroken(consultation)


@pytest.mark.django_db(transaction=True)
def test_a_database_that_stays_away_fails_the_run_with_a_reason_not_running_forever(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_seed()
    from consult.journal.store import DbStepStore
    from consult.services import consultations
    from consult.services.consultations import DB_LOST

    monkeypatch.setattr(consultations, "DB_RETRY_DELAYS", (0.0,))
    monkeypatch.setattr(DbStepStore, "_commit", _drop_connection_at("r1.synthesis", times=99))
    dossier = submitted(clinician, team, "pub-lung-01.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "failed"
    # then the run is over, says why in words a clinician reads, and holds no lease
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.FAILED
    assert consultation.error == DB_LOST[:500]
    assert consultation.lease_owner == ""
    assert_unbroken(consultation)


@pytest.mark.django_db(transaction=True)
def test_the_recovery_sweep_requeues_a_run_whose_lease_lapsed_under_a_live_worker(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import socket
    from datetime import timedelta

    from django.utils import timezone

    from consult import tasks
    from consult.services.consultations import consultations_recover

    requeued: list[int] = []
    monkeypatch.setattr(tasks.consultation_run, "delay", requeued.append)
    dossier = submitted(clinician, team, "pub-lung-01.json")
    # given a run left "running" by a task that died after its last write (its worker, this
    # process, is alive) and a run that is merely waiting in the queue
    stuck = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    Consultation.objects.filter(pk=stuck.pk).update(
        status=ConsultationStatus.RUNNING,
        lease_owner=f"{socket.gethostname()}:{os.getpid()}",
        lease_until=timezone.now() - timedelta(seconds=1),
    )
    waiting = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    Consultation.objects.filter(pk=waiting.pk).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    # when the periodic sweep runs, then only the lapsed run is requeued
    assert consultations_recover(queued=False) == [stuck.pk]
    assert requeued == [stuck.pk]
    # and the sweep is what a started worker keeps running, every few seconds; while messages
    # wait in the consultations queue, a queued run is left to them
    monkeypatch.setattr(tasks, "_consultations_waiting", lambda: 1)
    stop = threading.Event()
    sweeper = threading.Thread(target=tasks._sweep, args=(stop, 0.01), daemon=True)
    sweeper.start()
    try:
        wait_until(lambda: len(requeued) >= 3, timeout=10, interval=0.02, what="three sweeps")
    finally:
        stop.set()
    sweeper.join(timeout=5)
    assert requeued[:3] == [stuck.pk] * 3


@pytest.mark.django_db(transaction=True)
def test_the_sweep_requeues_a_run_whose_message_was_lost_once_the_queue_is_empty(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from consult import tasks

    requeued: list[int] = []
    monkeypatch.setattr(tasks.consultation_run, "delay", requeued.append)
    dossier = submitted(clinician, team, "pub-lung-01.json")
    # given a run started while the broker was down: saved as queued, its message never sent
    lost = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    Consultation.objects.filter(pk=lost.pk).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    # when the sweep finds the broker's consultations queue empty
    monkeypatch.setattr(tasks, "_consultations_waiting", lambda: 0)
    stop = threading.Event()
    sweeper = threading.Thread(target=tasks._sweep, args=(stop, 0.01), daemon=True)
    sweeper.start()
    try:
        wait_until(lambda: requeued, timeout=10, interval=0.02, what="the lost run to be requeued")
    finally:
        stop.set()
    sweeper.join(timeout=5)
    # then the lost run is handed to the workers again
    assert requeued[:1] == [lost.pk]
