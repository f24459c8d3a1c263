"""WebSocket URL routes of every app."""

from __future__ import annotations

from django.urls import path

from consult.consumers import BoardConsumer, NotificationConsumer

websocket_urlpatterns = [
    path("ws/notifications/", NotificationConsumer.as_asgi()),
    path("ws/consultations/<int:pk>/", BoardConsumer.as_asgi()),
]
