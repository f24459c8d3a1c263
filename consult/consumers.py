"""WebSocket consumers: authorise, join a group, relay. No business logic here."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.template.loader import render_to_string
from django.utils.html import escape

from consult.board import Board, apply, build_board, dom_id, event_dict
from consult.board_render import render_changes
from consult.broadcasts import consultation_group, user_group
from consult.models import ConsultationEvent
from consult.selectors import consultation_can_watch


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


class BoardConsumer(AsyncWebsocketConsumer):
    """The live board of one consultation. Authorises like the board page, joins the
    consultation's group, and on the client's ``resume`` (its last sequence number) sends every
    persisted event after it, then each new one, in order and exactly once, as htmx
    out-of-band fragments. Token deltas are relayed as they come and never persisted."""

    consultation_id: int = 0
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.consultation_id = int(self.scope["url_route"]["kwargs"]["pk"])
        allowed = (
            user is not None
            and user.is_authenticated
            and await database_sync_to_async(consultation_can_watch)(
                user=user, consultation_id=self.consultation_id
            )
        )
        if not allowed:
            await self.close(code=4403)
            return
        self.board: Board | None = None
        self.sent: int | None = None

        self.lock = asyncio.Lock()
        self.group = consultation_group(self.consultation_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            message = json.loads(text_data or "{}")
            after = int(message.get("after", 0)) if message.get("type") == "resume" else None
        except (ValueError, TypeError, AttributeError):
            return  # not ours: ignore rather than trust
        if after is None or after < 0:
            return
        async with self.lock:
            self.board = await database_sync_to_async(self._board_upto)(after)
            self.sent = after
            await self._catch_up()

    async def board_event(self, event: dict[str, Any]) -> None:
        if self.sent is None:
            return  # the client has not said where it is yet; its resume will catch up
        async with self.lock:
            if event.get("html") and event["seq"] == self.sent + 1:
                # The usual case: the next event, rendered once by the broadcaster.
                await self.send(text_data=event["html"])
                self.sent = event["seq"]
                self.board = None  # folded lazily if this watcher ever falls behind
                return
            await self._catch_up()

    async def board_delta(self, event: dict[str, Any]) -> None:
        if self.sent is None:
            return
        target = f"live-panel-{dom_id(str(event['role']))}"
        await self.send(
            text_data=f'<div id="{target}" hx-swap-oob="beforeend">{escape(event["text"])}</div>'
        )

    def _board_upto(self, seq: int) -> Board:
        events = ConsultationEvent.objects.filter(
            consultation_id=self.consultation_id, seq__lte=seq
        ).order_by("seq")
        return build_board(self.consultation_id, [event_dict(e) for e in events])

    def _events_after(self, seq: int) -> list[dict[str, Any]]:
        events = ConsultationEvent.objects.filter(
            consultation_id=self.consultation_id, seq__gt=seq
        ).order_by("seq")[:500]
        return [event_dict(e) for e in events]

    async def _catch_up(self) -> None:
        if self.sent is None:
            return  # nothing to catch up from before the client's resume
        if self.board is None:
            self.board = await database_sync_to_async(self._board_upto)(self.sent)
        while True:
            events = await database_sync_to_async(self._events_after)(self.sent)
            if not events:
                return
            for event in events:
                known_rounds = set(self.board.rounds)
                changed = apply(self.board, event)
                await self.send(text_data=render_changes(self.board, changed, event, known_rounds))
                self.sent = event["seq"]
