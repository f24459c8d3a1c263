"""Live-board figure: 50 watchers of one consultation on loopback; latency from an event's
persistence (commit) to its arrival at every watcher, and events lost. The web server and this
client share the machine: the CPU each spent is printed too, to tell a slow server from a busy
client."""

from __future__ import annotations

import asyncio
import os
import re
import resource
import statistics
import sys
import time
from typing import Any

from benchmarks.common import REPO, emit, p95

WATCHERS = 50
EVENTS = 200
RATE_PER_S = 40
SEQ = re.compile(r'id="board-seq"\s+data-seq="(\d+)"')


def _consultation(user: Any, team: Any) -> Any:
    from benchmarks.engine import _submitted
    from consult.services.consultations import consultation_start

    dossier = _submitted(user, team, "pub-lymph-02.json", f"watch{time.time_ns()}")
    return consultation_start(actor=user, dossier=dossier, enqueue=False)


def _persist(consultation_id: int, index: int) -> tuple[int, float]:
    from django.db import transaction

    from clinical.vocab import EventKind
    from consult.engine.protocols import EngineEvent
    from consult.journal.numbering import events_append
    from consult.models import Consultation

    with transaction.atomic():
        consultation = Consultation.objects.select_for_update().get(pk=consultation_id)
        rows = events_append(
            consultation=consultation,
            events=[
                EngineEvent(
                    EventKind.CRITIQUE,
                    {
                        "reviewer": "safety",
                        "target": "treatment",
                        "review": {"agree": True, "critique": f"bench {index}", "concerns": []},
                    },
                    role="safety",
                    # Rounds of ten exchanges, as in a deliberation (a round re-renders whole).
                    round=1 + index // 10,
                )
            ],
        )
    return rows[0].seq, time.perf_counter()


async def _watch(
    url: str,
    cookie: str,
    after: int,
    arrivals: dict[int, float],
    ready: asyncio.Event,
    done: asyncio.Event,
) -> None:
    import json

    from websockets.asyncio.client import connect

    async with connect(
        url,
        additional_headers={"Cookie": cookie, "Origin": url.replace("ws://", "http://")},
        open_timeout=20,
        max_size=None,
    ) as ws:
        await ws.send(json.dumps({"type": "resume", "after": after}))
        ready.set()
        while not done.is_set():
            try:
                message = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            # A catch-up message carries many events' fragments, each with its sequence number.
            at = time.perf_counter()
            for match in SEQ.finditer(str(message)):
                arrivals.setdefault(int(match.group(1)), at)


async def _persist_events(consultation_id: int, first: int, count: int) -> dict[int, float]:
    from asgiref.sync import sync_to_async

    persisted: dict[int, float] = {}
    for index in range(first, first + count):
        seq, at = await sync_to_async(_persist)(consultation_id, index)
        persisted[seq] = at
        await asyncio.sleep(1 / RATE_PER_S)
    return persisted


async def _arrived(arrivals: list[dict[int, float]], persisted: dict[int, float]) -> list[float]:
    """Each watcher's latency for each persisted event (waiting up to 10 s for the last)."""
    deadline = time.perf_counter() + 10
    while time.perf_counter() < deadline and any(  # noqa: ASYNC110 - bounded poll
        len(set(a) & set(persisted)) < len(persisted) for a in arrivals
    ):
        await asyncio.sleep(0.1)
    return [(a[seq] - at) * 1000 for a in arrivals for seq, at in persisted.items() if seq in a]


def _cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user + system) of this process, or of ``pid`` (Linux /proc)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _run(url: str, cookie: str, consultation_id: int, after: int, server_pid: int) -> None:
    arrivals = [dict[int, float]() for _ in range(WATCHERS)]
    readies = [asyncio.Event() for _ in range(WATCHERS)]
    done = asyncio.Event()
    tasks = [
        asyncio.create_task(_watch(url, cookie, after, arrivals[i], readies[i], done))
        for i in range(WATCHERS)
    ]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), timeout=60)
    await asyncio.sleep(1.0)  # let every consumer join its group
    server_cpu, client_cpu = _cpu_s(server_pid), _cpu_s()
    persisted = await _persist_events(consultation_id, 0, EVENTS)
    latencies = await _arrived(arrivals, persisted)
    server_cpu, client_cpu = _cpu_s(server_pid) - server_cpu, _cpu_s() - client_cpu
    lost = WATCHERS * EVENTS - len(latencies)
    emit("board_watchers", WATCHERS, "watchers")
    emit("board_event_latency_p50", statistics.median(latencies), "ms")
    emit("board_event_latency_p95", p95(latencies), "ms", "< 200 ms")
    emit("board_messages_lost", lost, "messages", "0")
    deliveries = WATCHERS * EVENTS
    emit("board_server_cpu_per_delivery", server_cpu / deliveries * 1000, "ms (Daphne's threads)")
    emit(
        "board_client_cpu",
        client_cpu,
        f"s (this process: {WATCHERS} clients, writing and broadcasting the events)",
    )

    # Then 50 more sockets connect at once and ask for everything from the start (as after a
    # Redis restart), while the run goes on: what the 50 watchers already there wait meanwhile.
    rejoined = [dict[int, float]() for _ in range(WATCHERS)]
    rejoin_ready = [asyncio.Event() for _ in range(WATCHERS)]
    rejoining = [
        asyncio.create_task(_watch(url, cookie, 0, rejoined[i], rejoin_ready[i], done))
        for i in range(WATCHERS)
    ]
    started = time.perf_counter()
    persisted = await _persist_events(consultation_id, EVENTS, EVENTS // 2)
    during = await _arrived(arrivals, persisted)
    # The reconnecting sockets are given as long as they need (up to 60 s) to have every event:
    # the first 50 are served first now, so the run may end before the last of them is done.
    everything = set(range(1, max(persisted) + 1))
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline and any(  # noqa: ASYNC110 - bounded poll
        not everything <= set(a) for a in rejoined
    ):
        await asyncio.sleep(0.1)
    caught_up = sum(1 for a in rejoined if everything <= set(a))
    caught_up_s = max(max(a.values(), default=started) for a in rejoined) - started
    done.set()
    await asyncio.gather(*tasks, *rejoining, return_exceptions=True)
    emit(
        "board_event_latency_p95_during_reconnects",
        p95(during),
        f"ms (the first {WATCHERS} watchers while {WATCHERS} sockets reconnect from seq 0)",
        "< 300 ms",
    )
    emit("board_reconnected_caught_up", caught_up, f"of {WATCHERS} sockets", str(WATCHERS))
    emit(
        "board_reconnect_catch_up",
        caught_up_s,
        f"s (until the last of the {WATCHERS} reconnecting sockets had every event)",
    )


def run() -> None:
    import subprocess

    from django.test import Client

    from benchmarks.engine import _bench_user
    from consult.models import ConsultationEvent
    from tests.stack import free_port

    user, team = _bench_user()
    consultation = _consultation(user, team)
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    port = free_port()
    env = {**os.environ, "MDTBOARD_DB_NAME": "mdtboard_bench"}
    daphne = subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter and our app
        [
            sys.executable,
            "-m",
            "mdtboard.webserver",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "mdtboard.asgi:application",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import urllib.request

        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        after = ConsultationEvent.objects.filter(consultation=consultation).count()
        asyncio.run(
            _run(
                f"ws://127.0.0.1:{port}/ws/consultations/{consultation.pk}/",
                cookie,
                consultation.pk,
                after,
                daphne.pid,
            )
        )
    finally:
        daphne.terminate()
        daphne.wait(timeout=30)
