"""Forms of the memory pages: the filters, an entry's edit, a retirement's reason, a decision's
note."""

from __future__ import annotations

from django import forms

from clinical.vocab import CancerType
from knowledge.memory.models import EntryKind, EntryStatus

_TEXT = {"rows": 3, "maxlength": 4000}


class EntryFilterForm(forms.Form):
    kind = forms.ChoiceField(choices=[("", "Both stores"), *EntryKind.choices], required=False)
    status = forms.ChoiceField(
        choices=[("", "Any status"), *EntryStatus.choices], required=False, initial="active"
    )
    cancer_type = forms.ChoiceField(
        choices=[("", "Any cancer"), *((c.value, c.label) for c in CancerType)],
        required=False,
    )


class EntryForm(forms.Form):
    case_summary = forms.CharField(widget=forms.Textarea(attrs=_TEXT), max_length=4000)
    question = forms.CharField(widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False)
    plan = forms.CharField(
        label="Plan (CorrectKB: the final plan; ChainKB: the correct plan)",
        widget=forms.Textarea(attrs=_TEXT),
        max_length=4000,
    )
    key_reasoning = forms.CharField(
        widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False
    )
    initial_hypothesis = forms.CharField(
        widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False
    )
    analysis = forms.CharField(widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False)
    final_conclusion = forms.CharField(
        widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False
    )
    error_reflection = forms.CharField(
        widget=forms.Textarea(attrs=_TEXT), max_length=4000, required=False
    )


class RetireForm(forms.Form):
    reason = forms.CharField(max_length=300)


class DecisionForm(forms.Form):
    note = forms.CharField(max_length=500, required=False)
