"""Reads of the journal. The callers have authorised the user already (the board page
through consult.selectors.consultation_get, the socket when it connected, the broadcaster
works for nobody in particular)."""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import QuerySet

from clinical.vocab import EventKind
from consult.journal.board import Board, build_board, event_dict
from consult.models import Consultation, ConsultationEvent


def consultation_events(
    *,
    consultation: Consultation | int,
    after: int = 0,
    upto: int | None = None,
    kinds: Collection[EventKind] | None = None,
) -> QuerySet[ConsultationEvent]:
    """The consultation's events after ``after`` up to ``upto`` (both sequence numbers), in
    order; with ``kinds``, only those."""
    consultation_id = consultation if isinstance(consultation, int) else consultation.pk
    events = ConsultationEvent.objects.filter(consultation_id=consultation_id, seq__gt=after)
    if upto is not None:
        events = events.filter(seq__lte=upto)
    if kinds is not None:
        events = events.filter(kind__in=[str(kind) for kind in kinds])
    return events.order_by("seq")


def consultation_board_get(
    *,
    consultation: Consultation | int,
    upto: int | None = None,
    kinds: Collection[EventKind] | None = None,
) -> Board:
    """The board as its events up to ``upto`` (all of them by default) build it. With
    ``kinds``, only those events are read: the status poll asks for the status line's."""
    consultation_id = consultation if isinstance(consultation, int) else consultation.pk
    events = consultation_events(consultation=consultation_id, upto=upto, kinds=kinds)
    return build_board(consultation_id, (event_dict(e) for e in events.iterator()))
