"""Issue 26, finding 5: sign-in throttling keyed on account and address together, so that
nobody can lock a named clinician out, or a whole hospital behind one address."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from mdtboard.audit.models import AuditEvent
from tests.fixtures.personas import PASSWORD
from tests.fixtures.waiting import wait_until

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.9"
HOSPITAL_NAT = "198.51.100.1"


@pytest.fixture(autouse=True)
def _fresh_limits(settings: Any) -> None:
    cache.clear()
    settings.ACCOUNT_RATE_LIMITS = {
        "login": "120/m/ip",
        "login_failed": "60/m/ip,3/m/key",
        "login_failed_account": "6/m/key",
    }


def _sign_in(user: Any, password: str, address: str) -> bool:
    client = Client(REMOTE_ADDR=address)
    client.post(reverse("account_login"), {"login": user.email, "password": password})
    return client.session.get("_auth_user_id") == str(user.pk)


def test_guessing_from_one_address_does_not_lock_the_clinician_out_elsewhere(
    clinician: Any, colleague: Any
) -> None:
    # given an attacker who exhausts the failures allowed for the clinician from their address
    for _ in range(5):
        assert not _sign_in(clinician, "wrong password 1", ATTACKER)
    # then even the right password is refused from that address
    assert not _sign_in(clinician, PASSWORD, ATTACKER)
    assert AuditEvent.objects.filter(action="auth.login_throttled").exists()
    # but the clinician signs in from their hospital, and a colleague from the attacker's
    # address (another account, the same address) too
    assert _sign_in(clinician, PASSWORD, HOSPITAL_NAT)
    assert _sign_in(colleague, PASSWORD, ATTACKER)


def test_one_persons_typos_do_not_lock_everyone_behind_the_hospital_address(
    clinician: Any, colleague: Any, admin_user: Any
) -> None:
    # given a colleague who mistypes their password many times behind the hospital's NAT
    for _ in range(12):
        _sign_in(colleague, "not my password", HOSPITAL_NAT)
    # then the others behind that same address still sign in
    assert _sign_in(clinician, PASSWORD, HOSPITAL_NAT)


def test_guessing_spread_over_many_addresses_is_capped_but_not_at_a_known_address(
    clinician: Any,
) -> None:
    # given a clinician who signed in from the hospital before
    assert _sign_in(clinician, PASSWORD, HOSPITAL_NAT)
    # when guesses come from many addresses, a few from each
    for i in range(8):
        _sign_in(clinician, "guess", f"192.0.2.{i}")
    # then a further new address is refused even with the right password
    assert not _sign_in(clinician, PASSWORD, "192.0.2.200")
    # but the clinician still signs in from the address they used before
    assert _sign_in(clinician, PASSWORD, HOSPITAL_NAT)


def test_the_back_off_ends_with_its_window(settings: Any, clinician: Any) -> None:
    # given a pair locked by failures, with a two-second window
    settings.ACCOUNT_RATE_LIMITS = {
        "login": "120/m/ip",
        "login_failed": "60/m/ip,2/2s/key",
        "login_failed_account": "50/m/key",
    }
    for _ in range(3):
        _sign_in(clinician, "wrong", ATTACKER)
    assert not _sign_in(clinician, PASSWORD, ATTACKER)
    # then once the window has passed, the right password works again from there
    wait_until(lambda: _sign_in(clinician, PASSWORD, ATTACKER), timeout=10)
