"""Template context every page needs: version and the roles that drive the navigation."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

from mdtboard.accounts.roles import roles_of


def site(request: HttpRequest) -> dict[str, object]:
    user = getattr(request, "user", None)
    roles = roles_of(user) if user is not None and user.is_authenticated else frozenset()
    return {"mdtboard_version": settings.VERSION, "user_roles": roles}
