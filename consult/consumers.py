"""WebSocket consumers: authorise, join a group, relay. No business logic here."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.template.loader import render_to_string

from consult.broadcasts import user_group


class NotificationConsumer(AsyncJsonWebsocketConsumer):
    """Per-user notices rendered as an htmx out-of-band fragment for the page's notice area."""

    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            await self.close(code=4401)
            return
        self.group = user_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # Clients only listen on this socket.
        return

    async def notify_message(self, event: dict[str, Any]) -> None:
        # Autoescaped template: notice text may quote user or LLM text.
        html = render_to_string(
            "core/partials/_notice.html", {"level": event["level"], "text": event["text"]}
        )
        await self.send(text_data=html)
