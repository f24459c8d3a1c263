"""Sign-in by email address: the account's own address, or one it added and confirmed."""

from __future__ import annotations

from typing import Any

from allauth.account.auth_backends import AuthenticationBackend
from allauth.account.models import EmailAddress


class ConfirmedEmailAuthenticationBackend(AuthenticationBackend):  # type: ignore[misc]
    """allauth's backend, except that an address someone added and has not confirmed signs
    nobody in: anyone can type any address into the email page, and it proves nothing until
    its owner follows the link mailed to it."""

    def _authenticate_by_email(self, email: str, password: str) -> Any:
        if not email:
            return None
        user = super()._authenticate_by_email(email, password)
        if user is None:
            return None
        if str(user.email).lower() == email.strip().lower():
            return user
        confirmed = EmailAddress.objects.filter(user=user, email__iexact=email.strip())
        return user if confirmed.filter(verified=True).exists() else None
