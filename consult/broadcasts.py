"""The only module that talks to the channel layer: everything pushed to browsers goes here."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.exceptions import ImproperlyConfigured


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def user_notify(*, user_id: int, level: str, text: str) -> None:
    """Push a short notice (e.g. "consultation finished") to every open tab of one user."""
    layer = get_channel_layer()
    if layer is None:
        raise ImproperlyConfigured("CHANNEL_LAYERS is not configured")
    message: dict[str, Any] = {"type": "notify.message", "level": level, "text": text}
    async_to_sync(layer.group_send)(user_group(user_id), message)
