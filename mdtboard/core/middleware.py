"""Response headers the whole site shares."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

_HEADER = "Content-Security-Policy"


class ContentSecurityPolicyMiddleware:
    """Set ``settings.CONTENT_SECURITY_POLICY`` on every response that has none (django-csp is
    not a dependency; one fixed policy needs no more than this)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = getattr(settings, "CONTENT_SECURITY_POLICY", "")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and _HEADER not in response:
            response[_HEADER] = self.policy
        return response
