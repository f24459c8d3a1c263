from __future__ import annotations

from django.urls import path

from mdtboard.accounts import views

app_name = "accounts"

urlpatterns = [
    path("invite/", views.invite, name="invite"),
]
