from __future__ import annotations

from django.urls import path

from mdtboard.accounts import views

app_name = "accounts"

urlpatterns = [
    path("invite/", views.invite, name="invite"),
    # Before allauth's own pattern for the same path (mdtboard/urls.py includes this first).
    path("email/", views.email, name="email"),
]
