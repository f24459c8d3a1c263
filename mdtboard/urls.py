"""Root URL configuration."""

from __future__ import annotations

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path

# The admin signs in through allauth too: one login page, with its rate limits and two-factor.
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", include("mdtboard.core.urls")),
    path("", include("consult.urls")),
    path("kb/", include("knowledge.urls")),
    path("accounts/", include("mdtboard.accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
