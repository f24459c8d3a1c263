"""Who runs a consultation: one worker holds its lease, renews it with every write and
while it waits on the LLM, and another worker takes the run over only once it lapsed (or
its holder's process is gone)."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from clinical.vocab import EventKind
from consult.engine.protocols import EngineEvent
from consult.journal.numbering import events_append
from consult.models import Consultation, ConsultationStatus

LEASE = timedelta(seconds=30)
# A worker renews its lease with every committed step and, while members wait on the LLM,
# with the engine's cancel check (every second). A lease that lapsed is LEASE without one
# renewal: thirty of those intervals, not fewer, since a worker's first retrieval may block
# its loop for tens of seconds loading the embedding model.
LEASE_STALE_AFTER = LEASE
# A consultation nobody has picked up for this long is waiting on a worker that is not there.
QUEUED_STALE_AFTER = timedelta(seconds=60)


class LeaseLost(Exception):
    """Another worker took this run over (its lease had lapsed): this one stops, writing
    nothing more, and leaves the consultation to the new owner."""


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def lease_until() -> datetime:
    """The end of a lease taken or renewed now (LEASE is read here, so a test may shorten it)."""
    return timezone.now() + LEASE


def owner_dead(owner: str) -> bool:
    """Whether the lease holder is a process of this machine that is gone."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine: only the lease's expiry can tell
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def lease_lapsed(consultation: Consultation) -> bool:
    return (
        consultation.lease_until is None
        or consultation.lease_until < timezone.now()
        or owner_dead(consultation.lease_owner)
    )


def lease_claim(*, consultation_id: int) -> Consultation | None:
    """Take the run's lease, unless it finished or another live worker holds it; say on the
    board that it runs (or resumes)."""
    with transaction.atomic():
        consultation = Consultation.objects.select_for_update().get(pk=consultation_id)
        now = timezone.now()
        if consultation.is_finished:
            return None
        held = (
            consultation.lease_owner
            and consultation.lease_until
            and consultation.lease_until > now
            and consultation.lease_owner != worker_id()
            and not owner_dead(consultation.lease_owner)
        )
        if held:
            return None
        resumed = consultation.status == ConsultationStatus.RUNNING
        consultation.status = ConsultationStatus.RUNNING
        consultation.started_at = consultation.started_at or now
        consultation.lease_owner = worker_id()
        consultation.lease_until = now + LEASE
        consultation.save(update_fields=["status", "started_at", "lease_owner", "lease_until"])
        events_append(
            consultation=consultation,
            events=[EngineEvent(EventKind.STATUS, {"status": "running", "resumed": resumed})],
        )
        return consultation


def lease_renew(*, consultation_id: int, owner: str) -> bool:
    """Renew the lease (raising LeaseLost if it is no longer ``owner``'s); return the
    consultation's cancel flag."""
    mine = Consultation.objects.filter(pk=consultation_id, lease_owner=owner)
    if not mine.update(lease_until=lease_until()):
        raise LeaseLost
    return bool(mine.values_list("cancel_requested", flat=True).first())
