"""allauth adapter: registration is closed; administrators invite users. Throttled sign-in
attempts are audited like failed ones (allauth refuses them before Django's failure signal)."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from mdtboard.audit.services import audit_login_throttled


class InviteOnlyAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False

    def pre_authenticate(self, request: HttpRequest, **credentials: Any) -> None:
        try:
            super().pre_authenticate(request, **credentials)
        except ValidationError:
            audit_login_throttled(request=request, credentials=credentials)
            raise
