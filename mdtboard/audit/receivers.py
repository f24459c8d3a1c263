"""Authentication signals into the audit log (the receivers only call the service)."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from mdtboard.audit.services import audit_record


def _client(request: HttpRequest | None) -> dict[str, str]:
    if request is None:
        return {}
    return {"ip": request.META.get("REMOTE_ADDR", "")}


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
    # Django masks the password in ``credentials``. The identifier is kept as typed only when
    # it names an account: people type passwords into the email field, and the log is
    # append-only. Anything else is kept as a keyed digest, enough to see repeated attempts.
    tried = str(credentials.get("email") or credentials.get("username") or "")[:254]
    if get_user_model().objects.filter(email__iexact=tried).exists():
        identity = {"identifier": tried}
    else:
        digest = hmac.new(settings.SECRET_KEY.encode(), tried.encode(), hashlib.sha256)
        identity = {"unknown_identifier_digest": digest.hexdigest()[:16]}
    audit_record(action="auth.login_failed", payload={**identity, **_client(request)})
