"""Site-wide account rules: sessions end when idle or too old; roles that need two-factor
cannot use the app before they have set it up."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, resolve_url
from django.urls import Resolver404, resolve
from django_htmx.http import HttpResponseClientRedirect

from mdtboard.accounts.selectors import mfa_required_roles, user_must_set_up_mfa
from mdtboard.accounts.services import session_expired_record
from mdtboard.accounts.sessions import Expiry, session_expiry
from mdtboard.core.http import wants_fragment

MFA_REQUIRED_MESSAGE = (
    "Your role requires two-factor authentication. Set up an authenticator app to continue."
)
EXPIRED_MESSAGES = {
    Expiry.IDLE: "You were signed out after {minutes} minutes without activity. "
    "Please sign in again.",
    Expiry.ABSOLUTE: "Your session reached its limit of {hours:g} hours. Please sign in again.",
}

# Views a user who still has to set up two-factor may open: the two-factor pages themselves
# (mfa_*), confirming their password on the way there, their addresses (allauth refuses
# two-factor while one is unverified), signing out, and the health check.
_MFA_SETUP_VIEWS = frozenset(
    {
        "account_logout",
        "account_reauthenticate",
        "account_email",
        "accounts:email",
        "account_confirm_email",
        "account_email_verification_sent",
        "core:healthz",
    }
)


def _wants_fragment_or_json(request: HttpRequest) -> bool:
    return (
        wants_fragment(request)
        or "application/json" in request.headers.get("Accept", "")
        or request.content_type == "application/json"
    )


class SessionExpiryMiddleware:
    """Sign out a session idle for ``SESSION_IDLE_TIMEOUT`` seconds or older than
    ``SESSION_COOKIE_AGE`` seconds, record why in the audit log, and send the person to the
    login page with a message."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.idle_timeout = int(settings.SESSION_IDLE_TIMEOUT)
        self.max_age = int(settings.SESSION_COOKIE_AGE)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return self.get_response(request)
        reason = session_expiry(
            session=request.session, idle_timeout=self.idle_timeout, max_age=self.max_age
        )
        if reason is None:
            return self.get_response(request)
        session_expired_record(user=user, reason=reason, request=request)
        logout(request)
        messages.info(
            request,
            EXPIRED_MESSAGES[reason].format(
                minutes=self.idle_timeout // 60, hours=self.max_age / 3600
            ),
        )
        if wants_fragment(request):
            # A fragment request would swap the login page into the page: load it whole. (A
            # history restore takes the redirect below: htmx ignores HX-Redirect there.)
            return HttpResponseClientRedirect(resolve_url(settings.LOGIN_URL))
        if request.method == "GET":
            return redirect_to_login(request.get_full_path())
        return redirect(settings.LOGIN_URL)


class MFARequiredMiddleware:
    """Send a user whose role is in ``MFA_REQUIRED_ROLES`` and who has no authenticator app
    (TOTP) to its setup page; fragment and JSON requests get a 403 saying why."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        mfa_required_roles()  # a misspelt role fails at start, not at the first request

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self._must_set_up(request):
            if _wants_fragment_or_json(request):
                if wants_fragment(request):
                    return HttpResponse(
                        MFA_REQUIRED_MESSAGE, status=403, content_type="text/plain; charset=utf-8"
                    )
                return JsonResponse({"error": MFA_REQUIRED_MESSAGE}, status=403)
            messages.warning(request, MFA_REQUIRED_MESSAGE)
            return redirect("mfa_activate_totp")
        return self.get_response(request)

    def _must_set_up(self, request: HttpRequest) -> bool:
        if request.path_info.startswith(settings.STATIC_URL):
            return False
        if not user_must_set_up_mfa(user=getattr(request, "user", None)):
            return False
        try:
            view_name = resolve(request.path_info).view_name
        except Resolver404:
            return False  # the 404 page shows nothing
        return not (view_name.startswith("mfa_") or view_name in _MFA_SETUP_VIEWS)
