"""The email page, password reset and invitations as an attacker or an invitee would use them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.account.utils import user_pk_to_url_str
from django.core import mail
from django.test import Client
from django.urls import reverse

from mdtboard.accounts.models import User
from mdtboard.accounts.services import EMAIL_TAKEN
from mdtboard.audit.models import AuditEvent
from tests.fixtures.personas import PASSWORD

pytestmark = pytest.mark.django_db


def _signed_in_recently(client: Any, user: Any) -> None:
    """Logged in through the login page: the email page's actions need a recent sign-in."""
    client.post(reverse("account_login"), {"login": user.email, "password": PASSWORD})


def test_a_user_cannot_add_another_users_address(
    client: Any, clinician: Any, outsider: Any
) -> None:
    # given a signed-in clinician
    _signed_in_recently(client, clinician)
    # when they add a colleague's address (in another case, as the probe did)
    response = client.post(
        reverse("account_email"),
        {"action_add": "", "email": outsider.email.upper()},
        follow=True,
    )
    # then it is refused with a plain message and not stored
    assert response.status_code == 200
    assert EMAIL_TAKEN in response.content.decode()
    assert not EmailAddress.objects.filter(user=clinician).exclude(email=clinician.email)
    # and signing in with that address and the attacker's password gets nobody in
    attacker = Client()
    attacker.post(reverse("account_login"), {"login": outsider.email, "password": "wrong"})
    assert "_auth_user_id" not in attacker.session


def test_making_a_borrowed_address_primary_is_refused_without_a_500(
    client: Any, clinician: Any, outsider: Any
) -> None:
    # given an address of another account already on a clinician's list (added before
    # addresses had to be unique)
    EmailAddress.objects.create(user=clinician, email=outsider.email, verified=True)
    _signed_in_recently(client, clinician)
    # when they make it their primary address
    response = client.post(
        reverse("account_email"),
        {"action_primary": "", "email": outsider.email},
        follow=True,
    )
    # then they read why not, and both accounts keep their addresses
    assert response.status_code == 200
    assert EMAIL_TAKEN in [str(m) for m in response.context["messages"]]
    clinician.refresh_from_db()
    outsider.refresh_from_db()
    assert clinician.email == "owner@hospital.test"
    assert outsider.email != clinician.email


def test_email_changes_are_audited(client: Any, clinician: Any) -> None:
    # given a signed-in clinician
    _signed_in_recently(client, clinician)
    # when they add a new address, make it primary, then remove the old one
    new = "owner.new@hospital.test"
    client.post(reverse("account_email"), {"action_add": "", "email": new})
    EmailAddress.objects.filter(email=new).update(verified=True)
    client.post(reverse("account_email"), {"action_primary": "", "email": new})
    client.post(reverse("account_email"), {"action_remove": "", "email": "owner@hospital.test"})
    # then each change is in the audit log, on the user, in order
    actions = list(
        AuditEvent.objects.filter(
            action__startswith="account.email.", object_id=str(clinician.pk)
        ).values_list("action", flat=True)
    )
    assert actions == ["account.email.add", "account.email.primary", "account.email.remove"]
    primary = AuditEvent.objects.get(action="account.email.primary")
    assert primary.payload["email"] == new
    clinician.refresh_from_db()
    assert clinician.email == new


def test_password_reset_for_an_unknown_address_sends_no_sign_up_invitation(client: Any) -> None:
    # when someone asks for a reset of an address that is no account
    response = client.post(reverse("account_reset_password"), {"email": "nobody@else.test"})
    # then the page reads as for a real account (no enumeration), and no mail invites sign-up
    assert response.status_code == 302
    assert response["Location"] == reverse("account_reset_password_done")
    assert mail.outbox == []


def test_an_invited_user_can_turn_on_two_factor(client: Any, admin_user: Any, team: Any) -> None:
    # given an invited clinician who set a password through the emailed link
    client.force_login(admin_user)
    client.post(
        reverse("accounts:invite"),
        {"email": "invitee@hospital.test", "role": "clinician", "teams": [team.pk]},
    )
    link = re.search(r"https?://\S+", mail.outbox[-1].body)
    assert link is not None
    client.logout()
    form_page = client.get(link.group(0), follow=True)
    chosen = "a long new passphrase 42"
    client.post(
        form_page.redirect_chain[-1][0], {"password1": chosen, "password2": chosen}, follow=True
    )
    invitee = User.objects.get(email="invitee@hospital.test")
    assert AuditEvent.objects.filter(
        action="account.email.verify", object_id=str(invitee.pk)
    ).exists()
    # when they sign in and open the authenticator-app setup
    client.post(reverse("account_login"), {"login": invitee.email, "password": chosen})
    client.post(reverse("account_reauthenticate"), {"password": chosen})
    response = client.get(reverse("mfa_activate_totp"), follow=True)
    # then they are shown a secret, not "verify your email first"
    page = response.content.decode()
    assert "verified your email" not in page
    assert "secret" in page.lower()


def test_an_added_address_signs_nobody_in_until_its_link_is_followed(
    client: Any, clinician: Any
) -> None:
    # given a clinician who adds an address that is not theirs and that no account has
    _signed_in_recently(client, clinician)
    claimed = "head.of.department@hospital.test"
    mail.outbox.clear()
    client.post(reverse("account_email"), {"action_add": "", "email": claimed})
    # then a confirmation link goes to that address, and the address stays unconfirmed
    assert [message.to for message in mail.outbox] == [[claimed]]
    assert EmailAddress.objects.get(email=claimed).verified is False
    # and signing in with it, even with the clinician's own password, gets nobody in
    other = Client()
    other.post(reverse("account_login"), {"login": claimed, "password": PASSWORD})
    assert "_auth_user_id" not in other.session
    # when the address's owner follows the link (here, the clinician after all)
    link = re.search(r"https?://\S+", mail.outbox[-1].body)
    assert link is not None
    client.post(link.group(0))
    # then it is theirs: confirmed, and it signs them in
    assert EmailAddress.objects.get(email=claimed).verified is True
    other.post(reverse("account_login"), {"login": claimed, "password": PASSWORD})
    assert other.session["_auth_user_id"] == str(clinician.pk)


def test_an_unconfirmed_claim_does_not_keep_an_address_from_its_owner(
    client: Any, clinician: Any, admin_user: Any, team: Any
) -> None:
    # given a clinician who added a future colleague's address without confirming it
    _signed_in_recently(client, clinician)
    address = "new.colleague@hospital.test"
    client.post(reverse("account_email"), {"action_add": "", "email": address})
    client.logout()
    # when an administrator invites that colleague
    client.force_login(admin_user)
    response = client.post(
        reverse("accounts:invite"),
        {"email": address, "role": "clinician", "teams": [team.pk]},
        follow=True,
    )
    # then the invitation goes out (the address is not "taken")
    assert EMAIL_TAKEN not in response.content.decode()
    invitee = User.objects.get(email=address)
    # and once the colleague sets a password through the emailed link, the claim is gone
    link = re.search(r"https?://\S+", mail.outbox[-1].body)
    assert link is not None
    client.logout()
    form_page = client.get(link.group(0), follow=True)
    chosen = "a long new passphrase 42"
    client.post(
        form_page.redirect_chain[-1][0], {"password1": chosen, "password2": chosen}, follow=True
    )
    assert list(EmailAddress.objects.filter(email__iexact=address).values_list("user_id")) == [
        (invitee.pk,)
    ]
    assert AuditEvent.objects.filter(
        action="account.email.released", object_id=str(clinician.pk)
    ).exists()


def test_an_invitation_removes_every_unconfirmed_claim_before_a_password_reset(
    client: Any, clinician: Any, colleague: Any, admin_user: Any, team: Any
) -> None:
    # given two accounts that added a new hire's address without confirming it
    address = "newhire@hospital.test"
    for user in (clinician, colleague):
        EmailAddress.objects.create(user=user, email=address, verified=False, primary=False)
    # when an administrator invites the new hire
    client.force_login(admin_user)
    client.post(
        reverse("accounts:invite"),
        {"email": address, "role": "clinician", "teams": [team.pk]},
        follow=True,
    )
    invitee = User.objects.get(email=address)
    client.logout()
    # then no claim is left, even before the invitee has followed the link
    assert list(EmailAddress.objects.filter(email__iexact=address).values_list("user_id")) == [
        (invitee.pk,)
    ]
    released = AuditEvent.objects.filter(action="account.email.released")
    assert {e.object_id for e in released} == {str(clinician.pk), str(colleague.pk)}
    # and a password reset for the address mails one link, for the invitee's account only
    mail.outbox.clear()
    client.post(reverse("account_reset_password"), {"email": address})
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == [address]
    links = re.findall(r"/password/reset/key/([0-9a-z]+)-", mail.outbox[0].body)
    assert links == [user_pk_to_url_str(invitee)]
