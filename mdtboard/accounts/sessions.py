"""When a sign-in ends: after an idle spell, or at its absolute lifetime whatever the activity."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

# Kept in the session: seconds since the epoch of the sign-in and of the last request.
SIGNED_IN_AT = "mdtboard.signed_in_at"
LAST_SEEN_AT = "mdtboard.last_seen_at"
# The last-seen time is rewritten at most once a minute: a session write per request (every
# htmx poll) buys nothing for a timeout counted in tens of minutes.
ACTIVITY_RESOLUTION_S = 60


class Expiry(StrEnum):
    IDLE = "idle"
    ABSOLUTE = "absolute"


def clock() -> float:
    """Seconds since the epoch (one place, so that tests can move time)."""
    return time.time()


def session_start(*, session: Any) -> None:
    """Record the moment of a sign-in; its absolute lifetime counts from here."""
    now = clock()
    session[SIGNED_IN_AT] = now
    session[LAST_SEEN_AT] = now


def session_expiry(*, session: Any, idle_timeout: int, max_age: int) -> Expiry | None:
    """Whether the signed-in session is over, and why; if not, note this request as activity.

    Django's own expiry date moves with every save of the session, so it cannot be the
    absolute limit: the sign-in time is kept in the session and checked here instead."""
    now = clock()
    if SIGNED_IN_AT not in session:
        # A session from before this check existed: it counts from its first request now.
        session_start(session=session)
        return None
    if now - float(session[SIGNED_IN_AT]) >= max_age:
        return Expiry.ABSOLUTE
    last_seen = float(session.get(LAST_SEEN_AT, session[SIGNED_IN_AT]))
    if idle_timeout > 0 and now - last_seen >= idle_timeout:
        return Expiry.IDLE
    if now - last_seen >= ACTIVITY_RESOLUTION_S:
        session[LAST_SEEN_AT] = now
    return None
