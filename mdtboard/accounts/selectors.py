"""Reads for accounts."""

from __future__ import annotations

from typing import Any

from allauth.account.models import EmailAddress

from mdtboard.accounts.models import User


def email_taken_by_another(*, email: str, user: Any = None) -> bool:
    """Whether an account other than ``user`` signs in with ``email`` (as its own address or
    one it added), case-insensitively."""
    others = User.objects.filter(email__iexact=email)
    addresses = EmailAddress.objects.filter(email__iexact=email)
    if user is not None:
        others = others.exclude(pk=user.pk)
        addresses = addresses.exclude(user_id=user.pk)
    return others.exists() or addresses.exists()
