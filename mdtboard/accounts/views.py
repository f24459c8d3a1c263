"""Account pages of our own (allauth serves login, logout, password and MFA pages)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from mdtboard.accounts.forms import InviteForm
from mdtboard.accounts.roles import Role, role_required
from mdtboard.accounts.services import AccountError, user_invite


@role_required(Role.ADMIN)
def invite(request: HttpRequest) -> HttpResponse:
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = user_invite(
                email=form.cleaned_data["email"],
                role=Role(form.cleaned_data["role"]),
                display_name=form.cleaned_data["display_name"],
                teams=form.cleaned_data["teams"],
                invited_by=request.user,
                base_url=request.build_absolute_uri("/"),
            )
        except AccountError as exc:
            form.add_error("email", str(exc))
        else:
            messages.success(request, f"Invitation sent to {user.email}.")
            return redirect("accounts:invite")
    return render(request, "accounts/invite.html", {"form": form})
