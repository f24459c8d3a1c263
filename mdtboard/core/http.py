"""Request types for views: LoginRequiredMiddleware guarantees a real user on every view that
is not marked ``login_not_required``; HtmxMiddleware adds ``htmx``. And the one rule for when
a view answers htmx with a fragment."""

from __future__ import annotations

from django.http import HttpRequest
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from mdtboard.accounts.models import User


class AuthedRequest(HttpRequest):
    user: User
    htmx: HtmxDetails


def wants_fragment(request: HttpRequest) -> bool:
    """An htmx request that swaps part of the page. htmx 2 restores a page missing from its
    history cache (the Back button) with an htmx request too, marked as a history restore:
    that one replaces the whole page, so it must get the whole page, not the fragment. Read
    from the headers, so that middleware placed before HtmxMiddleware can ask too."""
    headers = request.headers
    return (
        headers.get("HX-Request") == "true" and headers.get("HX-History-Restore-Request") != "true"
    )


# A view that answers with a page or a fragment varies on both headers: a cache must not give
# a history restore the fragment it kept for an ordinary htmx request to the same URL.
vary_on_htmx = vary_on_headers("HX-Request", "HX-History-Restore-Request")
