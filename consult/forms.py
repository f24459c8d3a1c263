"""Forms of the intake pages. Django forms only collect raw text here: the field catalog's
validator (consult.casefile) judges every value, so a form and an imported file get the same
checks and the same messages."""

from __future__ import annotations

import re
import uuid
from typing import Any

from django import forms

from clinical.vocab import CancerType
from consult.casefile.fields import (
    PRIOR_THERAPY_FIELDS,
    PSEUDONYM_MAX_LENGTH,
    TOXICITY_FIELDS,
    Field,
    FieldType,
    fields_in_section,
)
from consult.models import DossierStatus, EngineChoice
from mdtboard.accounts.models import Team

PRIOR_ROWS_EXTRA = 2
NONE_WORD = "none"
# ASCII digits only, and a bounded count: int() rejects other scripts' digits in places and
# integers of more than 4,300 digits; no measurement needs more than 30. Anything else stays
# text, and the validator names what is wrong with it.
_INT = re.compile(r"[+-]?[0-9]{1,30}")
_NUMBER = re.compile(r"[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,3})?")
_COUNT = re.compile(r"[0-9]{1,9}")


def small_count(text: str | None) -> int | None:
    """A non-negative whole number typed or passed in a query string, or None."""
    return int(text) if text and _COUNT.fullmatch(text) else None


# Fields the section forms never edit: identity and format are fixed once a dossier exists.
READ_ONLY = frozenset({"format", "case_id", "patient.pseudonym"})


def html_name(path: str) -> str:
    return path.replace(".", "__")


def section_fields(section: str, cancer_type: str) -> list[Field]:
    return [
        f
        for f in fields_in_section(section)
        if f.applies(cancer_type)
        and f.path not in READ_ONLY
        and f.type is not FieldType.PRIOR_THERAPIES
    ]


def has_prior_therapies(section: str) -> bool:
    return any(f.type is FieldType.PRIOR_THERAPIES for f in fields_in_section(section))


def to_value(field: Field, raw: str | None) -> Any:
    """Form text -> the JSON value the case format holds. Text that is not a valid value of the
    field's type is passed through as text, so the validator can say what is wrong with it."""
    text = (raw or "").strip()
    if text == "":
        return None
    if field.type is FieldType.INT:
        return int(text) if _INT.fullmatch(text) else _number_or_text(text)
    if field.type is FieldType.NUMBER:
        return _number_or_text(text)
    if field.type is FieldType.BOOL:
        return {"true": True, "false": False}.get(text, text)
    if field.type is FieldType.LIST_STR:
        if text.lower() == NONE_WORD:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]
    return text


def _number_or_text(text: str) -> Any:
    if _INT.fullmatch(text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    return text


def to_text(field: Field, value: Any) -> str:
    """The stored value as the form shows it."""
    if value is None:
        return ""
    if field.type is FieldType.BOOL:
        return "true" if value else "false"
    if field.type is FieldType.LIST_STR:
        return "\n".join(value) if value else NONE_WORD
    return str(value)


def section_values(
    data: dict[str, Any], section: str, cancer_type: str, post: Any
) -> dict[str, Any]:
    """A copy of ``data`` with the posted values of one section's fields applied."""
    updated = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for field in section_fields(section, cancer_type):
        value = to_value(field, post.get(html_name(field.path)))
        if field.parent is None:
            updated[field.key] = value
        else:
            updated.setdefault(field.parent, {})[field.key] = value
    if has_prior_therapies(section):
        updated["diagnosis"]["prior_therapies"] = _prior_rows(post)
    return updated


def _prior_value(field: Field, post: Any, index: int) -> Any:
    if field.type is FieldType.TOXICITY:
        # Two inputs (organ, grade) make the one object; both empty = not available.
        toxicity = {
            f.key: to_value(f, post.get(f"prior-{index}-toxicity_{f.key}")) for f in TOXICITY_FIELDS
        }
        return toxicity if any(v is not None for v in toxicity.values()) else None
    return to_value(field, post.get(f"prior-{index}-{field.key}"))


def _prior_rows(post: Any) -> list[dict[str, Any]]:
    rows = []
    count = small_count(post.get("prior-count")) or 0
    for index in range(min(count, 50)):
        row = {f.key: _prior_value(f, post, index) for f in PRIOR_THERAPY_FIELDS}
        if any(value is not None for value in row.values()):
            rows.append(row)
    return rows


def _prior_texts(row: dict[str, Any]) -> dict[str, str]:
    """One prior therapy as the edit form shows it; the toxicity object as two inputs."""
    shown: dict[str, str] = {}
    for field in PRIOR_THERAPY_FIELDS:
        value = row.get(field.key)
        if field.type is FieldType.TOXICITY:
            toxicity = value if isinstance(value, dict) else {}
            for sub in TOXICITY_FIELDS:
                shown[f"toxicity_{sub.key}"] = to_text(sub, toxicity.get(sub.key))
        else:
            shown[field.key] = to_text(field, value)
    return shown


def prior_rows_for_display(data: dict[str, Any]) -> list[dict[str, str]]:
    rows = (data.get("diagnosis") or {}).get("prior_therapies") or []
    shown = [_prior_texts(row) for row in rows]
    return shown + [_prior_texts({}) for _ in range(PRIOR_ROWS_EXTRA)]


class NewDossierForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    pseudonym = forms.CharField(
        max_length=PSEUDONYM_MAX_LENGTH,
        help_text="Never a real name or hospital number. An existing pseudonym in the team "
        "adds a dossier to that patient.",
    )
    cancer_type = forms.ChoiceField(choices=[(c.value, c.in_sentence) for c in CancerType])
    question = forms.CharField(
        label="MDT question", widget=forms.Textarea(attrs={"rows": 3}), required=False
    )

    def __init__(self, *args: Any, teams: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams  # type: ignore[attr-defined]


class ImportForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    as_of = forms.DateField(
        label="Date of the MDT question (FHIR bundles)",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="For a FHIR bundle: ages are computed on this date and results after it are "
        "not imported. Empty = today.",
    )

    def __init__(self, *args: Any, teams: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams  # type: ignore[attr-defined]


class DossierFilterForm(forms.Form):
    cancer_type = forms.ChoiceField(
        choices=[("", "All cancer types"), *[(c.value, c.in_sentence) for c in CancerType]],
        required=False,
    )
    status = forms.ChoiceField(choices=[("", "Any status"), *DossierStatus.choices], required=False)
    updated_from = forms.DateField(
        required=False, label="Updated from", widget=forms.DateInput(attrs={"type": "date"})
    )
    updated_to = forms.DateField(
        required=False, label="Updated to", widget=forms.DateInput(attrs={"type": "date"})
    )


class ConsultationForm(forms.Form):
    # Drawn with the page: the same form sent twice (or twenty times) starts one consultation.
    key = forms.UUIDField(widget=forms.HiddenInput, required=False)
    engine = forms.ChoiceField(choices=EngineChoice.choices, initial=EngineChoice.GUIDELINE)
    max_rounds = forms.IntegerField(
        label="Rounds at most",
        min_value=1,
        max_value=5,
        initial=3,
        help_text="The board stops earlier when all members agree.",
    )
    budget_short = forms.ChoiceField(
        label="If the LLM token budget will not cover the next round",
        choices=[
            ("stop", "End the deliberation with the rounds done"),
            ("continue", "Run the round; the guideline engine answers the turns it cannot cover"),
        ],
        initial="stop",
        required=False,
        help_text="LLM engine only. Either way the board and the plan say what happened.",
    )

    def __init__(self, *args: Any, llm_available: bool, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).setdefault("key", uuid.uuid4())
        super().__init__(*args, **kwargs)
        if not llm_available:
            engine = self.fields["engine"]
            if isinstance(engine, forms.ChoiceField):
                engine.choices = [(EngineChoice.GUIDELINE, EngineChoice.GUIDELINE.label)]
            engine.help_text = (
                "No LLM endpoint is configured; the guideline engine plays every role."
            )
