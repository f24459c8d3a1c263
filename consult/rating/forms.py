"""Forms of the rating pages. The comparator form only gathers text into an
``mdtboard.plan/1`` document: the clinical core's plan parser judges it, as it judges an imported
file, so both get the same checks and messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms

from clinical.vocab import (
    COMPONENT_ROLE_LABELS,
    INTENT_LABELS,
    PLAN_FORMAT,
    Intent,
    Modality,
    Phase,
    ResponseAnchor,
)
from consult.rating.randomisation import ALLOWED_BLOCK_SIZES

COMPONENT_ROWS = 8
MONITORING_ROWS = 6
ROLE_CHOICES = tuple(COMPONENT_ROLE_LABELS.items())


@dataclass
class ComponentRow:
    index: int
    role: str = ""
    modality: str = ""
    description: str = ""
    when: str = ""
    dose: str = ""


@dataclass
class MonitoringRow:
    index: int
    phase: str = ""
    what: str = ""
    interval: str = ""
    anchor: str = ""


@dataclass
class ComparatorEntry:
    intent: str = ""
    summary: str = ""
    components: list[ComponentRow] | None = None
    not_advised: str = ""
    precautions: str = ""
    monitoring: list[MonitoringRow] | None = None
    needs: str = ""
    minutes: str = ""
    # The clinician attests having written it without seeing the system's plan.
    attested_blind: bool = False


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def entry_from_post(post: Any) -> ComparatorEntry:
    def get(name: str) -> str:
        return str(post.get(name, "") or "")

    return ComparatorEntry(
        intent=get("intent"),
        summary=get("summary"),
        components=[
            ComponentRow(
                i,
                get(f"c{i}-role"),
                get(f"c{i}-modality"),
                get(f"c{i}-description"),
                get(f"c{i}-when"),
                get(f"c{i}-dose"),
            )
            for i in range(1, COMPONENT_ROWS + 1)
        ],
        not_advised=get("not_advised"),
        precautions=get("precautions"),
        monitoring=[
            MonitoringRow(
                i, get(f"m{i}-phase"), get(f"m{i}-what"), get(f"m{i}-interval"), get(f"m{i}-anchor")
            )
            for i in range(1, MONITORING_ROWS + 1)
        ],
        needs=get("needs"),
        minutes=get("minutes"),
        attested_blind=get("attested_blind") == "on",
    )


def entry_from_plan(plan: dict[str, Any] | None) -> ComparatorEntry:
    """The form filled in from a stored version (editing makes a new version)."""
    if plan is None:
        return ComparatorEntry(
            components=[ComponentRow(i) for i in range(1, COMPONENT_ROWS + 1)],
            monitoring=[MonitoringRow(i) for i in range(1, MONITORING_ROWS + 1)],
        )
    recommendation = plan.get("recommendation") or {}
    components = sorted(
        recommendation.get("components") or [],
        key=lambda c: (c.get("role") != "primary", c.get("order") or c.get("rank") or 99),
    )
    rows = [
        ComponentRow(
            i,
            c.get("role") or "",
            c.get("modality") or "",
            c.get("description") or "",
            c.get("when") or "",
            "; ".join(c.get("dose_adjustments") or []),
        )
        for i, c in enumerate(components[:COMPONENT_ROWS], start=1)
    ]
    rows += [ComponentRow(i) for i in range(len(rows) + 1, COMPONENT_ROWS + 1)]
    monitoring = [
        MonitoringRow(i, m.get("phase") or "", m.get("what") or "", m.get("interval") or "",
                      m.get("anchor") or "")
        for i, m in enumerate((plan.get("monitoring") or [])[:MONITORING_ROWS], start=1)
    ]  # fmt: skip
    monitoring += [MonitoringRow(i) for i in range(len(monitoring) + 1, MONITORING_ROWS + 1)]
    safety = plan.get("safety") or {}
    precautions = [f.get("text", "") for f in safety.get("flags") or []]
    precautions += [g.get("detail", "") for g in safety.get("gates") or []]
    precautions += list(safety.get("notes") or [])
    return ComparatorEntry(
        intent=recommendation.get("intent") or "",
        summary=recommendation.get("summary") or "",
        components=rows,
        not_advised="\n".join(
            f"{r.get('option', '')}: {r.get('reason', '')}".rstrip(": ")
            for r in plan.get("rejected_options") or []
        ),
        precautions="\n".join(p for p in precautions if p),
        monitoring=monitoring,
        needs="\n".join(plan.get("needs_data") or []),
    )


def plan_from_entry(entry: ComparatorEntry) -> tuple[dict[str, Any], list[str]]:
    """The ``mdtboard.plan/1`` document the form describes, and the problems only the form can
    name (a half-filled row); the format's own checks come after, from the plan parser."""
    problems: list[str] = []
    components = []
    for row in entry.components or []:
        filled = any(v.strip() for v in (row.role, row.modality, row.when, row.dose))
        if not row.description.strip():
            if filled:
                problems.append(
                    f"Treatment row {row.index}: describe the treatment, or clear the row."
                )
            continue
        components.append(
            {
                "role": row.role or None,
                "modality": row.modality or None,
                "description": row.description,
                "when": row.when,
                "dose_adjustments": [d.strip() for d in row.dose.split(";") if d.strip()],
            }
        )
    monitoring = []
    for mrow in entry.monitoring or []:
        if not mrow.what.strip():
            if mrow.phase or mrow.interval.strip():
                problems.append(f"Follow-up row {mrow.index}: say what is done, or clear the row.")
            continue
        monitoring.append(
            {
                "phase": mrow.phase or None,
                "what": mrow.what,
                "interval": mrow.interval,
                "anchor": mrow.anchor or "other",
            }
        )
    rejected = []
    for line in _lines(entry.not_advised):
        option, _, reason = line.partition(":")
        rejected.append({"option": option.strip(), "reason": reason.strip()})
    plan = {
        "format": PLAN_FORMAT,
        "recommendation": {
            "summary": entry.summary,
            "intent": entry.intent or None,
            "components": components,
        },
        "rejected_options": rejected,
        "safety": {"gates": [], "flags": [], "notes": _lines(entry.precautions)},
        "monitoring": monitoring,
        "needs_data": _lines(entry.needs),
    }
    return plan, problems


def minutes_value(text: str) -> tuple[int | None, str | None]:
    text = text.strip()
    if not text:
        return None, None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 10_000:
        return None, "Time taken: a whole number of minutes from 1 to 10000, or leave it empty."
    return int(text), None


FORM_CHOICES = {
    "intents": [("", "Not stated"), *[(i.value, INTENT_LABELS[i]) for i in Intent]],
    "roles": [("", "—"), *ROLE_CHOICES],
    "modalities": [("", "—"), *[(m.value, m.label) for m in Modality]],
    "phases": [("", "—"), *[(p.value, p.label) for p in Phase]],
    "anchors": [("", "—"), *[(a.value, a.value) for a in ResponseAnchor]],
}


class ComparatorImportForm(forms.Form):
    file = forms.FileField(required=False, label="Plan file (.json)")
    text = forms.CharField(
        required=False,
        label="Or paste the JSON",
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false"}),
    )
    minutes = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=10_000,
        label="Time the team took to write it (minutes, optional)",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("file") and not (cleaned.get("text") or "").strip():
            raise forms.ValidationError("Choose a plan file or paste the plan's JSON.")
        return cleaned


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    consultations = forms.TypedMultipleChoiceField(
        coerce=int, widget=forms.CheckboxSelectMultiple, label="Cases (system plan and comparator)"
    )
    raters = forms.TypedMultipleChoiceField(coerce=int, widget=forms.CheckboxSelectMultiple)
    raters_per_packet = forms.IntegerField(min_value=1, max_value=50, initial=2)
    block_sizes = forms.TypedMultipleChoiceField(
        coerce=int,
        choices=[(s, str(s)) for s in ALLOWED_BLOCK_SIZES],
        initial=[2, 4],
        widget=forms.CheckboxSelectMultiple,
        label="Block sizes to draw from",
    )
    llm_arm = forms.BooleanField(required=False, label="Also score the packets with the LLM rater")
    include_dependent = forms.BooleanField(
        required=False,
        label="Also pair plans with comparators made from the team's decision on them",
        help_text=(
            "Such a comparator starts from the system's plan (accepted or amended), so it is "
            "not independent: left out unless you tick this."
        ),
    )

    def __init__(
        self,
        *args: Any,
        consultations: list[tuple[int, str]],
        raters: list[tuple[int, str]],
        llm_available: bool,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["consultations"].choices = consultations  # type: ignore[attr-defined]
        self.fields["raters"].choices = raters  # type: ignore[attr-defined]
        self.fields["raters_per_packet"].initial = max(1, len(raters))
        if not llm_available:
            self.fields["llm_arm"].disabled = True
            self.fields["llm_arm"].help_text = "No LLM endpoint is configured."
