"""Forms of the review pages: they parse and check shapes; the services decide."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms

from clinical.vocab import Modality
from consult.review.models import Decision, PaperSize
from consult.review.services import Attendee, ComponentEdit

MODALITY_CHOICES = [(m.value, m.label) for m in Modality]
ROLE_CHOICES = [
    ("primary", "Recommended pathway"),
    ("alternative", "Alternative"),
    ("rejected", "Ruled out"),
]


class SubmissionForm(forms.Form):
    """Every review form carries a key made when the page was drawn (a second press of the
    button sends the same key) and the plan version it was filled in against."""

    key = forms.UUIDField(widget=forms.HiddenInput)
    base = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def __init__(self, *args: Any, base: int | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).update({"key": uuid.uuid4(), "base": base})
        super().__init__(*args, **kwargs)


class DecisionForm(SubmissionForm):
    decision = forms.ChoiceField(
        choices=[(Decision.ACCEPT, "Accept"), (Decision.REJECT, "Reject")],
        widget=forms.RadioSelect,
    )
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Reason",
        help_text="Required to reject; optional to accept.",
    )


class ComponentForm(forms.Form):
    source = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=0)
    role = forms.ChoiceField(choices=ROLE_CHOICES, label="Place in the plan")
    position = forms.IntegerField(required=False, min_value=1, max_value=99, label="Order")
    modality = forms.ChoiceField(choices=[("", "—"), *MODALITY_CHOICES], required=False)
    description = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    agents = forms.CharField(required=False, max_length=500, label="Drugs (comma-separated)")
    dose_adjustments = forms.CharField(
        required=False,
        max_length=2000,
        label="Dose adjustments (one per line)",
        widget=forms.Textarea(attrs={"rows": 1}),
    )
    when = forms.CharField(required=False, max_length=2000, label="When (for an alternative)")

    def edit(self) -> ComponentEdit | None:
        data = self.cleaned_data
        if not data or (data.get("source") is None and not (data.get("description") or "").strip()):
            return None  # an empty extra row
        return ComponentEdit(
            source=data.get("source"),
            role=data["role"],
            position=data.get("position"),
            modality=data.get("modality") or "",
            description=data.get("description") or "",
            agents=[a.strip() for a in (data.get("agents") or "").split(",") if a.strip()],
            dose_adjustments=[
                d.strip() for d in (data.get("dose_adjustments") or "").splitlines() if d.strip()
            ],
            when=data.get("when") or "",
        )


ComponentFormSet = forms.formset_factory(ComponentForm, extra=1, max_num=30, absolute_max=30)


def component_initial(components: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for index, c in enumerate(components):
        role = c.get("role") or "primary"
        rows.append(
            {
                "source": index,
                "role": role,
                "position": c.get("order") if role == "primary" else c.get("rank"),
                "modality": c.get("modality") or "",
                "description": c.get("description") or "",
                "agents": ", ".join(c.get("agents") or []),
                "dose_adjustments": "\n".join(c.get("dose_adjustments") or []),
                "when": c.get("when") or "",
            }
        )
    return rows


class AmendForm(SubmissionForm):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Reason for the amendment",
        required=False,
    )


class AttendeeForm(forms.Form):
    name = forms.CharField(required=False, max_length=150)
    specialty = forms.CharField(required=False, max_length=150)

    def attendee(self) -> Attendee:
        data = self.cleaned_data or {}
        return Attendee(name=data.get("name") or "", specialty=data.get("specialty") or "")


AttendeeFormSet = forms.formset_factory(AttendeeForm, extra=3, max_num=40, absolute_max=40)


class MeetingForm(forms.Form):
    held_on = forms.DateField(label="Meeting date", widget=forms.DateInput(attrs={"type": "date"}))
    final_decision = forms.CharField(
        max_length=2000, widget=forms.Textarea(attrs={"rows": 3}), label="Final decision"
    )
    dissent = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Dissent (who disagreed, and why)",
    )
    responsible = forms.TypedChoiceField(coerce=int, label="Responsible clinician")

    def __init__(self, *args: Any, clinicians: Any = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["responsible"].choices = [(u.pk, str(u)) for u in clinicians]  # type: ignore[attr-defined]


class ReportForm(forms.Form):
    paper = forms.ChoiceField(choices=PaperSize.choices, initial=PaperSize.A4, label="Paper")
