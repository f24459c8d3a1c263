"""Board cost per event: what the broadcaster spends turning one newly saved event into the
fragment every watcher receives, early in a run (event 10) and late (event 1,000). A board
folded from event 1 for every batch costs more the longer the run; one kept per consultation
and advanced by the new events costs the same throughout."""

from __future__ import annotations

import time
from typing import Any
from unittest import mock

from benchmarks.common import emit, p50

EVENTS = 1020
WINDOW = 20  # events around each point
PANEL = ("diagnostic", "treatment", "safety", "monitoring")


def _event(index: int) -> tuple[str, str, int, dict[str, Any]]:
    """A mix like a deliberation's: reports, critiques in rounds of ten, tree nodes, votes."""
    round_no = 1 + index // 10
    role = PANEL[index % len(PANEL)]
    match index % 4:
        case 0:
            report = {"conclusion": f"bench {index}", "confidence": 0.7, "claims": []}
            return "message", role, round_no, {"report": report, "fallback": "", "usage": None}
        case 1:
            review = {"agree": True, "critique": f"bench {index}", "concerns": []}
            payload = {"reviewer": role, "target": "treatment", "review": review}
            return "critique", role, round_no, payload
        case 2:
            node = {
                "id": f"r{round_no}.{role}.n{index}",
                "parent": "question",
                "kind": "analysis",
                "text": f"bench node {index}",
                "refs": [],
                "author": role,
                "status": "proposed",
            }
            return "evidence.node", role, round_no, node
        case _:
            vote = {"agree": True, "advice": "", "concerns": []}
            return "vote", role, round_no, {"vote": vote, "fallback": ""}


def _saved_events(consultation_id: int, count: int = EVENTS) -> None:
    from consult.models import Consultation, ConsultationEvent

    ConsultationEvent.objects.bulk_create(
        ConsultationEvent(
            consultation_id=consultation_id,
            seq=seq,
            kind=kind,
            role=role,
            round=round_no,
            payload=payload,
        )
        for seq, (kind, role, round_no, payload) in ((i + 1, _event(i)) for i in range(EVENTS))
    )
    Consultation.objects.filter(pk=consultation_id).update(last_seq=EVENTS)


def _broadcast_each(consultation_id: int, count: int = EVENTS) -> list[float]:
    """Milliseconds of this process's CPU the broadcaster spends on each event, sent one batch
    per event as a live run sends them (the channel layer itself left out: it costs the same
    at any length). CPU time rather than wall time: on a shared machine the other processes'
    load would swamp the difference."""
    from consult import broadcasts
    from consult.journal import broadcaster

    samples = []
    with mock.patch.object(broadcasts, "_send"):
        for seq in range(1, count + 1):
            started = time.process_time()
            broadcaster.events_broadcast(consultation_id, [seq]).result(timeout=60)
            samples.append((time.process_time() - started) * 1000)
    return samples


def run() -> None:
    from benchmarks.board import _consultation
    from benchmarks.engine import _bench_user

    user, team = _bench_user()
    warm_up = _consultation(user, team)  # templates compiled, connection open: not measured
    _saved_events(warm_up.pk, 40)
    _broadcast_each(warm_up.pk, 40)
    consultation = _consultation(user, team)
    _saved_events(consultation.pk)
    samples = _broadcast_each(consultation.pk)
    # Medians: the first event also opens the thread's connection and loads the templates.
    early = p50(samples[10 - WINDOW // 2 : 10 + WINDOW // 2])
    late = p50(samples[1000 - WINDOW // 2 : 1000 + WINDOW // 2])
    emit("board_cost_per_event_at_10", early, "ms CPU (median of 20)")
    emit("board_cost_per_event_at_1000", late, "ms CPU (median of 20)")
    emit("board_cost_growth_10_to_1000", late / early, "ratio", "<= 1.5 (flat)")
