from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from mdtboard.accounts.models import Team, User
from mdtboard.accounts.roles import is_admin


def admin_site_has_permission(request: HttpRequest) -> bool:
    """Who may open the admin site: administrators (the role), not whoever has Django's
    ``is_staff`` flag; inside it, each page still needs its model permission (the admin
    group holds those of users, teams and the audit log)."""
    return is_admin(request.user)


def admin_site_login(login: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The admin site's login page: everyone signs in through allauth (one login page, with its
    rate limits and two-factor); a signed-in administrator goes on to the admin index and
    anyone else signed in is refused. allauth's own guard asks ``is_staff``, which someone put
    in the admin group does not have."""
    secured = secure_admin_login(login)

    @wraps(login)
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return secured(request, *args, **kwargs)  # type: ignore[no-any-return]  # allauth is untyped
        if not is_admin(request.user):
            raise PermissionDenied
        return redirect("admin:index")

    return view


@admin.register(User)
class UserAdmin(DjangoUserAdmin[User]):
    ordering = ("email",)
    list_display = ("email", "display_name", "is_active", "is_staff")
    search_fields = ("email", "display_name")
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("display_name", "teams")}),
        ("Roles", {"fields": ("is_active", "is_staff", "is_superuser", "groups")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)
    filter_horizontal = ("groups", "teams")

    def get_readonly_fields(self, request: HttpRequest, obj: User | None = None) -> Any:
        # An administrator by role assigns roles (groups) and teams; only a superuser may make
        # someone a superuser or staff, so the admin group is no step to Django's own tables.
        readonly = tuple(super().get_readonly_fields(request, obj))
        if request.user.is_superuser:
            return readonly
        return (*readonly, "is_staff", "is_superuser")


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin[Team]):
    list_display = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
