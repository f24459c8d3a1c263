"""allauth adapter: registration is closed; administrators invite users. Throttled sign-in
attempts are audited like failed ones (allauth refuses them before Django's failure signal).

Sign-in throttling (issue 26), with allauth's own rate limiter (settings.ACCOUNT_RATE_LIMITS):

* ``login_failed`` counts failures per *account and address together* (5 in 5 minutes), and
  per address over all accounts with a high ceiling (60 a minute): a guesser locks only
  their own address out of that account, never a colleague behind the same hospital NAT,
  and never the clinician at their own workstation.
* ``login_failed_account`` counts failures per account from addresses that account has not
  signed in from (20 in 15 minutes): guessing spread over many addresses is slowed, and an
  attacker who exhausts it keeps the clinician out only at a new address, for at most the
  window. Addresses an account signed in from are remembered for KNOWN_ADDRESS_DAYS.
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.internal import ratelimit
from django.contrib.sites.shortcuts import get_current_site
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from mdtboard.audit.services import audit_login_throttled

ACCOUNT_WIDE_ACTION = "login_failed_account"
KNOWN_ADDRESS_DAYS = 30
_KNOWN = "mdtboard:login-known:{login}:{ip}"


def _login(credentials: dict[str, Any]) -> str:
    return str(credentials.get("email", credentials.get("username", "")) or "").lower()


class InviteOnlyAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        # The account *and* the address: failures from one address lock out only that pair.
        site = get_current_site(request)
        return f"{site.domain}:{_login(credentials)}:{self.get_client_ip(request)}"

    def _known_address(self, request: HttpRequest, credentials: dict[str, Any]) -> bool:
        key = _KNOWN.format(login=_login(credentials), ip=self.get_client_ip(request))
        try:
            return bool(cache.get(key))
        except Exception:  # noqa: BLE001 - a cache outage must not lock anyone out
            return True

    def pre_authenticate(self, request: HttpRequest, **credentials: Any) -> None:
        try:
            super().pre_authenticate(request, **credentials)
            self._account_wide_usage = None
            if not self._known_address(request, credentials):
                site = get_current_site(request)
                self._account_wide_usage = ratelimit.consume(
                    request,
                    app="allauth.account",
                    action=ACCOUNT_WIDE_ACTION,
                    key=f"{site.domain}:{_login(credentials)}",
                )
                if self._account_wide_usage is None:
                    self._rollback_login_failed_rl_usage()
                    raise self.validation_error("too_many_login_attempts")
        except ValidationError:
            audit_login_throttled(request=request, credentials=credentials)
            raise

    def _rollback_login_failed_rl_usage(self) -> None:
        # A sign-in that succeeds gives back what it consumed, of both limits.
        super()._rollback_login_failed_rl_usage()
        usage = getattr(self, "_account_wide_usage", None)
        if usage:
            usage.rollback()
            self._account_wide_usage = None

    def login(self, request: HttpRequest, user: Any) -> None:
        super().login(request, user)
        try:
            ip = self.get_client_ip(request)
            cache.set(_KNOWN.format(login=user.email.lower(), ip=ip), 1, KNOWN_ADDRESS_DAYS * 86400)
        except Exception:  # noqa: BLE001, S110 - remembering the address is a convenience only
            pass
