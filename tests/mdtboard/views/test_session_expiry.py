"""Sessions end after 30 idle minutes and, whatever the activity, 8 hours after sign-in."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mdtboard.accounts import sessions
from mdtboard.audit.models import AuditEvent
from tests.fixtures.htmx import HISTORY_RESTORE

pytestmark = pytest.mark.django_db

MINUTE = 60
HOME = "/"


class Clock:
    def __init__(self) -> None:
        self.now = 1_900_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, *, minutes: float) -> None:
        self.now += minutes * MINUTE


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(sessions, "clock", fake)
    return fake


def _signed_in(client: Any) -> bool:
    return "_auth_user_id" in client.session


def _expiries(user: Any) -> list[str]:
    return [
        event.payload["reason"]
        for event in AuditEvent.objects.filter(
            action="auth.session_expired", object_id=str(user.pk)
        )
    ]


def test_session_expiry_after_idle_timeout_signs_out_and_audits(
    client: Any, clinician: Any, clock: Clock
) -> None:
    # given a clinician who signed in and used the app
    client.force_login(clinician)
    assert client.get(HOME).status_code == 200
    # when they come back after 31 minutes away
    clock.advance(minutes=31)
    response = client.get(HOME, follow=True)
    # then they are on the login page, told why, and signed out
    assert response.redirect_chain[0][0].startswith(reverse("account_login"))
    assert "signed out after 30 minutes without activity" in response.content.decode()
    assert not _signed_in(client)
    # and the audit log says the session expired, and why
    assert _expiries(clinician) == ["idle"]
    assert AuditEvent.objects.filter(action="auth.logout", object_id=str(clinician.pk)).exists()


def test_session_expiry_activity_within_the_idle_window_keeps_the_session(
    client: Any, clinician: Any, colleague: Any, clock: Clock
) -> None:
    # given two clinicians who sign in at the same time
    active, idle = client, type(client)()
    active.force_login(clinician)
    idle.force_login(colleague)
    # when one makes a request every 25 minutes for an hour and a quarter, the other none
    for _ in range(3):
        clock.advance(minutes=25)
        # then every page loads for the active one
        assert active.get(HOME).status_code == 200
    # and they stay signed in, while the idle one is signed out at their next request
    assert idle.get(HOME).status_code == 302
    assert _signed_in(active)
    assert not _signed_in(idle)
    assert _expiries(clinician) == []
    assert _expiries(colleague) == ["idle"]


def test_session_expiry_absolute_lifetime_is_not_extended_by_activity(
    client: Any, clinician: Any, clock: Clock
) -> None:
    client.force_login(clinician)
    # given a clinician active every 20 minutes for almost 8 hours
    for _ in range(23):
        clock.advance(minutes=20)
        assert client.get(HOME).status_code == 200
    # when 8 hours have passed since they signed in (still only 20 minutes since the last click)
    clock.advance(minutes=20)
    response = client.get(HOME, follow=True)
    # then they must sign in again, and the audit log says the lifetime ran out
    assert response.redirect_chain[0][0].startswith(reverse("account_login"))
    assert "reached its limit of 8 hours" in response.content.decode()
    assert not _signed_in(client)
    assert _expiries(clinician) == ["absolute"]


def test_session_expiry_signing_in_again_starts_a_new_session(
    client: Any, clinician: Any, clock: Clock
) -> None:
    client.force_login(clinician)
    clock.advance(minutes=45)
    client.get(HOME)
    assert not _signed_in(client)
    # when they sign in again, the new session counts from now
    client.force_login(clinician)
    clock.advance(minutes=10)
    assert client.get(HOME).status_code == 200


def test_session_expiry_htmx_request_loads_the_login_page_whole(
    client: Any, clinician: Any, clock: Clock
) -> None:
    client.force_login(clinician)
    clock.advance(minutes=31)
    # when a fragment request arrives after the idle timeout
    response = client.get(HOME, headers={"HX-Request": "true"})
    # then htmx is told to load the login page itself rather than swap it into a fragment
    assert response["HX-Redirect"] == reverse("account_login")
    assert not _signed_in(client)


def test_session_expiry_back_button_is_sent_to_the_login_page(
    client: Any, clinician: Any, clock: Clock
) -> None:
    client.force_login(clinician)
    clock.advance(minutes=31)
    # when htmx restores a page from history after the idle timeout (it ignores HX-Redirect
    # there, and swaps whatever the response holds into the page)
    response = client.get(HOME, headers=HISTORY_RESTORE, follow=True)
    # then it is answered with the login page itself
    assert response.redirect_chain[0][0].startswith(reverse("account_login"))
    assert "HX-Redirect" not in response
    assert 'name="password"' in response.content.decode()
    assert not _signed_in(client)
