"""ASGI entry point for Daphne: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from mdtboard.bootstrap import embedded_servers

# A server or worker started without DJANGO_SETTINGS_MODULE gets the production settings
# (which refuse to start without their secrets), never the development ones with DEBUG on.
# `make run` and manage.py choose the development settings explicitly.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.production")

# The embedded servers (if no real ones are configured) before the settings are read.
embedded_servers()
# Django must be set up before anything imports models (the routing does, through consumers).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from mdtboard.core.limits import RequestBodyLimit  # noqa: E402
from mdtboard.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": RequestBodyLimit(django_asgi_app, max_bytes=settings.MAX_REQUEST_BYTES),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
