"""Request types for views: LoginRequiredMiddleware guarantees a real user on every view that
is not marked ``login_not_required``; HtmxMiddleware adds ``htmx``."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from mdtboard.accounts.models import User


class AuthedRequest(HttpRequest):
    user: User
    htmx: HtmxDetails
