"""Every WebSocket route, with every role, against the permission table's SOCKETS rows."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from mdtboard.asgi import application
from mdtboard.routing import websocket_urlpatterns
from tests.mdtboard.permissions import ALLOW, DENY, ROLES, SOCKETS

# The consumers read the database from another thread: the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)

# The conftest persona of each role of the table.
PERSONAS = {
    "team-clinician": "clinician",
    "other-team-clinician": "outsider",
    "rater": "rater",
    "curator": "curator",
    "admin": "admin_user",
}


def test_every_websocket_route_has_a_row_and_every_row_a_route() -> None:
    routes = {str(pattern.pattern) for pattern in websocket_urlpatterns}
    assert not routes - set(SOCKETS), "add it to SOCKETS in tests/mdtboard/permissions.py"
    assert not set(SOCKETS) - routes, "remove the row: no such WebSocket route"


CASES = [
    pytest.param(route, role, expected, id=f"{route}-{role}")
    for route, outcomes in SOCKETS.items()
    for role, expected in zip(ROLES, outcomes, strict=True)
]


@pytest.mark.parametrize(("route", "role", "expected"), CASES)
async def test_websocket_answers_each_role_as_the_table_says(
    request: pytest.FixtureRequest, queued: Any, route: str, role: str, expected: str
) -> None:
    # given a user of the role (or a visitor with no session at all)
    path = "/" + route.replace("<int:pk>", str(queued.pk))
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"origin", b"http://localhost")]
    )
    if role != "anonymous":
        communicator.scope["user"] = request.getfixturevalue(PERSONAS[role])
    # when they open the socket
    connected, code = await communicator.connect(timeout=10)
    # then it is accepted, or closed with a refusal code, as the table says
    try:
        assert (ALLOW if connected else DENY) == expected, f"{route} as {role}"
        if not connected:
            assert code in (4401, 4403), code
    finally:
        await communicator.disconnect()
