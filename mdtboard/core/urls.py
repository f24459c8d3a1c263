from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import path
from django.views.generic.base import RedirectView

from mdtboard.core import views

app_name = "core"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on every page that does not name its icon (the admin's).
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
        name="favicon",
    ),
]
