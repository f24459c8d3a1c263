"""Signal receivers of the accounts app: thin, they call services."""

from __future__ import annotations

from typing import Any

from mdtboard.accounts.services import (
    audit_email_change,
    email_unconfirmed_claims_release,
    mfa_event_record,
    roles_sync,
    user_email_verify_by_link,
)
from mdtboard.accounts.sessions import session_start


def sync_roles_after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    roles_sync(using=using)


def start_session_clock(sender: Any, request: Any = None, **kwargs: Any) -> None:
    if request is not None and hasattr(request, "session"):
        session_start(session=request.session)


def verify_email_after_password_reset(sender: Any, user: Any, **kwargs: Any) -> None:
    user_email_verify_by_link(user=user)


def record_email_added(sender: Any, user: Any, email_address: Any, **kwargs: Any) -> None:
    audit_email_change(action="add", user=user, address=email_address)


def record_email_removed(sender: Any, user: Any, email_address: Any, **kwargs: Any) -> None:
    audit_email_change(action="remove", user=user, address=email_address)


def record_email_confirmed(sender: Any, email_address: Any, **kwargs: Any) -> None:
    audit_email_change(action="confirm", user=email_address.user, address=email_address)
    email_unconfirmed_claims_release(email=email_address.email, owner=email_address.user)


def record_email_changed(
    sender: Any, user: Any, from_email_address: Any, to_email_address: Any, **kwargs: Any
) -> None:
    audit_email_change(
        action="primary", user=user, address=to_email_address, previous=from_email_address
    )


def record_mfa_added(
    sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any
) -> None:
    mfa_event_record(event="added", user=user, authenticator=authenticator, request=request)


def record_mfa_removed(
    sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any
) -> None:
    mfa_event_record(event="removed", user=user, authenticator=authenticator, request=request)


def record_mfa_reset(
    sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any
) -> None:
    mfa_event_record(event="reset", user=user, authenticator=authenticator, request=request)


def record_mfa_used(
    sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any
) -> None:
    mfa_event_record(
        event="used",
        user=user,
        authenticator=authenticator,
        request=request,
        reauthenticated=bool(kwargs.get("reauthenticated")),
    )


def record_mfa_failed(
    sender: Any, request: Any, user: Any, authenticator: Any, **kwargs: Any
) -> None:
    mfa_event_record(
        event="failed",
        user=user,
        authenticator=authenticator,
        request=request,
        reauthentication=bool(kwargs.get("reauthentication")),
    )
