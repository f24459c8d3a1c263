"""Recorded board events and the board they rendered, pinned so that refactoring the journal
keeps what a watcher sees byte for byte.

``golden/events.json`` holds two event streams: a real guideline consultation (pub-hcc-03,
recorded from the engine) and a short LLM-style run with token usage, an ungrounded citation,
a resume and a cancel. ``golden/board.json`` is what today's code renders from them. After an
intended change to the board's templates, regenerate it with

    MDTBOARD_UPDATE_GOLDEN=1 pytest tests/consult/journal -q

and review the diff like any other change.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from consult.models import Consultation, ConsultationEvent, ConsultationStatus
from consult.services.consultations import consultation_start
from consult.services.dossiers import case_import, dossier_submit
from tests.paths import PUBLIC_CASES

GOLDEN = Path(__file__).resolve().parent / "golden"
EVENTS = GOLDEN / "events.json"
BOARD = GOLDEN / "board.json"
STARTED = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
UPDATE = os.environ.get("MDTBOARD_UPDATE_GOLDEN") == "1"


def streams() -> dict[str, list[dict[str, Any]]]:
    """Each stream's events numbered from 1, one second apart."""
    raw = json.loads(EVENTS.read_text(encoding="utf-8"))
    return {
        name: [
            {**event, "seq": seq, "at": STARTED + timedelta(seconds=seq)}
            for seq, event in enumerate(events, start=1)
        ]
        for name, events in raw.items()
    }


def normalise(html: str, consultation_id: int, dossier_id: int | None = None) -> str:
    """A page or fragment with the database ids of this run replaced by placeholders, and
    the clock of a run still going (it counts up to now) by one."""
    html = re.sub(
        r'data-elapsed-s="\d+"(\s+)data-ticking>[^<]*<',
        r'data-elapsed-s="<now>"\1data-ticking><now><',
        html,
    )
    html = re.sub(rf"/consultations/{consultation_id}/", "/consultations/<id>/", html)
    html = html.replace(f'data-consultation="{consultation_id}"', 'data-consultation="<id>"')
    if dossier_id is not None:
        html = re.sub(rf"/dossiers/{dossier_id}/", "/dossiers/<id>/", html)
    return html


def golden(section: str, name: str, value: Any) -> Any:
    """The pinned value of ``section``/``name``; in update mode, records ``value`` instead."""
    data = json.loads(BOARD.read_text(encoding="utf-8")) if BOARD.exists() else {}
    if UPDATE:
        data.setdefault(section, {})[name] = value
        BOARD.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        return value
    return data[section][name]


def recorded_consultation(clinician: Any, team: Any, events: list[dict[str, Any]]) -> Any:
    """A consultation whose journal is the recorded stream, with its clock and status."""
    path = PUBLIC_CASES / "pub-hcc-03.json"
    result = case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)
    assert result.dossier is not None, result.errors
    dossier_submit(actor=clinician, dossier=result.dossier)
    consultation = consultation_start(actor=clinician, dossier=result.dossier, enqueue=False)
    rows = ConsultationEvent.objects.bulk_create(
        ConsultationEvent(
            consultation=consultation,
            seq=e["seq"],
            kind=e["kind"],
            role=e["role"],
            round=e["round"],
            payload=e["payload"],
        )
        for e in events
    )
    for row, event in zip(rows, events, strict=True):
        row.created_at = event["at"]
    ConsultationEvent.objects.bulk_update(rows, ["created_at"])
    final = events[-1]["payload"].get("status") or ConsultationStatus.CANCELLED
    Consultation.objects.filter(pk=consultation.pk).update(
        status=final,
        last_seq=len(events),
        started_at=events[0]["at"],
        finished_at=events[-1]["at"],
    )
    return Consultation.objects.get(pk=consultation.pk)
