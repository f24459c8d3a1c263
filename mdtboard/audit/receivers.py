"""Authentication signals into the audit log (the receivers only call the service)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from mdtboard.audit.services import audit_record, client_address, login_identity


def _client(request: HttpRequest | None) -> dict[str, str]:
    return client_address(request)


@receiver(user_logged_in, dispatch_uid="audit-login")
def record_login(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    audit_record(action="auth.login", actor=user, obj=user, payload=_client(request))


@receiver(user_logged_out, dispatch_uid="audit-logout")
def record_logout(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    if user is not None:
        audit_record(action="auth.logout", actor=user, obj=user, payload=_client(request))


@receiver(user_login_failed, dispatch_uid="audit-login-failed")
def record_login_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    audit_record(
        action="auth.login_failed", payload={**login_identity(credentials), **_client(request)}
    )
