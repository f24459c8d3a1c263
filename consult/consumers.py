"""WebSocket consumers: authorise, join a group, relay. No business logic here."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.db import DatabaseError, connection
from django.template.loader import render_to_string
from django.utils.html import escape

from consult.broadcasts import consultation_group, user_group
from consult.journal.board import Board, dom_id, event_dict
from consult.journal.render import render_events
from consult.journal.selectors import consultation_board_get, consultation_events
from consult.selectors import consultation_can_watch
from mdtboard.accounts.models import User
from mdtboard.accounts.selectors import user_must_set_up_mfa
from mdtboard.accounts.sessions import session_seconds_left
from mdtboard.audit.services import audit_subscription
from mdtboard.core.limits import MessageRate

logger = logging.getLogger(__name__)

# A resume message is about 40 characters; a far longer one is not ours and is not parsed
# (which also keeps deeply nested JSON away from the parser).
MAX_MESSAGE_CHARS = 1024
# ConsultationEvent.seq is a PositiveIntegerField.
MAX_SEQ = 2**31 - 1
# Messages a client may send: a few a second on average, 20 at once. The board's page sends
# one per (re)connect; the notification socket none at all.
MESSAGES_PER_SECOND = 5.0
MESSAGE_BURST = 20
# RFC 6455: "policy violation".
CLOSE_POLICY_VIOLATION = 1008


# How often a live board socket re-checks, before a server push, that its user may still
# watch the consultation. A message from the client is always checked against the database.
REAUTHORISE_S = 5.0


# RFC 6455 private range, as at connect: not (or no longer) signed in.
CLOSE_SIGNED_OUT = 4401

# A socket that catches up renders at most this many events per step, off the event loop: one
# reconnecting socket never holds the others' deliveries for long.
CATCH_UP_CHUNK = 100
# ... and sends them joined in messages of about this size at most (one board event's
# fragments are 1-10 kB; a round's whole section is the largest).
CATCH_UP_MESSAGE_CHARS = 256 * 1024
# The fragments of the latest events of the boards this process serves, as the broadcaster
# rendered them, by (consultation, seq): every watcher is sent the same bytes, and a socket that
# reconnects after a short gap sends them from here without folding or rendering anything.
FRAGMENT_CACHE_SIZE = 5000
_fragments: OrderedDict[tuple[int, int], str] = OrderedDict()


def fragment_remember(consultation_id: int, seq: int, html: str) -> None:
    key = (consultation_id, seq)
    if key in _fragments:
        return
    _fragments[key] = html
    while len(_fragments) > FRAGMENT_CACHE_SIZE:
        _fragments.popitem(last=False)


def fragment_cached(consultation_id: int, seq: int) -> str | None:
    return _fragments.get((consultation_id, seq))


# Catch-up chunks are rendered on a pool of their own: channels runs every socket's database
# calls on one thread (database_sync_to_async is thread-sensitive), where 50 sockets catching
# up at once queued ahead of the others' connects (Daphne drops a socket not accepted within
# 5 s) and permission re-checks (which hold a live delivery).
_CATCH_UP_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="board-catch-up")
# A chunk being rendered, by (event loop, consultation, the seq it follows): sockets that
# reconnect together from the same point wait for the one render and send its bytes.
_rendering: dict[tuple[Any, int, int], asyncio.Future[list[tuple[int, str]]]] = {}
# The board folded up to the last event of a chunk just rendered, by (consultation, seq): the
# next chunk goes on folding from it instead of folding again from the first event.
BOARD_CACHE_SIZE = 20
_boards: OrderedDict[tuple[int, int], Board] = OrderedDict()
_boards_lock = threading.Lock()


def _render_chunk(consultation_id: int, after: int) -> list[tuple[int, str]]:
    """The fragments of the next CATCH_UP_CHUNK events after ``after`` (on the catch-up pool:
    the database read, the fold and the rendering stay off the event loop)."""
    try:
        with _boards_lock:
            board = _boards.pop((consultation_id, after), None)
        if board is None:
            board = consultation_board_get(consultation=consultation_id, upto=after)
        events = consultation_events(consultation=consultation_id, after=after)
        fragments = render_events(board, [event_dict(e) for e in events[:CATCH_UP_CHUNK]])
        if fragments:
            with _boards_lock:
                _boards[(consultation_id, fragments[-1][0])] = board
                while len(_boards) > BOARD_CACHE_SIZE:
                    _boards.popitem(last=False)
        return fragments
    finally:
        connection.close()  # a pool thread keeps no connection between chunks


async def _chunk_after(consultation_id: int, after: int) -> list[tuple[int, str]]:
    """The next chunk after ``after``, rendered once however many sockets ask at once."""
    loop = asyncio.get_running_loop()
    key = (loop, consultation_id, after)
    pending = _rendering.get(key)
    if pending is None:
        pending = asyncio.ensure_future(
            loop.run_in_executor(_CATCH_UP_POOL, _render_chunk, consultation_id, after)
        )
        _rendering[key] = pending

        def done(future: asyncio.Future[list[tuple[int, str]]]) -> None:
            # Kept before the render stops being findable: a socket arriving just after finds
            # the fragments in the cache rather than rendering the chunk again.
            if not future.cancelled() and future.exception() is None:
                for seq, html in future.result():
                    fragment_remember(consultation_id, seq, html)
            _rendering.pop(key, None)

        pending.add_done_callback(done)
    # A socket that closes while waiting does not cancel the others' render.
    return await asyncio.shield(pending)


def _user_is_active(user_id: int) -> bool:
    return User.objects.filter(pk=user_id, is_active=True).exists()


def _board_admission(user: Any, consultation_id: int, session_key: str | None) -> tuple[bool, bool]:
    """(allowed, signed out) for a board socket, audited: the connect's reads and its audit
    row in one trip to the database thread, which every socket of the process shares."""
    authenticated = user is not None and user.is_authenticated
    allowed = bool(
        authenticated
        and not user_must_set_up_mfa(user=user)
        and consultation_can_watch(user=user, consultation_id=consultation_id)
    )
    signed_out = (
        allowed
        and session_key is not None
        and session_seconds_left(session_key=session_key, user_id=user.pk) <= 0
    )
    audit_subscription(
        actor=user if authenticated else None,
        object_type="consult.consultation",
        object_id=consultation_id,
        allowed=allowed and not signed_out,
    )
    return allowed, signed_out


class _SessionBound:
    """Closes the socket (4401) when the sign-in it was opened with ends: idle or absolute
    expiry (an open socket is no activity of its own), sign-out, or the browser signed in as
    someone else. A timer sleeps until the sign-in would end and reads it again then;
    re-authorisation on messages reads it too."""

    session_watch: asyncio.Task[None] | None = None

    async def _session_left(self) -> float:
        scope = self.scope  # type: ignore[attr-defined]
        key = getattr(scope.get("session"), "session_key", None)
        if key is None:
            # AuthMiddleware reads every real socket's user from its session; only a test
            # hands a consumer a user without one, and then there is nothing to expire.
            return float("inf")
        return float(
            await database_sync_to_async(session_seconds_left)(
                session_key=key, user_id=scope["user"].pk
            )
        )

    def _watch_session(self) -> None:
        self.session_watch = asyncio.ensure_future(self._session_timer())

    def _unwatch_session(self) -> None:
        if self.session_watch is not None and not self.session_watch.done():
            self.session_watch.cancel()

    async def _session_timer(self) -> None:
        while True:
            try:
                left = await self._session_left()
            except DatabaseError:
                # The database is away for a moment: ask again soon rather than never.
                await asyncio.sleep(REAUTHORISE_S)
                continue
            if left <= 0:
                await self.close(code=CLOSE_SIGNED_OUT)  # type: ignore[attr-defined]
                return
            if left == float("inf"):
                return
            await asyncio.sleep(left + 1)  # activity elsewhere may have moved it on: read again


def _user_may_watch(user_id: int, consultation_id: int) -> bool:
    """The user as the database knows them now (active, role and teams), not as the socket
    found them at connect."""
    user = User.objects.filter(pk=user_id, is_active=True).first()
    return user is not None and consultation_can_watch(user=user, consultation_id=consultation_id)


class _RateLimited:
    """Closes a socket whose client sends messages faster than any page of ours does."""

    rate: MessageRate | None = None
    flooded = False

    async def _flooding(self) -> bool:
        if self.flooded:
            return True
        if self.rate is None:
            self.rate = MessageRate(per_second=MESSAGES_PER_SECOND, burst=MESSAGE_BURST)
        if self.rate.allow():
            return False
        self.flooded = True
        scope = self.scope  # type: ignore[attr-defined]
        user = scope.get("user")
        # Ids and the path only: never the message, which may quote anything.
        logger.warning(
            "websocket closed for flooding: user %s, %s, over %d messages at once",
            getattr(user, "pk", None),
            scope.get("path", "?"),
            MESSAGE_BURST,
        )
        await self.close(code=CLOSE_POLICY_VIOLATION)  # type: ignore[attr-defined]
        return True


def _resume_after(text_data: str | None) -> int | None:
    """The sequence number of a well-formed ``{"type": "resume", "after": n}``, else None."""
    if not text_data or len(text_data) > MAX_MESSAGE_CHARS:
        return None
    try:
        message = json.loads(text_data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("type") != "resume":
        return None
    after = message.get("after", 0)
    # Integers only: 1e400 is an infinite float, true an int to Python, "5" not a number.
    if type(after) is not int or not 0 <= after <= MAX_SEQ:
        return None
    return after


class NotificationConsumer(_SessionBound, _RateLimited, AsyncJsonWebsocketConsumer):
    """Per-user notices rendered as an htmx out-of-band fragment for the page's notice area.
    Like the board, it re-checks its user before pushing (at most every REAUTHORISE_S) and
    on every client message: a deactivated user, or a sign-in that ended, gets nothing more."""

    group: str | None = None
    checked_at = 0.0

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            await self.close(code=4401)
            return
        # Like every page: a role that requires two-factor gets nothing before it is set up.
        if await database_sync_to_async(user_must_set_up_mfa)(user=user):
            await self.close(code=4403)
            return
        if await self._session_left() <= 0:
            await self.close(code=CLOSE_SIGNED_OUT)
            return
        self.group = user_group(user.pk)
        self.checked_at = time.monotonic()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self._watch_session()

    async def disconnect(self, code: int) -> None:
        self._unwatch_session()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def _still_allowed(self, *, fresh: bool = False) -> bool:
        if not fresh and time.monotonic() - self.checked_at < REAUTHORISE_S:
            return True
        self.checked_at = time.monotonic()
        if await self._session_left() <= 0:
            await self.close(code=CLOSE_SIGNED_OUT)
            return False
        user = self.scope["user"]
        if not await database_sync_to_async(_user_is_active)(user.pk) or (
            await database_sync_to_async(user_must_set_up_mfa)(user=user)
        ):
            await self.close(code=4403)
            return False
        return True

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Clients only listen on this socket: nothing they send is parsed.
        if not await self._flooding():
            await self._still_allowed(fresh=True)

    async def notify_message(self, event: dict[str, Any]) -> None:
        if not await self._still_allowed():
            return
        # Autoescaped template: notice text may quote user or LLM text.
        html = render_to_string(
            "core/partials/_notice.html", {"level": event["level"], "text": event["text"]}
        )
        await self.send(text_data=html)


# The re-check of the board sockets' users runs at least this far apart (REAUTHORISE_S is
# patched to 0 in tests that want it as often as possible; a loop never spins on the database).
SWEEP_FLOOR_S = 0.05
# Board sockets of this process, by event loop (Daphne has one; each async test its own), and
# the one task per loop that re-checks them all.
_watching: dict[Any, set[BoardConsumer]] = {}
_sweeps: dict[Any, asyncio.Task[None]] = {}
ALLOWED, SIGNED_OUT, REFUSED = "allowed", "signed out", "refused"
# Channel-layer messages a board socket relays as they are, without the database.
RELAYED = frozenset({"board.event", "board.delta"})


WatchKey = tuple[int, int, str | None]  # (user, consultation, session key)


def _watchers_verdicts(keys: set[WatchKey]) -> dict[WatchKey, str]:
    """For each (user, consultation, sign-in) watched in this process, whether it may still be
    watched: one trip to the database thread for every socket, however many there are."""
    verdicts: dict[WatchKey, str] = {}
    for key in keys:
        user_id, consultation_id, session_key = key
        if (
            session_key is not None
            and session_seconds_left(session_key=session_key, user_id=user_id) <= 0
        ):
            verdicts[key] = SIGNED_OUT
        elif not _user_may_watch(user_id, consultation_id):
            verdicts[key] = REFUSED
        else:
            verdicts[key] = ALLOWED
    return verdicts


def _watchers_add(consumer: BoardConsumer) -> None:
    loop = asyncio.get_running_loop()
    _watching.setdefault(loop, set()).add(consumer)
    sweep = _sweeps.get(loop)
    if sweep is None or sweep.done():
        _sweeps[loop] = loop.create_task(_watchers_sweep(loop))


def _watchers_discard(consumer: BoardConsumer) -> None:
    loop = asyncio.get_running_loop()
    sockets = _watching.get(loop)
    if sockets is None:
        return
    sockets.discard(consumer)
    if not sockets:
        del _watching[loop]
        sweep = _sweeps.pop(loop, None)
        if sweep is not None and sweep is not asyncio.current_task():
            sweep.cancel()


async def _watchers_sweep(loop: Any) -> None:
    """Every REAUTHORISE_S, re-check every board socket of this loop and close those whose
    user may no longer watch or whose sign-in ended. It runs beside the deliveries, never in
    front of them: a push costs a socket no database work, and 50 sockets due at once no longer
    queue 100 reads on the one database thread ahead of their own deliveries."""
    while _watching.get(loop):
        await asyncio.sleep(max(REAUTHORISE_S, SWEEP_FLOOR_S))
        sockets = [s for s in _watching.get(loop, ()) if not s.refused]
        try:
            verdicts = await database_sync_to_async(_watchers_verdicts)(
                {s.watch_key for s in sockets}
            )
        except DatabaseError:
            continue  # the database is away for a moment: the next sweep asks again
        for socket in sockets:
            verdict = verdicts.get(socket.watch_key, ALLOWED)
            if verdict != ALLOWED and not socket.refused:
                await socket.refuse(signed_out=verdict == SIGNED_OUT)


class BoardConsumer(_SessionBound, _RateLimited, AsyncWebsocketConsumer):
    """The live board of one consultation. Authorises like the board page, joins the
    consultation's group, and on the client's ``resume`` (its last sequence number) sends every
    persisted event after it, then each new one, in order and exactly once, as htmx
    out-of-band fragments. Token deltas are relayed as they come and never persisted.

    A relayed event costs the socket one send of the bytes the broadcaster rendered once for
    every watcher: no database, no fold, no render. Authorisation is re-checked against the
    database on every message the client sends, and for every socket of the process together
    every REAUTHORISE_S beside the deliveries (``_watchers_sweep``). Catching up (a resume, a
    missed event) sends the fragments this process still holds, and renders the rest in bounded
    chunks on a pool of its own, each chunk once for all the sockets that need it at the same
    time."""

    consultation_id: int = 0
    group: str | None = None
    refused = False
    watch_key: WatchKey = (0, 0, None)

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.consultation_id = int(self.scope["url_route"]["kwargs"]["pk"])
        session_key = getattr(self.scope.get("session"), "session_key", None)
        allowed, signed_out = await database_sync_to_async(_board_admission)(
            user, self.consultation_id, session_key
        )
        if not allowed or signed_out:
            await self.close(code=CLOSE_SIGNED_OUT if signed_out else 4403)
            return
        self.sent: int | None = None
        self.watch_key = (user.pk, self.consultation_id, session_key)

        self.lock = asyncio.Lock()
        self.group = consultation_group(self.consultation_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        _watchers_add(self)
        self._watch_session()

    async def disconnect(self, code: int) -> None:
        self._unwatch_session()
        _watchers_discard(self)
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # channels runs close_old_connections on the one database thread before every handler
        # (channels.db.aclose_old_connections): for a relayed event that was one trip to that
        # thread per watcher, queued behind every other socket's connect and resume, so 50
        # sockets connecting at once held every live delivery for seconds. A relay touches no
        # database (a catch-up reads on its own pool, which closes its connection itself).
        if message["type"] in RELAYED:
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def refuse(self, *, signed_out: bool) -> None:
        """Close the socket as signed out (4401) or, audited, as no longer allowed (4403);
        nothing more is sent on it."""
        self.refused = True
        if signed_out:
            await self.close(code=CLOSE_SIGNED_OUT)
            return
        await database_sync_to_async(audit_subscription)(
            actor=None,
            object_type="consult.consultation",
            object_id=self.consultation_id,
            allowed=False,
        )
        await self.close(code=4403)

    async def _allowed_now(self) -> bool:
        """Checked against the database on every message the client sends: a page sends one
        resume per reconnect, and a flood is closed before it gets here. A clinician removed
        from the team, or deactivated, stops receiving the board and the socket closes as a
        refusal."""
        if self.refused:
            return False
        if await self._session_left() <= 0:
            await self.refuse(signed_out=True)
            return False
        user = self.scope.get("user")
        allowed = bool(
            user is not None
            and await database_sync_to_async(_user_may_watch)(user.pk, self.consultation_id)
        )
        if not allowed:
            await self.refuse(signed_out=False)
        return allowed

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if await self._flooding():
            return
        if not await self._allowed_now():
            return
        after = _resume_after(text_data)
        if after is None:
            return  # not ours: ignore rather than trust
        async with self.lock:
            self.sent = after
            await self._catch_up()

    async def board_event(self, event: dict[str, Any]) -> None:
        if self.sent is None or self.refused:
            return  # the client has not said where it is yet; its resume will catch up
        if event.get("html"):
            fragment_remember(self.consultation_id, int(event["seq"]), event["html"])
        async with self.lock:
            if event.get("html") and event["seq"] == self.sent + 1:
                # The usual case: the next event, rendered once by the broadcaster for every
                # watcher. Nothing else to do here: no fold, no render.
                await self.send(text_data=event["html"])
                self.sent = event["seq"]
                return
            await self._catch_up()

    async def board_delta(self, event: dict[str, Any]) -> None:
        if self.sent is None or self.refused:
            return
        target = f"live-panel-{dom_id(str(event['role']))}"
        await self.send(
            text_data=f'<div id="{target}" hx-swap-oob="beforeend">{escape(event["text"])}</div>'
        )

    async def _catch_up(self) -> None:
        """Send every event after ``self.sent``, in order, as few messages as it takes: the
        fragments of up to CATCH_UP_CHUNK consecutive events joined in one message (the htmx
        WebSocket extension swaps a message's out-of-band elements in document order, so a
        joined message leaves the page as the same fragments sent one by one would). A socket
        resuming 300 events behind costs three sends instead of 300."""
        if self.sent is None:
            return  # nothing to catch up from before the client's resume
        while True:
            cached: list[tuple[int, str]] = []
            while len(cached) < CATCH_UP_CHUNK:
                seq = self.sent + 1 + len(cached)
                html = fragment_cached(self.consultation_id, seq)
                if html is None:
                    break
                cached.append((seq, html))
            if cached:
                await self._send_joined(cached)
                continue
            fragments = await _chunk_after(self.consultation_id, self.sent)
            if not fragments:
                return
            for seq, html in fragments:
                fragment_remember(self.consultation_id, seq, html)
            # Never twice, never out of order: a live event may have moved self.sent on.
            await self._send_joined([(seq, html) for seq, html in fragments if seq > self.sent])

    async def _send_joined(self, fragments: list[tuple[int, str]]) -> None:
        """Consecutive events' fragments, joined in messages of CATCH_UP_MESSAGE_CHARS at most
        (or one event's, when that alone is larger)."""
        part: list[str] = []
        size = 0
        for index, (seq, html) in enumerate(fragments):
            part.append(html)
            size += len(html)
            last = index == len(fragments) - 1
            if last or size + len(fragments[index + 1][1]) > CATCH_UP_MESSAGE_CHARS:
                await self.send(text_data="\n".join(part))
                self.sent = seq
                part, size = [], 0
