"""How an audit row's hashes are computed; shared by the writer and the verifier.

Two schemes, recorded per row so old rows stay verifiable:

1. plain SHA-256 of the row (rows written before the key existed);
2. HMAC-SHA256 keyed with ``settings.AUDIT_HMAC_KEY``: without the key nobody can recompute a
   rewritten chain, even with write access to the table.

A chain never goes back from 2 to 1: the verifier refuses a legacy row after a keyed one, and
any legacy row after the cut-over (``settings.AUDIT_LEGACY_UNTIL``, the id of the last event
written before the key existed; 0, the default, for a log that began keyed). The cut-over is
kept outside the database: whoever can rewrite the table could otherwise recompute the whole
chain in the unkeyed scheme and call it legacy.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

from django.conf import settings

GENESIS_HASH = "0" * 64
SCHEME_SHA256 = 1
SCHEME_HMAC = 2
CURRENT_SCHEME = SCHEME_HMAC


def legacy_until() -> int:
    """The id of the last event that may carry the unkeyed scheme (0: none may)."""
    return max(0, int(getattr(settings, "AUDIT_LEGACY_UNTIL", 0) or 0))


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def payload_hash(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def _key() -> bytes:
    key = getattr(settings, "AUDIT_HMAC_KEY", "")
    if not key:
        raise RuntimeError("AUDIT_HMAC_KEY is not configured")
    return str(key).encode()


def event_hash(
    *,
    prev_hash: str,
    created_at: datetime,
    actor_id: int | None,
    actor_label: str,
    action: str,
    object_type: str,
    object_id: str,
    payload_digest: str,
    scheme: int = CURRENT_SCHEME,
) -> str:
    fields: list[Any] = [
        prev_hash,
        created_at.isoformat(timespec="microseconds"),
        actor_id,
        actor_label,
        action,
        object_type,
        object_id,
        payload_digest,
    ]
    if scheme == SCHEME_SHA256:
        return hashlib.sha256(canonical_json(fields).encode()).hexdigest()
    if scheme == SCHEME_HMAC:
        # The scheme is part of the signed body: a keyed row cannot be relabelled as legacy.
        body = canonical_json([scheme, *fields]).encode()
        return hmac.new(_key(), body, hashlib.sha256).hexdigest()
    raise ValueError(f"unknown audit hash scheme {scheme}")
