"""Account pages of our own (allauth serves login, logout, password and MFA pages)."""

from __future__ import annotations

from typing import Any

from allauth.account.views import EmailView as AllauthEmailView
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from mdtboard.accounts.forms import InviteForm
from mdtboard.accounts.roles import Role, role_required
from mdtboard.accounts.selectors import invitation_pending
from mdtboard.accounts.services import EMAIL_TAKEN, AccountError, user_invite


@role_required(Role.ADMIN)
def invite(request: HttpRequest) -> HttpResponse:
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        again = invitation_pending(email=form.cleaned_data["email"]) is not None
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
            if again:
                messages.success(
                    request,
                    f"{user.email} had not accepted yet: a new invitation link was sent.",
                )
            else:
                messages.success(request, f"Invitation sent to {user.email}.")
            return redirect("accounts:invite")
    return render(request, "accounts/invite.html", {"form": form})


class EmailView(AllauthEmailView):  # type: ignore[misc]  # allauth is untyped
    """allauth's email page, served at its URL. Making primary an address another account
    signs in with (added before addresses had to be unique) broke the unique email column
    with a 500; it is now refused with a message and nothing changes."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            with transaction.atomic():
                return super().post(request, *args, **kwargs)  # type: ignore[no-any-return]
        except IntegrityError:
            messages.error(request, EMAIL_TAKEN)
            return redirect("account_email")


email = EmailView.as_view()


@login_not_required
@require_GET
def password_set_done(request: HttpRequest) -> HttpResponse:
    """Where setting a password by an emailed link ends (an invitation or a reset): the
    sign-in page, saying what to do next, rather than a page with no way on."""
    if request.user.is_authenticated:
        messages.success(request, "Your password is set.")
        return redirect("core:home")
    messages.success(request, "Your password is set. Sign in with your email and new password.")
    return redirect("account_login")
