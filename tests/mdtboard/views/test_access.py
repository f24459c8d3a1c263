"""Who may open what: login everywhere, roles, closed registration, invitations, MFA."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role
from mdtboard.audit.models import AuditEvent
from tests.fixtures.personas import PASSWORD

pytestmark = pytest.mark.django_db

# Pages a visitor must reach without logging in. Everything else redirects to the login page.
PUBLIC_PREFIXES = (
    "/healthz",
    "/favicon.ico",
    "/schema/mdtboard.case-1.json",
    "/accounts/login/",
    "/accounts/password/reset/",
    "/accounts/signup/",
    "/accounts/logout/",
    "/accounts/2fa/authenticate/",
    "/accounts/reauthenticate/",
    "/accounts/confirm-email/",
    "/accounts/login/code/",
    "/accounts/3rdparty/",
    "/accounts/password/reset/key/done/",
    "/accounts/2fa/webauthn/",
    "/accounts/inactive/",
)


def _parameterless_paths() -> list[str]:
    paths: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            route = str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + route)
            elif isinstance(pattern, URLPattern) and "<" not in route and "(?P" not in route:
                path = "/" + (prefix + route).lstrip("^").rstrip("$").replace("^", "")
                paths.append(path)

    walk(get_resolver().url_patterns, "")
    return sorted(set(paths))


def test_every_page_redirects_anonymous_visitors_to_login(client: Any) -> None:
    checked = 0
    for path in _parameterless_paths():
        if path.startswith(PUBLIC_PREFIXES) or re.search(r"[\\\[\]*+?]", path):
            continue
        response = client.get(path, follow=True)
        assert response.redirect_chain, path
        assert response.redirect_chain[-1][0].startswith(reverse("account_login")), path
        checked += 1
    # The walk found the real pages (home, invite, admin, MFA, password change, ...).
    assert checked >= 8


def test_role_groups_exist_after_migrate() -> None:
    assert set(Group.objects.values_list("name", flat=True)) >= {r.value for r in Role}
    admin_perms = set(
        Group.objects.get(name="admin").permissions.values_list("codename", flat=True)
    )
    assert {"view_auditevent", "add_user"} <= admin_perms


def test_registration_is_closed(client: Any) -> None:
    response = client.post(
        reverse("account_signup"),
        {"email": "walk-in@hospital.test", "password1": "x" * 16, "password2": "x" * 16},
    )
    assert b"Sign Up Closed" in response.content or b"closed" in response.content.lower()
    assert not User.objects.filter(email="walk-in@hospital.test").exists()


def test_home_shows_each_persona_its_role(client: Any, clinician: Any, curator: Any) -> None:
    client.force_login(clinician)
    page = client.get(reverse("core:home")).content.decode()
    assert "Hepatobiliary MDT" in page
    assert "Invite users" not in page
    client.force_login(curator)
    page = client.get(reverse("core:home")).content.decode()
    assert "Maintain guideline sources" in page
    assert "Submit lesion dossiers" not in page


def test_admin_site_opens_for_either_kind_of_admin(client: Any, any_admin: Any) -> None:
    # given an administrator, signed in
    client.force_login(any_admin)
    # when they follow the home page's link to users, teams and the audit log
    response = client.get(reverse("admin:index"))
    # then the admin site lists exactly those
    assert response.status_code == 200
    page = response.content.decode()
    for changelist in ("accounts_user", "accounts_team", "audit_auditevent"):
        assert reverse(f"admin:{changelist}_changelist") in page
    # and its login page sends them on to it rather than refusing them
    assert client.get(reverse("admin:login"))["Location"] == reverse("admin:index")


def test_admin_site_refuses_a_staff_flag_without_the_admin_role(
    client: Any, clinician: Any
) -> None:
    # given a clinician who was given Django's staff flag, but not the admin role
    User.objects.filter(pk=clinician.pk).update(is_staff=True)
    client.force_login(clinician)
    # when they open the admin site, then they are refused
    assert client.get(reverse("admin:index"), follow=True).status_code == 403


def test_an_admin_by_role_cannot_make_anyone_a_superuser(
    client: Any, group_admin: Any, clinician: Any
) -> None:
    # given an administrator by the admin group only, editing a clinician in the admin site
    client.force_login(group_admin)
    url = reverse("admin:accounts_user_change", args=[group_admin.pk])
    page = client.get(url).content.decode()
    # then the superuser and staff flags are shown read-only, not as inputs
    assert 'name="is_superuser"' not in page
    assert 'name="is_staff"' not in page
    # and posting them anyway changes nothing
    form = {
        "email": group_admin.email,
        "display_name": "x",
        "is_active": "on",
        "is_superuser": "on",
        "is_staff": "on",
        "groups": [g.pk for g in group_admin.groups.all()],
    }
    client.post(url, form)
    group_admin.refresh_from_db()
    assert not group_admin.is_superuser
    assert not group_admin.is_staff


@pytest.mark.parametrize("persona", ["clinician", "rater", "curator"])
def test_invite_page_is_for_admins_only(client: Any, persona: str, request: Any) -> None:
    client.force_login(request.getfixturevalue(persona))
    assert client.get(reverse("accounts:invite")).status_code == 403
    assert client.post(reverse("accounts:invite"), {"email": "x@y.test"}).status_code == 403


def test_admin_invites_a_clinician_who_sets_a_password_and_logs_in(
    client: Any, admin_user: Any, team: Any
) -> None:
    # given an admin
    client.force_login(admin_user)
    # when they invite a clinician to a team
    response = client.post(
        reverse("accounts:invite"),
        {
            "email": "New.Doctor@Hospital.test",
            "display_name": "Dr New",
            "role": "clinician",
            "teams": [team.pk],
        },
        follow=True,
    )
    # then the account exists without a usable password, and an email carries a one-time link
    assert b"Invitation sent to new.doctor@hospital.test" in response.content
    invited = User.objects.get(email="new.doctor@hospital.test")
    assert not invited.has_usable_password()
    assert list(invited.teams.all()) == [team]
    assert AuditEvent.objects.filter(action="user.invite", object_id=str(invited.pk)).exists()
    link = re.search(r"https?://\S+", mail.outbox[-1].body).group(0)
    # when the invitee follows it and chooses a password
    client.logout()
    form_page = client.get(link, follow=True)
    response = client.post(
        form_page.redirect_chain[-1][0] if form_page.redirect_chain else link,
        {"password1": "a long new passphrase 42", "password2": "a long new passphrase 42"},
        follow=True,
    )
    assert response.status_code == 200
    # then they land on the sign-in page, told what to do next (not a page with no way on)
    assert response.redirect_chain[-1][0] == reverse("account_login")
    assert b"Your password is set. Sign in with your email and new password." in response.content
    # and they can log in with it
    assert client.login(email="new.doctor@hospital.test", password="a long new passphrase 42")


def test_inviting_someone_who_has_not_accepted_yet_sends_a_new_link(
    client: Any, admin_user: Any, team: Any
) -> None:
    # given an invitation nobody has accepted yet
    client.force_login(admin_user)
    data = {"email": "late@hospital.test", "role": "clinician", "teams": [team.pk]}
    client.post(reverse("accounts:invite"), data)
    invited = User.objects.get(email="late@hospital.test")
    # when the admin invites the same address again
    response = client.post(reverse("accounts:invite"), data, follow=True)
    # then a new link is sent to the same account, and the page says so
    assert b"had not accepted yet: a new invitation link was sent" in response.content
    assert User.objects.filter(email="late@hospital.test").count() == 1
    assert len(mail.outbox) == 2
    assert mail.outbox[-1].to == ["late@hospital.test"]
    assert AuditEvent.objects.filter(action="user.reinvite", object_id=str(invited.pk)).exists()
    # but once they have set a password, the address is taken
    invited.set_password("a long new passphrase 42")
    invited.save()
    taken = client.post(reverse("accounts:invite"), data)
    assert b"already exists" in taken.content
    assert len(mail.outbox) == 2


def test_the_sign_in_page_offers_no_sign_up_while_sign_up_is_closed(client: Any) -> None:
    page = client.get(reverse("account_login")).content.decode()
    assert reverse("account_signup") not in page
    assert "sign up" not in page.lower()
    assert "Accounts are made by invitation" in page


def test_the_favicon_is_served_to_anyone(client: Any) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert response.content.startswith(b"<svg")


def test_invite_refuses_a_clinician_without_team_and_a_taken_email(
    client: Any, admin_user: Any, clinician: Any
) -> None:
    client.force_login(admin_user)
    no_team = client.post(reverse("accounts:invite"), {"email": "a@b.test", "role": "clinician"})
    assert b"at least one team" in no_team.content
    taken = client.post(
        reverse("accounts:invite"), {"email": clinician.email.upper(), "role": "rater"}
    )
    assert b"already exists" in taken.content
    assert len(mail.outbox) == 0


def test_password_reset_emails_a_link(client: Any, clinician: Any) -> None:
    response = client.post(reverse("account_reset_password"), {"email": clinician.email})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    assert "/accounts/password/reset/key/" in mail.outbox[0].body


def test_totp_two_factor_setup_is_available(client: Any, clinician: Any) -> None:
    # given a logged-in clinician
    client.force_login(clinician)
    # when they open the authenticator-app setup, they must confirm their password first
    first = client.get(reverse("mfa_activate_totp"))
    assert first.status_code == 302
    assert first["Location"].startswith(reverse("account_reauthenticate"))
    client.post(reverse("account_reauthenticate"), {"password": PASSWORD})
    response = client.get(reverse("mfa_activate_totp"))
    # then they are shown a secret to add to their app
    assert response.status_code == 200
    assert b"Authenticator" in response.content
    assert b"secret" in response.content.lower()
