"""Record refused requests in the audit log: 403 and 404 from a view that was reached (an
object or page the user may not see), and every 429 (rate limits)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from mdtboard.audit.services import audit_denial

_DENIED = frozenset({403, 404})
_THROTTLED = 429
# URL values longer than an id are not ids: they are cut, never logged whole.
_MAX_ID_LENGTH = 64


class AuditDenialsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        status = response.status_code
        user = getattr(request, "user", None)
        authenticated = user is not None and user.is_authenticated
        match = request.resolver_match
        # A 404 for a URL that matched no view is a typo or a scanner, not a denial; anonymous
        # 403s are the login redirect's business. Throttling is recorded for anyone.
        if (status in _DENIED and authenticated and match is not None) or status == _THROTTLED:
            audit_denial(
                actor=user if authenticated else None,
                status=status,
                view=match.view_name if match is not None else "",
                method=request.method or "",
                ids={
                    k: str(v)[:_MAX_ID_LENGTH] for k, v in (match.kwargs if match else {}).items()
                },
                request=request,
            )
        return response
