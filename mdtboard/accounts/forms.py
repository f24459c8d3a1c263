from __future__ import annotations

from django import forms

from mdtboard.accounts.models import Team
from mdtboard.accounts.roles import Role


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
