"""How an audit row's hashes are computed; shared by the writer and the verifier."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def payload_hash(payload: Any) -> str:
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


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
) -> str:
    body = canonical_json(
        [
            prev_hash,
            created_at.isoformat(timespec="microseconds"),
            actor_id,
            actor_label,
            action,
            object_type,
            object_id,
            payload_digest,
        ]
    )
    return hashlib.sha256(body.encode()).hexdigest()
