"""Site-wide account rules: sessions end when idle or too old."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, resolve_url
from django_htmx.http import HttpResponseClientRedirect

from mdtboard.accounts.services import session_expired_record
from mdtboard.accounts.sessions import Expiry, session_expiry

EXPIRED_MESSAGES = {
    Expiry.IDLE: "You were signed out after {minutes} minutes without activity. "
    "Please sign in again.",
    Expiry.ABSOLUTE: "Your session reached its limit of {hours:g} hours. Please sign in again.",
}


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
        if request.headers.get("HX-Request") == "true":
            # A fragment request would swap the login page into the page: load it whole.
            return HttpResponseClientRedirect(resolve_url(settings.LOGIN_URL))
        if request.method == "GET":
            return redirect_to_login(request.get_full_path())
        return redirect(settings.LOGIN_URL)
