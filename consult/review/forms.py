"""Forms of the review pages: they parse and check shapes; the services decide."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django import forms

from clinical.vocab import (
    COMPONENT_ROLE_LABELS,
    INTENT_LABELS,
    PHASE_LABELS,
    RULED_OUT,
    RULED_OUT_LABEL,
    Modality,
)
from consult.review.models import Decision, PaperSize, ReasonKind, ReportAppendix
from consult.review.services import (
    ANCHORS,
    INTENTS,
    Attendee,
    ComponentEdit,
    MonitoringEdit,
)
from mdtboard.accounts.models import User

MODALITY_CHOICES = [(m.value, m.label) for m in Modality]
ROLE_CHOICES = [*COMPONENT_ROLE_LABELS.items(), (RULED_OUT, RULED_OUT_LABEL)]
INTENT_CHOICES = [(i, INTENT_LABELS[i]) for i in INTENTS]
PHASE_CHOICES = [(str(k), v) for k, v in PHASE_LABELS.items()]
ANCHOR_CHOICES = [("", "—"), *((a, a) for a in ANCHORS if a != "other")]


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


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
    reason_kind = forms.ChoiceField(
        choices=ReasonKind.choices,
        required=False,
        widget=forms.RadioSelect,
        label="Kind of reason (to reject)",
        help_text="Only a clinical reason teaches the board.",
    )


class ReopenForm(SubmissionForm):
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Reason for reopening",
        required=False,
    )


class SignOffForm(forms.Form):
    """The sign-off names the version it signs: a plan amended meanwhile is not signed."""

    version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)
    confirm = forms.BooleanField(required=False)


class ComponentForm(forms.Form):
    source = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=0)
    ruled_out_source = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=0)
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
    conditions = forms.CharField(
        required=False,
        max_length=4000,
        label="Before starting (one condition per line)",
        widget=forms.Textarea(attrs={"rows": 1}),
    )
    when = forms.CharField(required=False, max_length=2000, label="When (for an alternative)")
    reason = forms.CharField(
        required=False, max_length=2000, label="Why ruled out (for an option ruled out)"
    )

    def edit(self) -> ComponentEdit | None:
        data = self.cleaned_data
        if not data or data.get("DELETE"):
            return None  # a row the clinician removed
        kept = data.get("source") is not None or data.get("ruled_out_source") is not None
        if not kept and not (data.get("description") or "").strip():
            return None  # an empty extra row
        return ComponentEdit(
            source=data.get("source"),
            ruled_out_source=data.get("ruled_out_source"),
            role=data["role"],
            position=data.get("position"),
            modality=data.get("modality") or "",
            description=data.get("description") or "",
            agents=[a.strip() for a in (data.get("agents") or "").split(",") if a.strip()],
            dose_adjustments=_lines(data.get("dose_adjustments")),
            conditions=_lines(data.get("conditions")),
            when=data.get("when") or "",
            reason=data.get("reason") or "",
        )


ComponentFormSet = forms.formset_factory(
    ComponentForm, extra=1, max_num=60, absolute_max=60, can_delete=True
)


def component_initial(
    components: list[dict[str, Any]], ruled_out: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The amend form's rows: every pathway step and alternative, then every option ruled out."""
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
                "conditions": "\n".join(str(x) for x in c.get("conditions") or []),
                "when": c.get("when") or "",
            }
        )
    for index, r in enumerate(ruled_out):
        rows.append(
            {
                "ruled_out_source": index,
                "role": "rejected",
                "description": r.get("option") or "",
                "reason": r.get("reason") or "",
            }
        )
    return rows


class MonitoringForm(forms.Form):
    source = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=0)
    phase = forms.ChoiceField(choices=PHASE_CHOICES, label="Phase")
    what = forms.CharField(required=False, max_length=2000, label="What is monitored")
    interval = forms.CharField(required=False, max_length=500, label="Interval")
    anchor = forms.ChoiceField(choices=ANCHOR_CHOICES, required=False, label="Response criteria")

    def row(self) -> MonitoringEdit | None:
        data = self.cleaned_data
        if not data or data.get("DELETE"):
            return None
        if data.get("source") is None and not (data.get("what") or "").strip():
            return None  # an empty extra row
        return MonitoringEdit(
            source=data.get("source"),
            phase=data["phase"],
            what=data.get("what") or "",
            interval=data.get("interval") or "",
            anchor=data.get("anchor") or "",
        )


MonitoringFormSet = forms.formset_factory(
    MonitoringForm, extra=1, max_num=40, absolute_max=40, can_delete=True
)


def monitoring_initial(monitoring: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "source": index,
            "phase": m.get("phase") or "",
            "what": m.get("what") or "",
            "interval": m.get("interval") or "",
            "anchor": m.get("anchor") if m.get("anchor") in ANCHORS else "",
        }
        for index, m in enumerate(monitoring)
    ]


class AmendForm(SubmissionForm):
    intent = forms.ChoiceField(choices=INTENT_CHOICES, label="Intent of the plan")
    reason = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Reason for the amendment",
        required=False,
    )


class AttendeeForm(forms.Form):
    name = forms.CharField(required=False, max_length=150)
    specialty = forms.CharField(required=False, max_length=150)

    def attendee(self) -> Attendee | None:
        data = self.cleaned_data or {}
        if data.get("DELETE"):
            return None
        return Attendee(name=data.get("name") or "", specialty=data.get("specialty") or "")


AttendeeFormSet = forms.formset_factory(
    AttendeeForm, extra=1, max_num=40, absolute_max=40, can_delete=True
)


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

    def __init__(self, *args: Any, clinicians: Iterable[User] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["responsible"]
        if isinstance(field, forms.TypedChoiceField):
            field.choices = [(u.pk, str(u)) for u in clinicians]


class ReportForm(forms.Form):
    paper = forms.ChoiceField(choices=PaperSize.choices, initial=PaperSize.A4, label="Paper")
    appendix = forms.MultipleChoiceField(
        choices=ReportAppendix.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Appendix",
        help_text="The report is a two-page summary for the meeting; tick what to add after it.",
    )
