"""The audit chain's head (event id and hash) kept outside the database.

Whoever can write the audit table can delete its newest rows, or rewrite a row and recompute
every later link; the chain alone still looks whole. The anchor is a small file (under var/ by
default, ``AUDIT_ANCHOR_PATH``) moved forward after each committed event and at each verify:
the verifier then finds the anchored event missing or changed. It only ever moves forward, so
concurrent writers and a late commit cannot pull it back. It is created only by the first event
of a chain, a restore or the audited ``audit_reanchor`` command: a missing file is reported by
the verifier, never silently written anew (deleting it must not let a forged head be anchored).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)


class AnchorUnreadable(Exception):
    pass


@dataclass(frozen=True)
class Anchor:
    event_id: int
    hash: str


def anchor_path() -> Path | None:
    """The anchor file, or None when anchoring is switched off (``AUDIT_ANCHOR_PATH=off``)."""
    value = getattr(settings, "AUDIT_ANCHOR_PATH", "")
    return Path(value) if value and value.strip().lower() != "off" else None


def _read(path: Path) -> Anchor | None:
    try:
        raw = path.read_text()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
        return Anchor(event_id=int(data["event_id"]), hash=str(data["hash"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise AnchorUnreadable(f"audit anchor {path} is unreadable") from exc


def anchor_read() -> Anchor | None:
    """The anchored head, None if there is none yet; AnchorUnreadable if the file is damaged."""
    path = anchor_path()
    return _read(path) if path is not None else None


def anchor_advance(*, event_id: int, event_hash: str, create: bool = False) -> bool:
    """Move the anchor to this event if it is newer than the anchored one; True if moved.
    A missing anchor file is written only with ``create`` (the chain's first event)."""
    path = anchor_path()
    if path is None:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        # One writer at a time across processes: read, compare, replace.
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            current = _read(path)
        except AnchorUnreadable:
            # Never overwrite evidence: the verifier reports the damaged file.
            logger.error("audit anchor %s is unreadable; not moved", path)
            return False
        if current is None and not create:
            logger.error("audit anchor %s is missing; not recreated (see audit_reanchor)", path)
            return False
        if current is not None and current.event_id >= event_id:
            return False
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({"event_id": event_id, "hash": event_hash}) + "\n")
        os.replace(tmp, path)
        return True


def anchor_reset(*, head: Anchor | None, reason: str) -> Path | None:
    """Put the anchor on ``head`` (None: no anchor) even if that is behind the anchored event:
    only for a database restored from a backup, whose chain legitimately ends before the
    anchored head. The previous anchor file is moved aside (``<name>.before-<reason>``), never
    deleted, as evidence of the head the restore went back from. Returns where it was kept.
    """
    path = anchor_path()
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    kept: Path | None = None
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            kept = path.with_name(f"{path.name}.before-{reason}")
            os.replace(path, kept)
        if head is not None:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(json.dumps({"event_id": head.event_id, "hash": head.hash}) + "\n")
            os.replace(tmp, path)
    return kept


def anchor_advance_quietly(event_id: int, event_hash: str, create: bool = False) -> None:
    """After-commit hook: a full disk must not fail the request the event belongs to."""
    try:
        anchor_advance(event_id=event_id, event_hash=event_hash, create=create)
    except OSError:
        logger.exception("could not write the audit anchor")
