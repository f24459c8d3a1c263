"""Issue 26, finding 5: two-factor events reach the audit log, through the real pages."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import SECRET_SESSION_KEY
from django.core.cache import cache
from django.urls import reverse

from mdtboard.audit.models import AuditEvent
from tests.fixtures.personas import PASSWORD, make_user, totp_code

pytestmark = pytest.mark.django_db


def _actions(user: Any) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_id=str(user.pk), action__startswith="mfa.")
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_mfa_activation_use_failure_and_deactivation_are_audited(
    client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    cache.clear()
    # given a clinician who turns on an authenticator app through the real pages
    user = make_user("clinician", "totp-user@hospital.test", [], two_factor=False)
    client.post(reverse("account_login"), {"login": user.email, "password": PASSWORD})
    client.post(reverse("account_reauthenticate"), {"password": PASSWORD})
    client.get(reverse("mfa_activate_totp"))
    secret = client.session[SECRET_SESSION_KEY]
    # (allauth sends its signals once the change is committed)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("mfa_activate_totp"), {"code": totp_code(secret)})
    # then the activation is on the log
    assert "mfa.activated" in _actions(user)
    # when they sign in again, mistype the code, then use a recovery code
    client.logout()
    client.post(reverse("account_login"), {"login": user.email, "password": PASSWORD})
    client.post(reverse("mfa_authenticate"), {"code": "000000"})
    codes = Authenticator.objects.get(user=user, type="recovery_codes").wrap()
    client.post(reverse("mfa_authenticate"), {"code": codes.get_unused_codes()[0]})
    assert client.session.get("_auth_user_id") == str(user.pk)
    # then the failed code and the recovery code used are both on the log
    actions = _actions(user)
    assert "mfa.code_failed" in actions
    assert "mfa.recovery_code_used" in actions
    failed = AuditEvent.objects.get(action="mfa.code_failed", object_id=str(user.pk))
    assert failed.payload["type"] == "totp"
    assert "000000" not in str(failed.payload)
    # when they turn the authenticator app off (confirming their password first)
    client.post(reverse("account_reauthenticate"), {"password": PASSWORD})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("mfa_deactivate_totp"))
    # then that is on the log too
    assert not Authenticator.objects.filter(user=user, type="totp").exists()
    assert "mfa.deactivated" in _actions(user)


def test_mfa_failed_codes_are_recorded_a_bounded_number_of_times(client: Any) -> None:
    cache.clear()
    # given a signed-in-with-password user whose second factor is being guessed
    user = make_user("clinician", "guessed@hospital.test", [], two_factor=True)
    client.post(reverse("account_login"), {"login": user.email, "password": PASSWORD})
    # when twenty wrong codes are tried (allauth's rate limit may stop some first)
    for guess in range(20):
        client.post(reverse("mfa_authenticate"), {"code": f"{guess:06d}"})
    # then at most five rows are written in the window
    assert 1 <= _actions(user).count("mfa.code_failed") <= 5
