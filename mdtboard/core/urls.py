from __future__ import annotations

from django.urls import path

from mdtboard.core import views

app_name = "core"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on every page that does not name its icon (the admin's).
    path("favicon.ico", views.favicon, name="favicon"),
]
