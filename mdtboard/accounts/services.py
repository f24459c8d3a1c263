"""Writes for accounts: role groups, invitations, teams and the demo users."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allauth.account.forms import default_token_generator
from allauth.account.models import EmailAddress
from allauth.account.utils import user_pk_to_url_str
from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.text import slugify

from mdtboard.accounts.models import Team, User
from mdtboard.accounts.roles import ROLE_PERMISSIONS, Role, roles_of
from mdtboard.accounts.selectors import email_taken_by_another, invitation_pending
from mdtboard.audit.services import audit_record, audit_throttled_quota, client_address


class AccountError(Exception):
    pass


EMAIL_TAKEN = "A user with this email address already exists."


def roles_sync(*, using: str = "default") -> None:
    """Make sure a group exists per role and holds exactly its listed permissions."""
    for role, wanted in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.using(using).get_or_create(name=role.value)
        perms = []
        for dotted in wanted:
            app_label, codename = dotted.split(".", 1)
            perm = (
                Permission.objects.using(using)
                .filter(content_type__app_label=app_label, codename=codename)
                .first()
            )
            if perm is not None:
                perms.append(perm)
        group.permissions.set(perms)


@transaction.atomic
def team_get_or_create(*, name: str, actor: User | None = None) -> Team:
    team, created = Team.objects.get_or_create(slug=slugify(name), defaults={"name": name})
    if created:
        audit_record(action="team.create", actor=actor, obj=team, payload={"name": name})
    return team


@transaction.atomic
def user_create(
    *,
    email: str,
    role: Role,
    password: str | None = None,
    display_name: str = "",
    teams: Iterable[Team] = (),
    actor: User | None = None,
) -> User:
    email = email.strip().lower()
    if email_taken_by_another(email=email):
        raise AccountError(EMAIL_TAKEN)
    user = User.objects.create_user(
        email,
        password,  # None gives an unusable password: the invitee sets one by the emailed link.
        display_name=display_name,
        is_staff=role == Role.ADMIN,
        is_superuser=role == Role.ADMIN,
    )
    user.groups.add(Group.objects.get(name=role.value))
    team_list = list(teams)
    user.teams.set(team_list)
    audit_record(
        action="user.create",
        actor=actor,
        obj=user,
        payload={"role": role.value, "teams": sorted(t.pk for t in team_list)},
    )
    return user


def user_invite(
    *,
    email: str,
    role: Role,
    display_name: str = "",
    teams: Iterable[Team] = (),
    invited_by: Any,
    base_url: str,
) -> User:
    """Create the account without a password and email a one-time link to set one. An
    address invited before that has not accepted yet gets a fresh link (re-invite).

    Every unconfirmed claim other accounts hold on the address goes at once (issue 26): an
    administrator vouches for it by inviting it, and a claim left until the invitee sets a
    password would, meanwhile, get a password reset for the address mailed for the claimant's
    account too."""
    with transaction.atomic():
        pending = invitation_pending(email=email)
        if pending is not None:
            # Invited before and not accepted yet: a fresh link (the old one still works once
            # until a password is set), the account as it was invited.
            user: User = pending
            held = sorted(roles_of(user))
            role = held[0] if held else role
            audit_record(action="user.reinvite", actor=invited_by, obj=user, payload={"role": role})
        else:
            user = user_create(
                email=email, role=role, display_name=display_name, teams=teams, actor=invited_by
            )
            audit_record(action="user.invite", actor=invited_by, obj=user, payload={"role": role})
        email_unconfirmed_claims_release(email=user.email, owner=user)
    path = reverse(
        "account_reset_password_from_key",
        kwargs={
            "uidb36": user_pk_to_url_str(user),
            "key": default_token_generator.make_token(user),
        },
    )
    context = {
        "user": user,
        "role": role.label,
        "link": base_url.rstrip("/") + path,
        "invited_by": invited_by,
    }
    send_mail(
        subject="You are invited to mdtboard",
        message=render_to_string("accounts/email/invite.txt", context),
        from_email=None,
        recipient_list=[user.email],
    )
    return user


@transaction.atomic
def user_email_verify_by_link(*, user: User) -> None:
    """Mark the address the user signs in with as verified: they just set a password through a
    one-time link mailed to it (an invitation or a password reset), which proves they read it.
    Without this an invited user could not turn on two-factor ("verify your email first")."""
    address = EmailAddress.objects.filter(user=user, email__iexact=user.email).first()
    if address is not None and address.verified:
        return
    if address is None:
        address = EmailAddress.objects.create(
            user=user,
            email=user.email,
            verified=True,
            primary=not EmailAddress.objects.filter(user=user, primary=True).exists(),
        )
    else:
        address.verified = True
        address.save(update_fields=["verified"])
    audit_record(
        action="account.email.verify",
        actor=user,
        obj=user,
        payload={"email_address": address.pk, "by": "emailed link"},
    )
    email_unconfirmed_claims_release(email=user.email, owner=user)


@transaction.atomic
def email_unconfirmed_claims_release(*, email: str, owner: Any) -> int:
    """Remove ``email`` from every other account that added it without confirming it: its
    owner has just proved it is theirs (a confirmation or an invitation link). Audited on the
    account that loses it."""
    claims = EmailAddress.objects.filter(email__iexact=email, verified=False).exclude(
        user_id=owner.pk
    )
    released = 0
    for claim in claims.select_related("user"):
        audit_record(
            action="account.email.released",
            obj=claim.user,
            payload={"email_address": claim.pk, "to_user": owner.pk},
        )
        claim.delete()
        released += 1
    return released


def session_expired_record(*, user: Any, reason: str, request: Any = None) -> None:
    """A sign-in ended by the idle timeout or its absolute lifetime (the logout that follows
    is recorded on its own)."""
    audit_record(
        action="auth.session_expired",
        actor=user,
        obj=user,
        payload={"reason": reason, **client_address(request)},
    )


def audit_email_change(*, action: str, user: Any, address: Any, previous: Any = None) -> None:
    """An address added, removed, confirmed or made primary on the email page."""
    payload: dict[str, Any] = {"email_address": getattr(address, "pk", None)}
    if address is not None:
        payload["email"] = address.email
    if previous is not None:
        payload.update(previous_email_address=previous.pk, previous_email=previous.email)
    audit_record(action=f"account.email.{action}", actor=user, obj=user, payload=payload)


# --- demo data --------------------------------------------------------------------------------

DEMO_TEAMS = ("Hepatobiliary MDT", "Thoracic MDT", "Breast MDT", "Lymphoma MDT")


@dataclass(frozen=True)
class DemoLogin:
    role: str
    email: str
    password: str
    teams: tuple[str, ...]


_DEMO_USERS: tuple[tuple[Role, str, str, tuple[str, ...]], ...] = (
    (Role.CLINICIAN, "clinician@demo.mdtboard.test", "Dr Demo Clinician", DEMO_TEAMS),
    (Role.CLINICIAN, "clinician2@demo.mdtboard.test", "Dr Other Team", ("Breast MDT",)),
    (Role.RATER, "rater@demo.mdtboard.test", "Demo Rater", ()),
    # Inter-rater reliability (ICC) needs at least two raters scoring the same packets.
    (Role.RATER, "rater2@demo.mdtboard.test", "Demo Rater 2", ()),
    (Role.RATER, "rater3@demo.mdtboard.test", "Demo Rater 3", ()),
    (Role.CURATOR, "curator@demo.mdtboard.test", "Demo Curator", ()),
    (Role.ADMIN, "admin@demo.mdtboard.test", "Demo Admin", ()),
)


def demo_seed(*, credentials_file: Path) -> list[DemoLogin]:
    """Create the demo teams and one user per role, once. Passwords are random per machine and
    kept in ``credentials_file`` (mode 600) so that later runs can print them again."""
    saved: dict[str, str] = {}
    if credentials_file.exists():
        saved = json.loads(credentials_file.read_text())
    teams = {name: team_get_or_create(name=name) for name in DEMO_TEAMS}
    logins = []
    for role, email, name, team_names in _DEMO_USERS:
        password = saved.get(email) or secrets.token_urlsafe(12)
        if not User.objects.filter(email=email).exists():
            user_create(
                email=email,
                role=role,
                password=password,
                display_name=name,
                teams=[teams[t] for t in team_names],
            )
        saved[email] = password
        logins.append(DemoLogin(role.value, email, password, team_names))
    credentials_file.parent.mkdir(parents=True, exist_ok=True)
    credentials_file.write_text(json.dumps(saved, indent=2))
    os.chmod(credentials_file, 0o600)
    return logins


def demo_credentials_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-credentials.json"


# Two-factor events on the audit log (issue 26): allauth's MFA signals, one action each.
MFA_ACTIONS = {
    "added": "mfa.activated",
    "removed": "mfa.deactivated",
    "reset": "mfa.recovery_codes_regenerated",
    "used": "mfa.used",
    "failed": "mfa.code_failed",
}


def mfa_event_record(
    *, event: str, user: Any, authenticator: Any, request: Any = None, **details: bool
) -> None:
    """An authenticator turned on or off, recovery codes regenerated, a code accepted or
    refused. A recovery code used is its own action (someone may have the codes who should
    not). Failed codes are recorded at most a few times per account and window, the next one
    counting those left out: a guesser must not be able to grow the append-only log without
    bound (allauth's rate limit stops the guessing itself)."""
    kind = str(getattr(authenticator, "type", "") or "")
    action = MFA_ACTIONS[event]
    if event == "used" and kind == "recovery_codes":
        action = "mfa.recovery_code_used"
    payload: dict[str, Any] = {"type": kind, **client_address(request)}
    payload.update({key: True for key, value in details.items() if value})
    if event == "failed":
        left_out = audit_throttled_quota(key=f"mfa-failed:{getattr(user, 'pk', '')}")
        if left_out is None:
            return
        if left_out:
            payload["not_recorded_before"] = left_out
    audit_record(action=action, actor=user, obj=user, payload=payload)
