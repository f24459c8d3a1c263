"""The one way to write the audit log, and the check of its chain."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.db import connection, transaction
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone

from mdtboard.accounts.models import User
from mdtboard.audit.anchor import (
    Anchor,
    AnchorUnreadable,
    anchor_advance,
    anchor_advance_quietly,
    anchor_path,
    anchor_read,
    anchor_reset,
)
from mdtboard.audit.hashing import (
    CURRENT_SCHEME,
    GENESIS_HASH,
    SCHEME_HMAC,
    SCHEME_SHA256,
    event_hash,
    legacy_until,
    payload_hash,
)
from mdtboard.audit.models import AuditEvent

# Any constant works; it names the advisory lock that serialises appends to the chain.
_CHAIN_LOCK_KEY = 0x6D6474_61756474  # "mdt" "audt"


@transaction.atomic
def audit_record(
    *,
    action: str,
    actor: User | AnonymousUser | None = None,
    obj: Model | None = None,
    object_type: str = "",
    object_id: str | int = "",
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append an event. Call it inside the transaction of the change it records, so that
    either both are saved or neither is. Payloads carry ids and field names, never PHI."""
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or str(obj.pk)
    payload = payload or {}
    user = actor if isinstance(actor, User) and actor.is_authenticated else None
    actor_id = user.pk if user is not None else None
    actor_label = user.get_username() if user is not None else ""
    with connection.cursor() as cursor:
        # Transaction-scoped: released at commit, so concurrent writers form one chain.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    prev = last or GENESIS_HASH
    created_at = timezone.now()
    digest = payload_hash(payload)
    event = AuditEvent.objects.create(
        created_at=created_at,
        actor_id=actor_id,
        actor_label=actor_label,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        payload=payload,
        payload_hash=digest,
        prev_hash=prev,
        hash_scheme=CURRENT_SCHEME,
        hash=event_hash(
            prev_hash=prev,
            created_at=created_at,
            actor_id=actor_id,
            actor_label=actor_label,
            action=action,
            object_type=object_type,
            object_id=str(object_id),
            payload_digest=digest,
            scheme=CURRENT_SCHEME,
        ),
    )
    every = max(1, int(getattr(settings, "AUDIT_ANCHOR_EVERY", 1)))
    first = prev == GENESIS_HASH
    if first or event.pk % every == 0:
        # After commit: an event rolled back with its change must never be anchored. Only a
        # chain's first event may create the anchor file; later ones only move it.
        transaction.on_commit(partial(anchor_advance_quietly, event.pk, event.hash, first))
    return event


def client_address(request: HttpRequest | None) -> dict[str, str]:
    if request is None:
        return {}
    return {"ip": request.META.get("REMOTE_ADDR", "")}


def login_identity(credentials: dict[str, Any]) -> dict[str, str]:
    """Who a sign-in attempt named. Django masks the password in ``credentials``. The
    identifier is kept as typed only when it names an account: people type passwords into the
    email field, and the log is append-only. Anything else is kept as a keyed digest, enough
    to see repeated attempts."""
    tried = str(credentials.get("email") or credentials.get("username") or "")[:254]
    if get_user_model().objects.filter(email__iexact=tried).exists():
        return {"identifier": tried}
    digest = hmac.new(settings.SECRET_KEY.encode(), tried.encode(), hashlib.sha256)
    return {"unknown_identifier_digest": digest.hexdigest()[:16]}


# Refusals by a rate limit are recorded at most this many times per client address (and view)
# in each window of AUDIT_THROTTLED_WINDOW_S seconds; the next one recorded says how many were
# left out. A rate limit already stopped them, and a flood of them would otherwise grow the
# append-only log (and its chain) without bound: each attempt was a row before.
THROTTLED_RECORDED_PER_WINDOW = 5
_THROTTLED_KEY = "mdtboard:audit-throttled:{kind}:{key}"


def audit_throttled_quota(*, key: str) -> int | None:
    """Whether a throttled refusal of ``key`` is recorded: None if the window's quota is used
    (it is counted instead), else how many went unrecorded since the last one recorded. A
    cache that fails records everything."""
    from django.core.cache import cache

    window = int(getattr(settings, "AUDIT_THROTTLED_WINDOW_S", 60))
    recorded = _THROTTLED_KEY.format(kind="recorded", key=key)
    skipped = _THROTTLED_KEY.format(kind="skipped", key=key)
    try:
        cache.add(recorded, 0, timeout=window)
        if cache.incr(recorded) <= THROTTLED_RECORDED_PER_WINDOW:
            left_out = int(cache.get(skipped) or 0)
            if left_out:
                cache.delete(skipped)
            return left_out
        if not cache.add(skipped, 1, timeout=None):
            cache.incr(skipped)
        return None
    except Exception:  # noqa: BLE001 - the cache is an optimisation here, never a reason to lose events
        return 0


def _with_left_out(payload: dict[str, Any], left_out: int) -> dict[str, Any]:
    return {**payload, "not_recorded_before": left_out} if left_out else payload


def audit_login_throttled(*, request: HttpRequest | None, credentials: dict[str, Any]) -> None:
    """A sign-in refused by the rate limit before the password was even checked (at most
    THROTTLED_RECORDED_PER_WINDOW per client address and window)."""
    address = client_address(request)
    left_out = audit_throttled_quota(key=f"login:{address.get('ip', '')}")
    if left_out is None:
        return
    audit_record(
        action="auth.login_throttled",
        payload=_with_left_out({**login_identity(credentials), **address}, left_out),
    )


def audit_denial(
    *,
    actor: User | AnonymousUser | None,
    status: int,
    view: str,
    method: str,
    ids: dict[str, str],
    request: HttpRequest | None = None,
) -> AuditEvent | None:
    """A request refused (403, 404 on an object, 429): the view's name and the ids in its URL,
    never query strings or bodies. A 429 is recorded at most THROTTLED_RECORDED_PER_WINDOW
    times per client address, user and view in a window (None when it is only counted)."""
    payload: dict[str, Any] = {"status": status, "view": view, "method": method, "ids": ids}
    if status == 429:
        who = getattr(actor, "pk", None) or ""
        key = f"429:{client_address(request).get('ip', '')}:{who}:{view}"
        left_out = audit_throttled_quota(key=key)
        if left_out is None:
            return None
        payload = _with_left_out(payload, left_out)
    return audit_record(action="access.denied", actor=actor, payload=payload)


def audit_subscription(
    *, actor: User | AnonymousUser | None, object_type: str, object_id: str | int, allowed: bool
) -> AuditEvent:
    """A WebSocket subscription to an object's live stream, granted or refused."""
    return audit_record(
        action="ws.subscribe" if allowed else "ws.subscribe_denied",
        actor=actor,
        object_type=object_type,
        object_id=object_id,
    )


@dataclass(frozen=True)
class ChainReport:
    checked: int
    broken_event_id: int | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.broken_event_id is None


ANCHOR_MISSING = (
    "the anchored head event is missing: events were deleted at the head of the log (anchor {path})"
)
ANCHOR_CHANGED = (
    "the anchored head event no longer has its anchored hash: the chain was rewritten "
    "(anchor {path})"
)
ANCHOR_UNREADABLE = "the audit anchor file is unreadable"
ANCHOR_ABSENT = (
    "the audit anchor {path} is missing while the log holds events: the head cannot be checked "
    "(deleted, or a chain was recomputed behind it); if you know why, `manage.py "
    "audit_reanchor --reason ...` anchors the current head and records that it did"
)
SCHEME_DOWNGRADE = "an unkeyed (legacy) hash after a keyed one"
UNKEYED_AFTER_CUTOVER = (
    "an unkeyed (legacy) hash after the cut-over to the keyed scheme "
    "(AUDIT_LEGACY_UNTIL={until}): only events written before the key existed may be unkeyed"
)


def audit_verify() -> ChainReport:
    """Walk the chain in order and report the first event whose hashes do not hold; then check
    that the event anchored outside the database is still there with the same hash. An intact
    chain moves the anchor to its head."""
    try:
        anchor = anchor_read()
    except AnchorUnreadable:
        return ChainReport(0, 0, ANCHOR_UNREADABLE)
    report, head, anchored_hash = _chain_walk(anchored_id=anchor.event_id if anchor else None)
    if not report.ok:
        return report
    if anchor is None and head is not None and anchor_path() is not None:
        # Never recreated here: an attacker who deleted the file would get their head anchored.
        return ChainReport(report.checked, 0, ANCHOR_ABSENT.format(path=anchor_path()))
    if anchor is not None:
        where = str(anchor_path())
        if anchored_hash is None:
            return ChainReport(report.checked, anchor.event_id, ANCHOR_MISSING.format(path=where))
        if not hmac.compare_digest(anchored_hash, anchor.hash):
            return ChainReport(report.checked, anchor.event_id, ANCHOR_CHANGED.format(path=where))
    if head is not None:
        anchor_advance(event_id=head.pk, event_hash=head.hash)
    return report


def audit_chain_check() -> tuple[ChainReport, AuditEvent | None]:
    """The chain's links alone, without the anchor, and its head event: for a database just
    restored from a backup, whose head is legitimately behind the anchor."""
    report, head, _ = _chain_walk(anchored_id=None)
    return report, head


def _chain_walk(*, anchored_id: int | None) -> tuple[ChainReport, AuditEvent | None, str | None]:
    prev = GENESIS_HASH
    checked = 0
    scheme = SCHEME_SHA256
    until = legacy_until()
    anchored_hash: str | None = None
    head: AuditEvent | None = None
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        checked += 1
        if event.prev_hash != prev:
            return ChainReport(checked, event.pk, "previous-hash link does not match"), None, None
        if event.hash_scheme not in (SCHEME_SHA256, SCHEME_HMAC):
            return ChainReport(checked, event.pk, "unknown hash scheme"), None, None
        if event.hash_scheme < scheme:
            return ChainReport(checked, event.pk, SCHEME_DOWNGRADE), None, None
        if event.hash_scheme == SCHEME_SHA256 and event.pk > until:
            reason = UNKEYED_AFTER_CUTOVER.format(until=until)
            return ChainReport(checked, event.pk, reason), None, None
        scheme = event.hash_scheme
        if payload_hash(event.payload) != event.payload_hash:
            return ChainReport(checked, event.pk, "payload does not match its hash"), None, None
        expected = event_hash(
            prev_hash=event.prev_hash,
            created_at=event.created_at,
            actor_id=event.actor_id,
            actor_label=event.actor_label,
            action=event.action,
            object_type=event.object_type,
            object_id=event.object_id,
            payload_digest=event.payload_hash,
            scheme=event.hash_scheme,
        )
        if not hmac.compare_digest(expected, event.hash):
            return ChainReport(checked, event.pk, "event fields do not match its hash"), None, None
        if event.pk == anchored_id:
            anchored_hash = event.hash
        prev = event.hash
        head = event
    return ChainReport(checked, None, ""), head, anchored_hash


class ReanchorRefused(Exception):
    """The chain's links do not hold: anchoring its head would bless a forgery."""


@dataclass(frozen=True)
class Reanchored:
    anchor: Anchor
    previous: Anchor | None
    previous_unreadable: bool
    kept: Path | None
    checked: int


def audit_reanchor(*, reason: str, operator: str) -> Reanchored:
    """Anchor the head of a chain whose every link holds, after the anchor file was lost or
    damaged (or never written: anchoring was off). The only way, besides a restore, to write
    an anchor behind an existing chain, so it is itself recorded on the chain, naming who ran
    it, why, and the anchor it replaced (that file is moved aside, never deleted)."""
    reason = reason.strip()
    if not reason:
        raise ReanchorRefused("give the reason for re-anchoring (--reason)")
    if anchor_path() is None:
        raise ReanchorRefused("anchoring is off (AUDIT_ANCHOR_PATH=off): nothing to re-anchor")
    report, head = audit_chain_check()
    if not report.ok:
        raise ReanchorRefused(
            f"audit chain BROKEN at event #{report.broken_event_id}: {report.reason}; "
            "a broken chain is never re-anchored"
        )
    try:
        previous, unreadable = anchor_read(), False
    except AnchorUnreadable:
        previous, unreadable = None, True
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    # First the verified head, then the event recording this, anchored as every event is.
    kept = anchor_reset(
        head=Anchor(head.pk, head.hash) if head is not None else None, reason=f"reanchor-{stamp}"
    )
    with transaction.atomic():
        event = audit_record(
            action="audit.reanchored",
            object_type="audit_anchor",
            payload={
                "reason": reason[:500],
                "operator": operator[:150],
                "head_before_id": head.pk if head is not None else None,
                "previous_anchor": (
                    {"event_id": previous.event_id, "hash": previous.hash}
                    if previous is not None
                    else ("unreadable" if unreadable else None)
                ),
                "previous_anchor_kept": kept.name if kept is not None else None,
            },
        )
    anchor_advance(event_id=event.pk, event_hash=event.hash, create=True)
    return Reanchored(
        anchor=Anchor(event.pk, event.hash),
        previous=previous,
        previous_unreadable=unreadable,
        kept=kept,
        checked=report.checked,
    )
