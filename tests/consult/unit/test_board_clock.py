"""The board's run clock, folded from the status events' times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from consult.journal.board import build_board

T0 = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)


def _status(seq: int, status: str, at: datetime, **payload: object) -> dict[str, object]:
    return {
        "seq": seq,
        "kind": "status",
        "role": "",
        "round": 0,
        "payload": {"status": status, **payload},
        "at": at,
    }


def test_a_finished_run_shows_its_duration_from_first_start_to_end() -> None:
    board = build_board(
        1,
        [
            _status(1, "running", T0),
            # a worker died; the resumed run keeps the original start
            _status(2, "running", T0 + timedelta(seconds=40), resumed=True),
            _status(3, "completed", T0 + timedelta(seconds=125)),
        ],
    )
    assert board.elapsed_seconds == 125
    assert board.elapsed == "2 min 5 s"


def test_a_queued_run_has_no_clock_and_a_running_one_counts_to_now() -> None:
    assert build_board(1, []).elapsed == ""
    started = datetime.now(UTC) - timedelta(seconds=30)
    board = build_board(1, [_status(1, "running", started)])
    assert board.finished_at is None
    assert 30 <= (board.elapsed_seconds or 0) < 40
