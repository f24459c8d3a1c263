"""The board's broadcaster: one thread per process renders newly committed events and hands
them to the channel layer (consult.broadcasts), in commit order, so that neither template
rendering nor Redis sits on a deliberation's critical path.

The thread keeps each live consultation's board and advances it by the new events only, so
an event costs the same at the end of a long run as at its start; a board it does not hold
(a new process, events written by another process, an evicted one) is folded once from the
database."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import connections

from consult import broadcasts
from consult.journal.board import Board, event_dict, event_to_wire
from consult.journal.render import render_events
from consult.journal.selectors import consultation_board_get, consultation_events

logger = logging.getLogger(__name__)

_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="board-broadcast")
# Boards of the consultations this process broadcasts, most recently used last; only the
# executor's thread touches it. A worker runs one consultation at a time, a web process
# cancels a few: a handful suffices, and a finished run's board is dropped at once.
_BOARDS: OrderedDict[int, Board] = OrderedDict()
MAX_BOARDS = 32
# The thread keeps its database connection while a run streams events (a new connection per
# batch cost more than the batch), and closes it when the run's board is finished, after a
# failure, or once nothing was broadcast for this long.
IDLE_CLOSE_S = 30.0
_last_used = 0.0


def events_broadcast(consultation_id: int, seqs: list[int]) -> Future[None]:
    """Queue newly committed events (consecutive sequence numbers) for the board."""
    return _EXECUTOR.submit(_broadcast, consultation_id, seqs)


def notice_broadcast(notice: dict[str, Any]) -> Future[None]:
    """Queue a notice to a user, after the events queued before it."""
    return _EXECUTOR.submit(_notify, notice)


def broadcasts_drain(timeout: float = 10.0) -> None:
    """Wait until what has been queued for the board so far is sent: for short-lived
    processes (the command line) that would otherwise exit before the last events go out."""
    _EXECUTOR.submit(lambda: None).result(timeout=timeout)


def _broadcast(consultation_id: int, seqs: list[int]) -> None:
    done = True
    try:
        messages = _render(consultation_id, seqs)
        done = consultation_id not in _BOARDS  # finished (or evicted): the run is over here
    except Exception as exc:  # noqa: BLE001 - the events are saved; a reload renders them
        # The type only: a traceback's values may quote clinical data.
        logger.error(
            "rendering board events of consultation %s failed (%s)",
            consultation_id,
            type(exc).__name__,
        )
        _BOARDS.pop(consultation_id, None)
        messages = [(seq, "", None) for seq in seqs]
    finally:
        _release(close=done)
    broadcasts.board_events(consultation_id=consultation_id, events=messages)


def _release(*, close: bool) -> None:
    """Close this thread's connection now, or once it has been idle for IDLE_CLOSE_S."""
    global _last_used  # only ever written on the executor's thread
    if close:
        connections.close_all()
        return
    _last_used = time.monotonic()
    _arm(IDLE_CLOSE_S)


_timer: threading.Timer | None = None


def _arm(delay: float) -> None:
    """One pending idle check at a time, run on the executor's thread (the connection is
    that thread's)."""
    global _timer
    if _timer is not None and _timer.is_alive():
        return
    _timer = threading.Timer(delay, _EXECUTOR.submit, (_close_if_idle,))
    _timer.daemon = True
    _timer.start()


def _close_if_idle() -> None:
    global _timer
    _timer = None  # the timer that queued this check has fired
    idle = time.monotonic() - _last_used
    if idle >= IDLE_CLOSE_S:
        connections.close_all()
    else:
        _arm(IDLE_CLOSE_S - idle)


def _render(consultation_id: int, seqs: list[int]) -> list[tuple[int, str, dict[str, Any] | None]]:
    """Each new event with the fragment of what it changed, from the board folded up to it."""
    first, last = min(seqs), max(seqs)
    board = _BOARDS.pop(consultation_id, None)
    if board is None or board.last_seq != first - 1:
        board = consultation_board_get(consultation=consultation_id, upto=first - 1)
    events = [
        event_dict(e)
        for e in consultation_events(consultation=consultation_id, after=first - 1, upto=last)
    ]
    fragments = dict(render_events(board, events))
    if not board.finished:
        _BOARDS[consultation_id] = board
        while len(_BOARDS) > MAX_BOARDS:
            _BOARDS.popitem(last=False)
    wanted = set(seqs)
    return [(e["seq"], fragments[e["seq"]], event_to_wire(e)) for e in events if e["seq"] in wanted]


def _notify(notice: dict[str, Any]) -> None:
    try:
        broadcasts.user_notify(**notice)
    except Exception:  # noqa: BLE001 - the result is saved; the dashboard shows it anyway
        logger.warning("finish notice for user %s not delivered", notice["user_id"])
    finally:
        connections.close_all()
