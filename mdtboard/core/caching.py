"""``Cache-Control: no-store`` on every response of the views that show patient data.

Keyed on the URL namespace of the view that answered, not on decorators a new view could
forget: every route of these namespaces (patients, dossiers, consultations, plans, reviews,
reports, rating packets, the experience memory, the admin and its audit log) tells browsers
and proxies to keep no copy, so a shared workstation's back button or disk cache does not
show the last clinician's patient. Redirects and refusals of those routes carry it too.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers, patch_cache_control

PATIENT_DATA_NAMESPACES: frozenset[str] = frozenset(
    {"consult", "review", "rating", "memory", "admin"}
)


def shows_patient_data(request: HttpRequest) -> bool:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return False
    return any(namespace in PATIENT_DATA_NAMESPACES for namespace in match.namespaces)


class NoStoreMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if shows_patient_data(request):
            add_never_cache_headers(response)
            patch_cache_control(response, no_store=True, private=True)
        return response
