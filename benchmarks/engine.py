"""Deliberation figures: orchestration overhead against a fixed-delay LLM stub, guideline
consultations end to end, and concurrent consultations on two real workers."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from typing import Any

from django.core.management import call_command

from benchmarks.common import PUBLIC_CASES, REPO, emit, p50, p95

LLM_DELAY_S = 1.0


def _bench_user() -> tuple[Any, Any]:
    from mdtboard.accounts.models import User
    from mdtboard.accounts.roles import Role
    from mdtboard.accounts.services import team_get_or_create, user_create

    team = team_get_or_create(name="Bench MDT")
    user = User.objects.filter(email="bench-engine@bench.test").first() or user_create(
        email="bench-engine@bench.test", role=Role.CLINICIAN, teams=[team]
    )
    return user, team


def _submitted(user: Any, team: Any, name: str, suffix: str) -> Any:
    import json

    from consult.services.dossiers import case_import, dossier_submit

    document = json.loads((PUBLIC_CASES / name).read_text())
    document["case_id"] = f"{document['case_id']}-{suffix}"
    result = case_import(actor=user, team=team, raw=json.dumps(document).encode(), filename=name)
    assert result.dossier is not None, result.errors  # noqa: S101 - benchmark precondition
    dossier_submit(actor=user, dossier=result.dossier)
    return result.dossier


def _guideline_end_to_end(user: Any, team: Any) -> None:
    from consult.services.consultations import consultation_run, consultation_start

    samples = []
    consultations = []
    for index, path in enumerate(sorted(PUBLIC_CASES.glob("*.json"))):
        dossier = _submitted(user, team, path.name, f"g{index}")
        started = time.perf_counter()
        consultation = consultation_start(actor=user, dossier=dossier, enqueue=False)
        consultation_run(consultation_id=consultation.pk)
        samples.append(time.perf_counter() - started)
        consultations.append(consultation.pk)
    emit("guideline_consultation_p50", p50(samples), "s", "< 3 s")
    emit("guideline_consultation_p95", p95(samples), "s")
    # Issue 23: every guideline plan re-runs its choice with each borderline or missing fact
    # varied (decisive facts); the consultations above include those variations.
    from consult.models import Plan

    plans = [p.payload for p in Plan.objects.filter(consultation_id__in=consultations)]
    tried = [p.get("variations_tried") for p in plans]
    emit("plan_with_variations_p95", p95(samples), "s (public cases)", "< 3 s")
    emit(
        "variations_tried_per_plan",
        p50([float(t) for t in tried if isinstance(t, int)] or [0.0]),
        f"median ({sum(isinstance(t, int) for t in tried)} of {len(plans)} plans with variations)",
    )
    emit(
        "decisive_facts_per_plan",
        sum(len(p.get("decisive_facts") or []) for p in plans) / (len(plans) or 1),
        "mean",
    )


def _llm_consultation(user: Any, team: Any, suffix: str) -> tuple[Any, float]:
    from consult.services.consultations import consultation_run, consultation_start

    dossier = _submitted(user, team, "pub-lung-01.json", suffix)
    consultation = consultation_start(actor=user, dossier=dossier, engine="llm", enqueue=False)
    started = time.perf_counter()
    consultation_run(consultation_id=consultation.pk)
    return consultation, time.perf_counter() - started


def _critical_path(consultation: Any) -> tuple[float, int]:
    """Per layer of concurrent LLM calls (a round's reports, its reviews, the synthesis, its
    votes), the slowest call as the client measured it; summed over the layers."""
    from consult.models import AgentMessage

    layers: dict[tuple[int, str], float] = {}
    for round_no, kind, latency in AgentMessage.objects.filter(
        consultation=consultation
    ).values_list("round", "kind", "latency_ms"):
        if latency:
            layer = (round_no, kind)
            layers[layer] = max(layers.get(layer, 0.0), latency / 1000)
    return sum(layers.values()), len(layers)


def _llm_overhead(user: Any, team: Any) -> None:
    from tests.consult.llm_responder import clinical_responder
    from tests.llm_stub import StubLLM

    with StubLLM(clinical_responder(), delay_s=LLM_DELAY_S) as stub:
        previous = {k: os.environ.get(k) for k in stub.env()}
        os.environ.update(stub.env())
        try:
            _llm_consultation(user, team, "llm-warm-up")  # imports, clients, schemas: once
            runs = [_llm_consultation(user, team, f"llm{i}") for i in range(3)]
        finally:
            for key, value in previous.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    ratios, overheads = [], []
    for consultation, wall in runs:
        critical, layers = _critical_path(consultation)
        ratios.append(wall / critical)
        overheads.append(wall - critical)
    emit("llm_wall_over_critical_path", p50(ratios), "ratio (median of 3)", "< 1.08")
    emit("orchestration_overhead", p50(overheads), "s (median of 3)", "< 0.3 s")
    emit("llm_layers_on_critical_path", layers, "layers")
    emit("llm_calls_per_consultation", len(stub.requests) / 4, "calls")


def _concurrent(user: Any, team: Any, *, count: int) -> None:
    from consult.models import Consultation, ConsultationStatus
    from consult.services.consultations import consultation_start

    env = {**os.environ, "MDTBOARD_DB_NAME": "mdtboard_bench", "PYTHONUNBUFFERED": "1"}
    workers = [
        subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter and our app
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mdtboard",
                "worker",
                "--pool",
                "solo",
                "--hostname",
                f"bench{i}-{os.getpid()}@%h",
                "--loglevel",
                "WARNING",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(2)
    ]
    try:
        from mdtboard.celery import app

        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5) or []) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        dossiers = [_submitted(user, team, "pub-breast-02.json", f"c{i}") for i in range(count)]
        started = time.perf_counter()
        ids = [consultation_start(actor=user, dossier=d).pk for d in dossiers]
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            open_runs = (
                Consultation.objects.filter(pk__in=ids)
                .exclude(
                    status__in=[
                        ConsultationStatus.COMPLETED,
                        ConsultationStatus.FAILED,
                        ConsultationStatus.CANCELLED,
                    ]
                )
                .count()
            )
            if not open_runs:
                break
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        completed = Consultation.objects.filter(
            pk__in=ids, status=ConsultationStatus.COMPLETED
        ).count()
        emit("concurrent_consultations_completed", completed, f"of {count}", f"{count}")
        emit(
            "concurrent_consultation_throughput",
            completed / elapsed * 60,
            "consultations/min (2 workers)",
        )
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)


def run(*, quick: bool = False) -> None:
    # The knowledge base first: with --only=engine nothing else seeds the bench database, and
    # against an empty one every case abstains ("outside the knowledge base") in a fraction of
    # the time a plan takes, with no decisive fact. Its summary line would break the JSON lines.
    call_command("load_kb_seed", verbosity=0, stdout=io.StringIO())
    user, team = _bench_user()
    _guideline_end_to_end(user, team)
    _llm_overhead(user, team)
    _concurrent(user, team, count=6 if quick else 20)
