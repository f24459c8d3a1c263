"""Reads for accounts."""

from __future__ import annotations

from typing import Any

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from mdtboard.accounts.models import User
from mdtboard.accounts.roles import Role, roles_of


def email_taken_by_another(*, email: str, user: Any = None) -> bool:
    """Whether an account other than ``user`` signs in with ``email`` (as its own address or
    one it added and confirmed), case-insensitively. An added address nobody has confirmed is
    no one's yet: it cannot keep the address from its owner."""
    others = User.objects.filter(email__iexact=email)
    addresses = EmailAddress.objects.filter(email__iexact=email, verified=True)
    if user is not None:
        others = others.exclude(pk=user.pk)
        addresses = addresses.exclude(user_id=user.pk)
    return others.exists() or addresses.exists()


def mfa_required_roles() -> frozenset[Role]:
    """The roles of ``settings.MFA_REQUIRED_ROLES``; a name that is no role is a setup error."""
    names = [name.strip() for name in settings.MFA_REQUIRED_ROLES if name.strip()]
    try:
        return frozenset(Role(name) for name in names)
    except ValueError as exc:
        raise ImproperlyConfigured(
            f"MFA_REQUIRED_ROLES: {exc}; the roles are {', '.join(Role.values)}"
        ) from exc


def user_must_set_up_mfa(*, user: Any) -> bool:
    """Whether ``user`` holds a role that requires two-factor and has no authenticator app
    (TOTP) yet. Asked on every request of such a role: deactivating the app counts at once."""
    if not roles_of(user) & mfa_required_roles():
        return False
    return not is_mfa_enabled(user, [Authenticator.Type.TOTP])


def invitation_pending(*, email: str) -> User | None:
    """The account invited with ``email`` that has not accepted yet (no password set, never
    signed in), or None: inviting it again sends a fresh link instead of refusing."""
    user = User.objects.filter(email__iexact=email.strip(), is_active=True).first()
    if user is None or user.has_usable_password() or user.last_login is not None:
        return None
    return user
