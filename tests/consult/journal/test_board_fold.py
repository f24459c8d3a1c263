"""The board's fold: every kind is handled, and the status poll's narrow read is enough."""

from __future__ import annotations

import pytest

from clinical.vocab import EventKind
from consult.journal.board import STATUS_LINE_KINDS, Board, apply, build_board
from tests.consult.journal.golden_board import streams


@pytest.mark.parametrize("name", ["hcc03", "llm-cancelled"])
def test_only_the_status_line_kinds_change_the_status_line(name: str) -> None:
    # given every recorded event, each folded into the board
    board = Board(consultation_id=1)
    for event in streams()[name]:
        changed = apply(board, event)
        # then an event that changes the status line is of a kind the poll reads
        if changed & {"status", "metrics"}:
            assert EventKind(event["kind"]) in STATUS_LINE_KINDS, event["kind"]


@pytest.mark.parametrize("name", ["hcc03", "llm-cancelled"])
def test_the_status_poll_fold_shows_what_the_whole_fold_shows(name: str) -> None:
    events = streams()[name]
    whole = build_board(1, events)
    narrow = build_board(1, [e for e in events if e["kind"] in STATUS_LINE_KINDS])
    line = ("status", "error", "resumed", "tokens", "cost_usd", "started_at", "finished_at")
    assert [getattr(narrow, f) for f in line] == [getattr(whole, f) for f in line]


def test_an_event_of_a_kind_this_version_does_not_know_is_skipped() -> None:
    # given an event written by a newer version
    board = Board(consultation_id=1)
    changed = apply(board, {"seq": 4, "kind": "novel.kind", "role": "", "round": 0, "payload": {}})
    # then the board stays as it was, and knows it has seen the event
    assert changed == set()
    assert board.last_seq == 4


def test_the_recorded_runs_cover_every_kind_the_board_handles() -> None:
    seen = {e["kind"] for events in streams().values() for e in events}
    assert seen == {str(kind) for kind in EventKind}
