"""The only module that talks to the channel layer: everything pushed to browsers goes here."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def user_notify(*, user_id: int, level: str, text: str) -> None:
    """Push a short notice (e.g. "consultation finished") to every open tab of one user."""
    layer = get_channel_layer()
    if layer is None:
        raise ImproperlyConfigured("CHANNEL_LAYERS is not configured")
    message: dict[str, Any] = {"type": "notify.message", "level": level, "text": text}
    async_to_sync(layer.group_send)(user_group(user_id), message)


def consultation_group(consultation_id: int) -> str:
    return f"consultation-{consultation_id}"


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        raise ImproperlyConfigured("CHANNEL_LAYERS is not configured")
    async_to_sync(layer.group_send)(group, message)


def board_events(
    *, consultation_id: int, events: list[tuple[int, str, dict[str, Any] | None]]
) -> None:
    """Send newly persisted events to the board's watchers: each as its fragment, rendered
    once by the broadcaster rather than once per watcher, and its sequence number. The event
    itself is not sent: no watcher folds it any more (consult/consumers.py), and the channel
    layer copies and decodes a message once per watcher, so its payload (a member's whole
    report) cost every delivery. Called after the commit, so a watcher that missed one can
    always load it from the database instead."""
    for seq, html, _event in events:
        try:
            _send(
                consultation_group(consultation_id),
                {"type": "board.event", "consultation": consultation_id, "seq": seq, "html": html},
            )
        except Exception:  # noqa: BLE001 - the event is saved; a reconnect replays it
            logger.warning("broadcast of event %s#%s failed", consultation_id, seq)
            return


async def board_delta_async(*, consultation_id: int, role: str, round: int, text: str) -> None:
    """An ephemeral token fragment of a role's reply, sent from the engine's event loop;
    never persisted, may be lost."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(
            consultation_group(consultation_id),
            {"type": "board.delta", "role": role, "round": round, "text": text},
        )
    except Exception:  # noqa: BLE001 - fragments are best effort by design
        logger.debug("delta broadcast failed for consultation %s", consultation_id)
