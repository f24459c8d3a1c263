"""allauth adapter: registration is closed; administrators invite users."""

from __future__ import annotations

from django.http import HttpRequest

from allauth.account.adapter import DefaultAccountAdapter


class InviteOnlyAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False
