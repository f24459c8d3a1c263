from __future__ import annotations

from django.urls import path

from mdtboard.accounts import views

app_name = "accounts"

urlpatterns = [
    path("invite/", views.invite, name="invite"),
    # Before allauth's own pattern for the same path (mdtboard/urls.py includes this first).
    path("email/", views.email, name="email"),
    # allauth's "password changed" page after an emailed link has no way on: sign in instead.
    path("password/reset/key/done/", views.password_set_done, name="password-set-done"),
]
