"""The one way to write the audit log, and the check of its chain."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from mdtboard.audit.hashing import GENESIS_HASH, event_hash, payload_hash
from mdtboard.audit.models import AuditEvent

# Any constant works; it names the advisory lock that serialises appends to the chain.
_CHAIN_LOCK_KEY = 0x6D6474_61756474  # "mdt" "audt"


@transaction.atomic
def audit_record(
    *,
    action: str,
    actor: Any = None,
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
    actor_id = actor.pk if actor is not None and getattr(actor, "is_authenticated", False) else None
    actor_label = actor.get_username() if actor_id is not None else ""
    with connection.cursor() as cursor:
        # Transaction-scoped: released at commit, so concurrent writers form one chain.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CHAIN_LOCK_KEY])
    last = AuditEvent.objects.order_by("-id").values_list("hash", flat=True).first()
    prev = last or GENESIS_HASH
    created_at = timezone.now()
    digest = payload_hash(payload)
    return AuditEvent.objects.create(
        created_at=created_at,
        actor_id=actor_id,
        actor_label=actor_label,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        payload=payload,
        payload_hash=digest,
        prev_hash=prev,
        hash=event_hash(
            prev_hash=prev,
            created_at=created_at,
            actor_id=actor_id,
            actor_label=actor_label,
            action=action,
            object_type=object_type,
            object_id=str(object_id),
            payload_digest=digest,
        ),
    )


@dataclass(frozen=True)
class ChainReport:
    checked: int
    broken_event_id: int | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.broken_event_id is None


def audit_verify() -> ChainReport:
    """Walk the chain in order and report the first event whose hashes do not hold."""
    prev = GENESIS_HASH
    checked = 0
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=2000):
        checked += 1
        if event.prev_hash != prev:
            return ChainReport(checked, event.pk, "previous-hash link does not match")
        if payload_hash(event.payload) != event.payload_hash:
            return ChainReport(checked, event.pk, "payload does not match its hash")
        expected = event_hash(
            prev_hash=event.prev_hash,
            created_at=event.created_at,
            actor_id=event.actor_id,
            actor_label=event.actor_label,
            action=event.action,
            object_type=event.object_type,
            object_id=event.object_id,
            payload_digest=event.payload_hash,
        )
        if expected != event.hash:
            return ChainReport(checked, event.pk, "event fields do not match its hash")
        prev = event.hash
    return ChainReport(checked, None, "")
