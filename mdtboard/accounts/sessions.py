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


def session_seconds_left(*, session_key: str, user_id: int) -> float:
    """How long the sign-in ``session_key`` of ``user_id`` lasts if nothing else happens:
    0 when it is over (idle, too old, signed out, or now someone else's). For an open
    WebSocket, which is no activity of its own and must close when the sign-in ends."""
    from importlib import import_module

    from django.conf import settings

    store = import_module(settings.SESSION_ENGINE).SessionStore
    session = store(session_key=session_key)
    if not session.exists(session_key) or str(session.get("_auth_user_id")) != str(user_id):
        return 0.0
    now = clock()
    signed_in = float(session.get(SIGNED_IN_AT, now))
    left = signed_in + int(settings.SESSION_COOKIE_AGE) - now
    idle_timeout = int(settings.SESSION_IDLE_TIMEOUT)
    if idle_timeout > 0:
        last_seen = float(session.get(LAST_SEEN_AT, signed_in))
        left = min(left, last_seen + idle_timeout - now)
    return max(0.0, left)


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
