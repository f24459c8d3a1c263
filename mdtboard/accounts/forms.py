from __future__ import annotations

from allauth.account.forms import AddEmailForm
from django import forms

from mdtboard.accounts.models import Team
from mdtboard.accounts.roles import Role
from mdtboard.accounts.selectors import email_taken_by_another
from mdtboard.accounts.services import EMAIL_TAKEN


class InviteForm(forms.Form):
    email = forms.EmailField(label="Email address")
    display_name = forms.CharField(label="Name shown to colleagues", max_length=150, required=False)
    role = forms.ChoiceField(choices=Role.choices)
    teams = forms.ModelMultipleChoiceField(
        queryset=Team.objects.all(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Clinicians see the patients of their teams only.",
    )

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if data.get("role") == Role.CLINICIAN and not data.get("teams"):
            self.add_error("teams", "A clinician must belong to at least one team.")
        return data


class UniqueAddEmailForm(AddEmailForm):  # type: ignore[misc]  # allauth is untyped
    """allauth's add-address form, refusing an address another account already has.

    allauth lets it through when enumeration prevention is on (ours is), and with email
    verification off the borrowed address then signed in to the wrong account. Colleagues
    already know each other's addresses: saying "taken" reveals nothing worth hiding.
    """

    def clean_email(self) -> str:
        value = str(self.cleaned_data["email"]).strip().lower()
        if email_taken_by_another(email=value, user=self.user):
            raise forms.ValidationError(EMAIL_TAKEN)
        return str(super().clean_email())
