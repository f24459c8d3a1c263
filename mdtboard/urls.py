"""Root URL configuration."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from mdtboard.accounts.admin import admin_site_has_permission, admin_site_login

# The admin site is for the admin role, and its users sign in through allauth too.
admin.site.has_permission = admin_site_has_permission  # type: ignore[method-assign]
admin.site.login = admin_site_login(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", include("mdtboard.core.urls")),
    path("", include("consult.urls")),
    path("", include("consult.review.urls")),
    path("kb/", include("knowledge.urls")),
    path("memory/", include("knowledge.memory.urls")),
    path("rating/", include("consult.rating.urls")),
    path("accounts/", include("mdtboard.accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
