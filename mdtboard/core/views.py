"""Home page by role, and the health endpoint for load balancers and operators."""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from mdtboard.core.health import health_checks


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "core/home.html")


FAVICON = settings.BASE_DIR / "static" / "favicon.svg"


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """The icon browsers ask for at /favicon.ico on pages that do not name one (the admin's):
    served here, before any sign-in, so no page logs a 404 for it."""
    response = HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = health_checks()
    healthy = all(check.ok for check in checks)
    body = {
        "status": "ok" if healthy else "down",
        "version": settings.VERSION,
        "checks": {
            check.name: {k: v for k, v in asdict(check).items() if k != "name"} for check in checks
        },
    }
    return JsonResponse(body, status=200 if healthy else 503)
