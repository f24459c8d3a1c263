"""Event numbering: every event of a consultation gets the next sequence number, under the
consultation's row lock, and goes to the board once its transaction commits."""

from __future__ import annotations

from django.db import transaction

from consult.engine.protocols import EngineEvent
from consult.journal import broadcaster
from consult.models import AgentMessage, Consultation, ConsultationEvent


def events_append(
    *,
    consultation: Consultation,
    events: list[EngineEvent],
    message: AgentMessage | None = None,
    save_seq: bool = True,
) -> list[ConsultationEvent]:
    """Give events the next sequence numbers (the caller holds the consultation row lock;
    with ``save_seq=False`` the caller saves ``last_seq`` in its own update)."""
    return event_groups_append(
        consultation=consultation, groups=[(events, message)], save_seq=save_seq
    )


def event_groups_append(
    *,
    consultation: Consultation,
    groups: list[tuple[list[EngineEvent], AgentMessage | None]],
    save_seq: bool = True,
) -> list[ConsultationEvent]:
    """Several steps' events at once, each group tied to the message of its step."""
    rows = []
    for events, message in groups:
        for event in events:
            consultation.last_seq += 1
            rows.append(
                ConsultationEvent(
                    consultation=consultation,
                    seq=consultation.last_seq,
                    kind=event.kind,
                    role=event.role,
                    round=event.round,
                    payload=event.payload,
                    message=message,
                )
            )
    ConsultationEvent.objects.bulk_create(rows)
    if save_seq:
        Consultation.objects.filter(pk=consultation.pk).update(last_seq=consultation.last_seq)
    if rows:
        consultation_id, seqs = consultation.pk, [row.seq for row in rows]
        transaction.on_commit(lambda: broadcaster.events_broadcast(consultation_id, seqs))
    return rows
