"""``make soak``: fault injection under load, on loopback, for a bounded time.

Daphne, two Celery workers (solo pool, as the tests run them) and the stub LLM answering about
30 % of requests with a fault (503, invalid JSON, or a reply slower than the client's timeout).
N LLM consultations are kept in flight for S seconds, each watched by M WebSocket watchers that
drop their connection at random and come back with ``resume`` of their last sequence number.
On a schedule: one worker is killed (SIGKILL) and replaced; every worker is killed and /healthz
must say that no worker is alive before new ones start; Redis is restarted; the app's database
connections are terminated. At the end (bounded wait) every consultation must have finished,
a failed one with a reason, and every watcher must have received exactly the sequence numbers
the database holds, once each and in order. Figures are JSON lines, as ``make bench`` prints;
the exit status is non-zero if anything was lost, duplicated, out of order or stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, emit, p50, p95
from tests.stack import LOG_DIR

SEQ = re.compile(r'id="board-seq"\s+data-seq="(\d+)"')
FAULT_RATE = 0.3
LLM_TIMEOUT_S = 2.0


# --- the sequence check (pure; unit-tested) ------------------------------------------------------
@dataclass
class SeqReport:
    missing: list[int]
    duplicated: list[int]
    out_of_order: int  # receipts whose seq is lower than one received before them
    unexpected: list[int]  # received, but not in the database

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicated or self.out_of_order or self.unexpected)


def seq_check(received: list[int], expected: list[int]) -> SeqReport:
    """Compare what one watcher received, in arrival order, with the database's sequence."""
    counts = Counter(received)
    wanted = set(expected)
    out_of_order = sum(1 for before, now in itertools.pairwise(received) if now < before)
    return SeqReport(
        missing=sorted(wanted - set(received)),
        duplicated=sorted(seq for seq, n in counts.items() if n > 1),
        out_of_order=out_of_order,
        unexpected=sorted(set(received) - wanted),
    )


# --- the stub LLM with faults --------------------------------------------------------------------
class FaultyResponder:
    """The clinical responder, except that about ``rate`` of the requests get a fault."""

    KINDS = ("http_503", "invalid_json", "timeout")

    def __init__(self, rate: float, seed: int) -> None:
        from tests.consult.llm_responder import clinical_responder

        self.answer = clinical_responder(delay_s=0.2)
        self.rate = rate
        self.rng = random.Random(seed)  # noqa: S311 - a fault schedule, not a secret
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def __call__(self, request: Any) -> Any:
        from tests.llm_stub import StubReply

        with self.lock:
            fault = self.rng.choice(self.KINDS) if self.rng.random() < self.rate else "ok"
            self.counts[fault] += 1
        if fault == "http_503":
            return StubReply(status=503, headers={"Retry-After": "0"})
        if fault == "invalid_json":
            return StubReply(content="this is not JSON {")
        if fault == "timeout":
            return StubReply(content="{}", delay_s=LLM_TIMEOUT_S + 1.0)
        return self.answer(request)


# --- processes -----------------------------------------------------------------------------------
@dataclass
class Stack:
    database: str
    env: dict[str, str]
    workers: list[Any] = field(default_factory=list)
    daphne: Any = None
    base: str = ""
    started: int = 0
    dead_workers: list[int] = field(default_factory=list)

    def start_worker(self, *, wait: bool = True) -> Any:
        """A new worker; without ``wait`` the soak goes on while it starts (a supervisor's
        restart), so that faults and submissions keep their schedule."""
        from mdtboard.celery import app
        from tests.stack import _spawn, child_env

        self.started += 1
        name = f"soak{self.started}-{os.getpid()}"
        proc = _spawn(
            f"soak-worker-{self.started}",
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mdtboard",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "INFO",
                "--hostname",
                f"{name}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            child_env(self.database, self.env),
        )
        self.workers.append(proc)
        if not wait:
            return proc
        deadline = time.monotonic() + 90
        while not app.control.ping(timeout=0.5, destination=[f"{name}@{socket.gethostname()}"]):
            if proc.popen.poll() is not None:
                raise RuntimeError(f"Celery worker exited early:\n{proc.tail()}")
            if time.monotonic() > deadline:
                proc.stop()
                raise RuntimeError(f"Celery worker did not answer within 90 s:\n{proc.tail()}")
        return proc

    def kill_worker(self, proc: Any) -> None:
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait()
        self.workers.remove(proc)
        self.dead_workers.append(proc.popen.pid)

    def stop(self) -> None:
        for proc in self.workers:
            proc.stop(timeout=30)
        if self.daphne is not None:
            self.daphne.stop()


def rss_mb(pid: int) -> float | None:
    try:
        import psutil

        return float(psutil.Process(pid).memory_info().rss) / 2**20
    except ImportError:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
    except Exception:  # noqa: BLE001 - the process is gone
        return None
    return None


# --- watchers ------------------------------------------------------------------------------------
@dataclass
class Watcher:
    consultation_id: int
    received: list[int] = field(default_factory=list)
    # seq: (received at, when the connection that brought it sent its resume)
    arrivals: dict[int, tuple[float, float]] = field(default_factory=dict)
    connects: int = 0
    drops: int = 0
    forced_resumes: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    final_seq: int | None = None  # set once the consultation finished
    final_set_at: float = 0.0
    done: bool = False

    @property
    def last(self) -> int:
        return self.received[-1] if self.received else 0


async def _watch(watcher: Watcher, url: str, cookie: str, rng: random.Random, stop: Any) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus, WebSocketException

    origin = url.split("/ws/")[0].replace("ws://", "http://")
    while not stop.is_set():
        try:
            async with connect(
                url,
                additional_headers={"Cookie": cookie, "Origin": origin},
                open_timeout=20,
                max_size=None,
            ) as ws:
                watcher.connects += 1
                resumed_at = time.time()
                await ws.send(json.dumps({"type": "resume", "after": watcher.last}))
                drop_at = time.monotonic() + rng.uniform(4, 15)
                while not stop.is_set():
                    if watcher.final_seq is not None and watcher.last >= watcher.final_seq:
                        watcher.done = True
                        return
                    if time.monotonic() > drop_at and watcher.final_seq is None:
                        watcher.drops += 1  # a browser tab losing its connection
                        break
                    if (
                        watcher.final_seq is not None
                        and time.monotonic() - watcher.final_set_at > 10
                    ):
                        # Live delivery did not bring the last event: reconnect, as the page
                        # does, and count it.
                        watcher.forced_resumes += 1
                        watcher.final_set_at = time.monotonic()
                        break
                    try:
                        message = await asyncio.wait_for(ws.recv(), timeout=0.5)
                    except TimeoutError:
                        continue
                    now = time.time()
                    for match in SEQ.finditer(str(message)):
                        seq = int(match.group(1))
                        watcher.received.append(seq)
                        watcher.arrivals.setdefault(seq, (now, resumed_at))
        except InvalidStatus as exc:  # the handshake refused (HTTP status)
            watcher.errors[f"handshake_http_{exc.response.status_code}"] += 1
        except (OSError, TimeoutError, WebSocketException) as exc:
            watcher.errors[type(exc).__name__] += 1
        await asyncio.sleep(rng.uniform(0.2, 1.5))


class WatcherPool:
    """An event loop on a thread of its own, running every watcher."""

    def __init__(self, base: str, cookie: str, seed: int) -> None:
        self.ws_base = base.replace("http://", "ws://")
        self.cookie = cookie
        self.rng = random.Random(seed)  # noqa: S311 - a disconnect schedule, not a secret
        self.loop = asyncio.new_event_loop()
        self.stop = threading.Event()
        self.watchers: list[Watcher] = []
        self.tasks: list[Any] = []
        self.thread = threading.Thread(target=self.loop.run_forever, name="soak-watchers")
        self.thread.start()

    def watch(self, consultation_id: int, count: int) -> list[Watcher]:
        url = f"{self.ws_base}/ws/consultations/{consultation_id}/"
        new = [Watcher(consultation_id) for _ in range(count)]
        for watcher in new:
            rng = random.Random(self.rng.random())  # noqa: S311
            self.tasks.append(
                asyncio.run_coroutine_threadsafe(
                    _watch(watcher, url, self.cookie, rng, self.stop), self.loop
                )
            )
        self.watchers.extend(new)
        return new

    def close(self) -> None:
        self.stop.set()
        for task in self.tasks:
            with contextlib.suppress(Exception):  # counted per watcher already
                task.result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


# --- faults --------------------------------------------------------------------------------------
def _healthz(base: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:  # noqa: S310
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def fault_kill_one(stack: Stack, log: dict[str, Any]) -> None:
    stack.kill_worker(stack.workers[0])
    stack.start_worker(wait=False)
    log["worker_killed"] = log.get("worker_killed", 0) + 1


def fault_no_worker(stack: Stack, log: dict[str, Any]) -> None:
    """Kill every worker, check that /healthz says no worker is alive, start two again."""
    for proc in list(stack.workers):
        stack.kill_worker(proc)
    log["worker_killed"] = log.get("worker_killed", 0) + 2
    deadline = time.monotonic() + 20
    reported = False
    while time.monotonic() < deadline and not reported:
        status, body = _healthz(stack.base)
        check = body.get("checks", {}).get("worker", {})
        reported = status == 503 and check.get("ok") is False
        if not reported:
            time.sleep(0.5)
    log["healthz_reported_no_worker"] = reported
    stack.start_worker(wait=False)
    stack.start_worker(wait=False)


def fault_redis_restart(log: dict[str, Any]) -> None:
    import redis
    from django.conf import settings

    from mdtboard import embedded
    from mdtboard.celery import app

    var_dir = Path(settings.VAR_DIR)
    if not embedded.stop_redis(var_dir):
        log["redis_restart_error"] = "the embedded Redis was not running"
        return
    time.sleep(1.0)
    embedded.ensure_redis(var_dir)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            app.control.ping(timeout=0.2)
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    log["redis_restarted"] = log.get("redis_restarted", 0) + 1


def fault_drop_db(log: dict[str, Any]) -> None:
    from django.db import connection

    from mdtboard.core.dbroles import database_owner

    # As the owner: the app's role may not signal other roles' backends (autovacuum's).
    with database_owner(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        terminated = sum(1 for (ok,) in cursor.fetchall() if ok)
    log["db_backends_terminated"] = log.get("db_backends_terminated", 0) + terminated


# --- consultations -------------------------------------------------------------------------------
CASES = ("pub-lung-01.json", "pub-breast-02.json", "pub-hcc-02.json", "pub-lymph-02.json")


def _start(user: Any, team: Any, index: int) -> int:
    from benchmarks.engine import _submitted
    from consult.services.consultations import consultation_start

    dossier = _submitted(user, team, CASES[index % len(CASES)], f"soak{os.getpid()}-{index}")
    return int(consultation_start(actor=user, dossier=dossier, engine="llm").pk)


def _open(ids: list[int]) -> list[int]:
    from consult.models import Consultation

    return list(
        Consultation.objects.filter(pk__in=ids)
        .exclude(status__in=["completed", "failed", "cancelled"])
        .values_list("pk", flat=True)
    )


def _load_seed() -> None:
    """The shipped knowledge base, without queuing embedding work (keyword retrieval ranks)."""
    from unittest import mock

    from knowledge.models import UnitVersion
    from knowledge.services import bundle_import, bundle_parse
    from knowledge.tasks import versions_embed_task

    if UnitVersion.objects.filter(status="published").exists():
        return
    seed = REPO / "knowledge" / "seed"
    raw = b"\n---\n".join(p.read_bytes() for p in sorted(seed.glob("*.yaml")))
    bundle, errors = bundle_parse(raw, filename="seed.yaml")
    assert bundle is not None, errors  # noqa: S101 - soak precondition
    with mock.patch.object(versions_embed_task, "delay"):
        bundle_import(actor=None, bundle=bundle, publish=True, reason="soak seed")


def run(*, consultations: int, watchers: int, seconds: float, seed: int = 12) -> int:
    from django.conf import settings
    from django.test import Client

    from benchmarks.engine import _bench_user
    from consult.models import Consultation, ConsultationEvent
    from mdtboard.celery import app
    from tests.llm_stub import StubLLM
    from tests.stack import start_daphne

    _load_seed()
    app.control.purge()
    user, team = _bench_user()
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"

    responder = FaultyResponder(FAULT_RATE, seed)
    stub = StubLLM(responder).start()
    database = str(settings.DATABASES["default"]["NAME"])
    env = stub.env(OPENAI_TIMEOUT_S=str(LLM_TIMEOUT_S), OPENAI_MAX_RETRIES="2")
    os.environ.update(env)  # this process starts LLM consultations, so it checks the endpoint
    stack = Stack(database, env)
    log: dict[str, Any] = {}
    peak: dict[str, float] = {}
    ids: list[int] = []
    pool: WatcherPool | None = None

    def sample_memory() -> None:
        procs = {"daphne": stack.daphne.popen.pid, "soak": os.getpid()}
        for proc in stack.workers:
            procs[proc.name] = proc.popen.pid
        for name, pid in procs.items():
            mb = rss_mb(pid)
            if mb is not None:
                peak[name] = max(peak.get(name, 0.0), mb)

    try:
        stack.daphne, stack.base = start_daphne(database, extra_env=env)
        stack.start_worker()
        stack.start_worker()
        pool = WatcherPool(stack.base, cookie, seed)

        def inject(name: str, fault: Callable[[], None]) -> None:
            sys.stderr.write(f"soak: t={time.monotonic() - started:.0f}s {name}\n")
            try:
                fault()
            except Exception as exc:  # noqa: BLE001 - a fault that could not be injected
                log[f"fault_error:{name}"] = type(exc).__name__

        schedule: list[tuple[float, str, Callable[[], None]]] = [
            (0.2, "kill -9 one worker", lambda: fault_kill_one(stack, log)),
            (0.4, "kill -9 every worker", lambda: fault_no_worker(stack, log)),
            (0.6, "restart Redis", lambda: fault_redis_restart(log)),
            (0.8, "terminate the app's DB connections", lambda: fault_drop_db(log)),
        ]
        started = time.monotonic()
        index = 0
        sys.stderr.write(
            f"soak: {consultations} consultations x {watchers} watchers, {seconds} s\n"
        )
        while time.monotonic() - started < seconds:
            for _ in range(consultations - len(_open(ids))):
                ids.append(_start(user, team, index))
                pool.watch(ids[-1], watchers)
                index += 1
            elapsed = (time.monotonic() - started) / seconds
            while schedule and schedule[0][0] <= elapsed:
                inject(*schedule.pop(0)[1:])
            sample_memory()
            time.sleep(1.0)
        submit_window = time.monotonic() - started
        for _, name, fault in schedule:  # a short run still injects every fault
            inject(name, fault)
        # Bounded wait for every consultation to finish.
        deadline = time.monotonic() + max(180.0, seconds)
        while _open(ids) and time.monotonic() < deadline:
            sample_memory()
            time.sleep(1.0)
        finished_at = time.monotonic()
        stuck = _open(ids)
        # Each watcher of a finished consultation is told the last seq the database holds.
        final: dict[int, list[int]] = {}
        for cid in ids:
            final[cid] = list(
                ConsultationEvent.objects.filter(consultation_id=cid)
                .order_by("seq")
                .values_list("seq", flat=True)
            )
        for watcher in pool.watchers:
            if watcher.consultation_id not in stuck:
                watcher.final_set_at = time.monotonic()
                watcher.final_seq = final[watcher.consultation_id][-1]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(
            w.done for w in pool.watchers if w.consultation_id not in stuck
        ):
            time.sleep(0.5)
        sample_memory()
        pool.close()

        # --- figures ------------------------------------------------------------------------
        rows = {c.pk: c for c in Consultation.objects.filter(pk__in=ids)}
        statuses = Counter(rows[cid].status for cid in ids)
        reasons = Counter(
            rows[cid].error or "(none)" for cid in ids if rows[cid].status == "failed"
        )
        created = {
            (e.consultation_id, e.seq): e.created_at.timestamp()
            for e in ConsultationEvent.objects.filter(consultation_id__in=ids)
        }
        db_gaps = [cid for cid, seqs in final.items() if seqs != list(range(1, len(seqs) + 1))]
        lost = duplicated = disordered = unexpected = 0
        bad_watchers = 0
        live, replayed = [], 0
        errors: Counter[str] = Counter()
        for watcher in pool.watchers:
            errors.update({f"watcher_{k}": v for k, v in watcher.errors.items()})
            report = seq_check(watcher.received, final[watcher.consultation_id])
            if watcher.consultation_id in stuck:
                # Still open: only what it has so far is checked (no duplicate, no reordering,
                # nothing the database does not hold); it may not have the last events yet.
                report.missing = []
            lost += len(report.missing)
            duplicated += len(report.duplicated)
            disordered += report.out_of_order
            unexpected += len(report.unexpected)
            bad_watchers += not report.ok
            for seq, (at, resumed_at) in watcher.arrivals.items():
                made = created.get((watcher.consultation_id, seq))
                if made is None:
                    continue
                if made < resumed_at:  # saved before the resume: a replay, not live
                    replayed += 1
                else:
                    live.append((at - made) * 1000)
        for kind, count in responder.counts.items():
            if kind != "ok":
                errors[f"llm_fault_{kind}"] += count
        for reason, count in reasons.items():
            errors[f"consultation_failed: {reason}"] += count
        for proc in stack.workers:  # not killed by the soak, yet gone
            if proc.popen.poll() is not None:
                errors[f"worker_exited_by_itself ({proc.name})"] += 1
        for key, value in log.items():
            if key.startswith("fault_error"):
                errors[f"{key}={value}"] += 1

        total = len(ids)
        done = statuses.get("completed", 0) + statuses.get("failed", 0)
        emit("soak_seconds", seconds, "s submitting")
        emit("soak_consultations", total, "started", None)
        emit("soak_consultations_completed", statuses.get("completed", 0), f"of {total}")
        emit(
            "soak_consultations_failed_with_reason",
            sum(n for r, n in reasons.items() if r != "(none)"),
            f"of {statuses.get('failed', 0)} failed",
        )
        emit("soak_consultations_stuck", len(stuck), f"of {total}", "0")
        emit("soak_throughput", done / (finished_at - started) * 60, "consultations/min")
        emit("soak_watchers", len(pool.watchers), "watchers")
        emit("soak_watcher_reconnects", sum(w.connects - 1 for w in pool.watchers), "reconnects")
        emit("soak_watcher_random_drops", sum(w.drops for w in pool.watchers), "drops")
        emit(
            "soak_watcher_forced_resumes",
            sum(w.forced_resumes for w in pool.watchers),
            "watchers whose last event never came live (reconnected to get it)",
        )
        emit("soak_events_lost", lost, "events", "0")
        emit("soak_events_duplicated", duplicated, "events", "0")
        emit("soak_events_out_of_order", disordered, "receipts", "0")
        emit("soak_events_not_in_db", unexpected, "events", "0")
        emit("soak_watchers_with_a_fault", bad_watchers, f"of {len(pool.watchers)}", "0")
        emit("soak_db_sequences_broken", len(db_gaps), "consultations", "0")
        if live:
            emit("soak_event_latency_p50", p50(live), "ms (live, created_at to watcher)")
        if len(live) >= 2:
            emit("soak_event_latency_p95", p95(live), "ms (live, created_at to watcher)")
        emit("soak_events_replayed_on_resume", replayed, "events")
        emit("soak_workers_killed", log.get("worker_killed", 0), "SIGKILL")
        emit("soak_redis_restarts", log.get("redis_restarted", 0), "restarts")
        emit("soak_db_backends_terminated", log.get("db_backends_terminated", 0), "backends")
        emit(
            "soak_healthz_reported_no_worker",
            int(bool(log.get("healthz_reported_no_worker"))),
            "1 = yes",
            "1",
        )
        for kind, count in sorted(errors.items()):
            emit(f"soak_errors[{kind}]", count, "count")
        for name, mb in sorted(peak.items()):
            emit(f"soak_rss_peak[{name}]", mb, "MiB")
        emit("soak_llm_requests", sum(responder.counts.values()), "requests")
        sys.stderr.write(f"soak: submitting {submit_window:.0f} s, logs in {LOG_DIR}\n")
        broken = (
            lost
            or duplicated
            or disordered
            or unexpected
            or db_gaps
            or stuck
            or reasons.get("(none)")
            or not log.get("healthz_reported_no_worker")
        )
        return 1 if broken else 0
    finally:
        if pool is not None and not pool.stop.is_set():
            pool.close()
        stack.stop()
        stub.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks soak", description=__doc__)
    parser.add_argument("--consultations", type=int, default=6, help="kept in flight (N)")
    parser.add_argument("--watchers", type=int, default=4, help="per consultation (M)")
    parser.add_argument("--seconds", type=float, default=120, help="time new ones are started")
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args(argv)
    return run(
        consultations=args.consultations,
        watchers=args.watchers,
        seconds=args.seconds,
        seed=args.seed,
    )
