"""Two-factor for the roles that need it: curators and administrators cannot use the app
before they have set up an authenticator app; clinicians are not forced."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import SECRET_SESSION_KEY, TOTP
from channels.testing import WebsocketCommunicator
from django.core import mail
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from mdtboard.accounts.middleware import MFA_REQUIRED_MESSAGE
from mdtboard.accounts.selectors import mfa_required_roles
from tests.fixtures.htmx import HISTORY_RESTORE
from tests.fixtures.personas import PASSWORD, TOTP_SECRET, make_user, totp_code

pytestmark = pytest.mark.django_db

KB_PAGE = "/kb/units/"


@pytest.fixture
def bare_curator(db: None) -> Any:
    """A curator who has not set up an authenticator app yet (a new invitee, say)."""
    return make_user("curator", "new-curator@hospital.test", [], two_factor=False)


def test_mfa_required_curator_without_totp_is_sent_to_setup_with_the_reason(
    client: Any, bare_curator: Any
) -> None:
    # given a signed-in curator without an authenticator app
    client.force_login(bare_curator)
    # when they open a knowledge-base page
    response = client.get(KB_PAGE)
    # then they land on the authenticator-app setup instead, told why
    assert response.status_code == 302
    assert response["Location"] == reverse("mfa_activate_totp")
    shown = client.get(reverse("mfa_index"))
    assert shown.status_code == 200
    assert MFA_REQUIRED_MESSAGE in shown.content.decode()


def test_mfa_required_page_loads_once_totp_is_active(client: Any, bare_curator: Any) -> None:
    # given a curator who was sent to the setup page
    client.force_login(bare_curator)
    assert client.get(KB_PAGE).status_code == 302
    # when they activate an authenticator app
    TOTP.activate(bare_curator, TOTP_SECRET)
    # then the knowledge-base page opens
    response = client.get(KB_PAGE)
    assert response.status_code == 200
    assert b"Knowledge units" in response.content


def test_mfa_required_curator_sets_up_totp_through_the_real_pages(
    client: Any, bare_curator: Any
) -> None:
    # given a curator who signs in with their password only
    client.post(reverse("account_login"), {"login": bare_curator.email, "password": PASSWORD})
    # when they follow the redirect to the setup page, told why, confirm their password
    told = client.get(KB_PAGE, follow=True)
    assert told.redirect_chain[0][0] == reverse("mfa_activate_totp")
    assert MFA_REQUIRED_MESSAGE in told.content.decode()
    setup = client.post(reverse("account_reauthenticate"), {"password": PASSWORD}, follow=True)
    assert setup.redirect_chain[-1][0] == reverse("mfa_activate_totp")
    assert b"secret" in setup.content.lower()
    # and enter the code their app shows
    secret = client.session[SECRET_SESSION_KEY]
    activated = client.post(reverse("mfa_activate_totp"), {"code": totp_code(secret)})
    assert activated.status_code == 302
    # then they hold an authenticator and the knowledge base is theirs to use
    assert Authenticator.objects.filter(user=bare_curator, type="totp").exists()
    assert client.get(KB_PAGE).status_code == 200


def test_mfa_required_admin_without_totp_is_sent_to_setup(client: Any) -> None:
    # given an administrator (a superuser) without an authenticator app
    admin = make_user("admin", "new-admin@hospital.test", [], two_factor=False)
    client.force_login(admin)
    # when they open the invitation page, then they are sent to the setup
    response = client.get(reverse("accounts:invite"))
    assert response.status_code == 302
    assert response["Location"] == reverse("mfa_activate_totp")


def test_mfa_required_forces_curators_but_not_clinicians(
    client: Any, bare_curator: Any, clinician: Any
) -> None:
    # given a curator and a clinician, neither with an authenticator app
    curator_client, clinician_client = client, type(client)()
    curator_client.force_login(bare_curator)
    clinician_client.force_login(clinician)
    # when each opens their home page
    forced = curator_client.get(reverse("core:home"))
    free = clinician_client.get(reverse("core:home"))
    # then the curator is sent to the setup and the clinician's page loads
    assert forced.status_code == 302
    assert forced["Location"] == reverse("mfa_activate_totp")
    assert free.status_code == 200
    assert MFA_REQUIRED_MESSAGE not in free.content.decode()


def test_mfa_required_htmx_request_gets_403_with_the_reason(client: Any, bare_curator: Any) -> None:
    client.force_login(bare_curator)
    # when the page asks for a fragment, a redirect would swap the setup page into it
    response = client.get(KB_PAGE, headers={"HX-Request": "true"})
    # then the request is refused, saying why
    assert response.status_code == 403
    assert response.content.decode() == MFA_REQUIRED_MESSAGE


def test_mfa_required_back_button_is_sent_to_the_setup(client: Any, bare_curator: Any) -> None:
    client.force_login(bare_curator)
    # when htmx restores a page from history (it shows no error response, only a blank)
    response = client.get(KB_PAGE, headers=HISTORY_RESTORE)
    # then it is sent to the setup like any page load
    assert response.status_code == 302
    assert response["Location"] == reverse("mfa_activate_totp")


def test_mfa_required_json_request_gets_403_json(client: Any, bare_curator: Any) -> None:
    client.force_login(bare_curator)
    response = client.get(KB_PAGE, headers={"Accept": "application/json"})
    assert response.status_code == 403
    assert json.loads(response.content) == {"error": MFA_REQUIRED_MESSAGE}


def test_mfa_required_leaves_setup_logout_and_health_open(client: Any, bare_curator: Any) -> None:
    # given a curator who is kept from the app until they set up two-factor
    client.force_login(bare_curator)
    assert client.get(KB_PAGE).status_code == 302
    # the setup asks to confirm the password first (not a loop back to itself)
    setup = client.get(reverse("mfa_activate_totp"))
    assert setup.status_code == 302
    assert setup["Location"].startswith(reverse("account_reauthenticate"))
    assert client.get(reverse("account_reauthenticate")).status_code == 200
    # their addresses (allauth refuses two-factor while one is unverified) and the health check
    assert client.get(reverse("account_email")).status_code == 200
    assert client.get(reverse("core:healthz")).status_code in (200, 503)
    # and they can sign out
    client.post(reverse("account_logout"))
    assert "_auth_user_id" not in client.session


def test_mfa_required_roles_can_be_switched_off(
    client: Any, bare_curator: Any, settings: Any
) -> None:
    client.force_login(bare_curator)
    assert client.get(KB_PAGE).status_code == 302
    # when the deployment requires two-factor of no role (MFA_REQUIRED_ROLES empty)
    settings.MFA_REQUIRED_ROLES = []
    # then a curator without an app works as before
    assert client.get(KB_PAGE).status_code == 200


def test_mfa_required_roles_refuses_a_role_that_does_not_exist(settings: Any) -> None:
    settings.MFA_REQUIRED_ROLES = ["admin", "curater"]
    with pytest.raises(ImproperlyConfigured, match="curater"):
        mfa_required_roles()


async def _notification_socket(user: Any) -> tuple[bool, Any]:
    from mdtboard.asgi import application

    communicator = WebsocketCommunicator(
        application, "/ws/notifications/", headers=[(b"origin", b"http://localhost")]
    )
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    await communicator.disconnect()
    return connected, code


@pytest.mark.django_db(transaction=True)
async def test_mfa_required_socket_refused_until_totp_is_active(bare_curator: Any) -> None:
    from asgiref.sync import sync_to_async

    # given a curator without an authenticator app, their notification socket is refused
    connected, code = await _notification_socket(bare_curator)
    assert (connected, code) == (False, 4403)
    # when they activate one, then it connects
    await sync_to_async(TOTP.activate)(bare_curator, TOTP_SECRET)
    connected, _ = await _notification_socket(bare_curator)
    assert connected


def test_mfa_required_invited_curator_is_sent_to_setup_and_may_turn_it_on(
    client: Any, admin_user: Any
) -> None:
    # given a curator invited by an administrator, who set a password through the emailed link
    client.force_login(admin_user)
    client.post(reverse("accounts:invite"), {"email": "invitee@hospital.test", "role": "curator"})
    link = re.search(r"https?://\S+", mail.outbox[-1].body)
    assert link is not None
    client.logout()
    form_page = client.get(link.group(0), follow=True)
    chosen = "a long new passphrase 42"
    client.post(
        form_page.redirect_chain[-1][0], {"password1": chosen, "password2": chosen}, follow=True
    )
    # when they sign in and open the knowledge base
    client.post(reverse("account_login"), {"login": "invitee@hospital.test", "password": chosen})
    told = client.get(KB_PAGE, follow=True)
    assert told.redirect_chain[0][0] == reverse("mfa_activate_totp")
    setup = client.post(reverse("account_reauthenticate"), {"password": chosen}, follow=True)
    # then they are shown a secret to add to their app, not "verify your email first"
    page = setup.content.decode()
    assert setup.redirect_chain[-1][0] == reverse("mfa_activate_totp")
    assert "verified your email" not in page
    assert "secret" in page.lower()
