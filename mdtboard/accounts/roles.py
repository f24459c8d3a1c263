"""The four roles, as Django groups, and how a view asks for one."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest, HttpResponse


class Role(models.TextChoices):
    CLINICIAN = "clinician", "Clinician"
    RATER = "rater", "Rater"
    CURATOR = "curator", "Curator"
    ADMIN = "admin", "Administrator"


# Permissions each role's group holds, as "app_label.codename". Later apps add theirs here;
# a codename whose model does not exist yet is skipped until its migration has run.
ROLE_PERMISSIONS: dict[Role, tuple[str, ...]] = {
    Role.CLINICIAN: (),
    Role.RATER: (),
    Role.CURATOR: (
        "knowledge.add_guidelinesource",
        "knowledge.change_guidelinesource",
        "knowledge.view_guidelinesource",
        "knowledge.add_knowledgeunit",
        "knowledge.view_knowledgeunit",
        "knowledge.add_unitversion",
        "knowledge.change_unitversion",
        "knowledge.view_unitversion",
    ),
    Role.ADMIN: (
        "accounts.add_user",
        "accounts.change_user",
        "accounts.view_user",
        "accounts.add_team",
        "accounts.change_team",
        "accounts.view_team",
        "audit.view_auditevent",
    ),
}


def roles_of(user: Any) -> frozenset[Role]:
    """The roles a user holds; a superuser is an administrator whatever their groups."""
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        return frozenset()
    if not user.is_active:
        return frozenset()
    cached: frozenset[Role] | None = getattr(user, "_mdtboard_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = frozenset(role for role in Role if role.value in names)
        if user.is_superuser:
            cached = cached | {Role.ADMIN}
        user._mdtboard_roles = cached
    return cached


def has_role(user: Any, *roles: Role) -> bool:
    return bool(roles_of(user) & set(roles))


def is_admin(user: Any) -> bool:
    """The one notion of administrator, for every permission decision: the user holds the
    admin role (the "admin" group; a Django superuser holds it whatever their groups). Never
    ask ``is_superuser`` or ``is_staff``: someone put in the admin group is neither, and must
    be able to do all that an administrator created as a superuser can."""
    return has_role(user, Role.ADMIN)


F = TypeVar("F", bound=Callable[..., HttpResponse])


def role_required(*roles: Role) -> Callable[[F], F]:
    """Refuse (403) a logged-in user who holds none of ``roles``."""

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not has_role(request.user, *roles):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
