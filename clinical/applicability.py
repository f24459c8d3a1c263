"""Whether a knowledge unit applies to a case: three-valued (True, False, None = unknown).

A missing fact never counts as true or false. A gate whose inputs are missing is "unknown"
and asks for the data; it is not a pass. Pure Python: the guideline engine uses it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from clinical.calculators import derive_all
from clinical.calculators.response import setting_disagreement, setting_from_imaging
from clinical.rules import Condition, Context
from clinical.text.clinicaltext import complete_from_text, likely_missing
from clinical.text.negation import affirms
from clinical.text.notes import complete_from_notes

Truth = bool | None


TLS_TEXT = "organ_function.tumour_lysis_risk"


def case_facts(case: Mapping[str, Any]) -> dict[str, Any]:
    """Every fact a condition may name: "section.key" from the case file, "derived.<name>"
    from the calculators (among them "derived.line", the line of systemic therapy).

    A critical field left empty but stated in the free text (a transplant in the
    comorbidities, "EF 35%" in the notes) is read from the text, so the rules fire as if it
    were filled: "derived.from_text" lists those facts with their words, and
    "derived.text_disagreements" the fields the text contradicts (the structured value kept);
    "derived.likely_missing" the critical facts still empty that other facts make likely."""
    # The medspaCy reader (clinical/text/reader.py) first: pharmacogenomics, endoscopy,
    # bleeding, immune toxicity, lung disease, serology, drivers, transplant, autoimmunity,
    # pregnancy, LVEF, QTc. The older rule-based reader then adds what it alone reads (the
    # immunosuppression from the medication list, the heart rate, an explicit "no transplant").
    case, from_notes, notes_disagreements, read = complete_from_notes(case)
    case, from_text, disagreements = complete_from_text(
        case, skip=frozenset(f["fact"] for f in (*from_notes, *notes_disagreements))
    )
    # Response is computed, not typed: serial measurements that show progression make an
    # unrecorded setting "progressive" (the rules of later lines then apply), and where they
    # contradict the recorded setting they win ("derived.setting_disagreement" says why).
    case, imaging_setting, disagreement = _complete_setting(case)
    facts: dict[str, Any] = {}
    for key, value in case.items():
        if isinstance(value, Mapping):
            for inner, inner_value in value.items():
                facts[f"{key}.{inner}"] = inner_value
        else:
            facts[key] = value
    for name, result in derive_all(case).items():
        facts[f"derived.{name}"] = result.value
    # Facts the case format has no field for (a prior pneumonitis, an anticoagulant, the
    # immune-related adverse events and bleeding events as lists) go to the rules as read.
    for name, value in read.items():
        facts.setdefault(name, value)
    # A high tumour-lysis risk the notes state (a spontaneous tumour lysis, hyperuricaemia,
    # Burkitt, a bulky mass) is a high risk group whatever the calculator read from the fields
    # (for any cancer: the calculator reads lymphoma only).
    if facts.get(TLS_TEXT) == "high":
        facts["derived.tls_risk"] = "high"
    facts["derived.from_text"] = from_notes + from_text
    facts["derived.text_disagreements"] = notes_disagreements + disagreements
    facts["derived.likely_missing"] = likely_missing(case)
    facts["derived.setting_from_imaging"] = imaging_setting
    facts["derived.setting_disagreement"] = disagreement
    return facts


def _complete_setting(
    case: Mapping[str, Any],
) -> tuple[Mapping[str, Any], str | None, str | None]:
    """The case with the setting its serial measurements show, the setting filled in (when none
    was recorded) and why a recorded one was replaced."""
    diagnosis = case.get("diagnosis")
    section = dict(diagnosis) if isinstance(diagnosis, Mapping) else {}
    if section.get("setting") is not None:
        contradicted = setting_disagreement(case)
        if contradicted is None:
            return case, None, None
        setting, why = contradicted
        return {**case, "diagnosis": {**section, "setting": setting}}, None, why
    setting = setting_from_imaging(case)
    if setting is None:
        return case, None, None
    return {**case, "diagnosis": {**section, "setting": setting}}, setting, None


def _norm(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def condition_holds(condition: Condition, facts: Mapping[str, Any]) -> Truth:
    value = facts.get(condition.fact)
    if condition.op == "present":
        return value is not None and value != []
    if value is None:
        return None
    op, target = condition.op, condition.value
    if op == "is_true":
        return value is True
    if op == "is_false":
        return value is False
    if op in ("eq", "ne"):
        equal = _norm(value) == _norm(target)
        return equal if op == "eq" else not equal
    if op in ("in", "not_in"):
        inside = _norm(value) in {_norm(t) for t in target}
        return inside if op == "in" else not inside
    if op == "contains_any":
        # Free text is read for what it affirms: "no seizures", "non-bulky", "H. pylori
        # negative" and "non-Hodgkin" mention a term without meaning it.
        haystack = (
            [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
        )
        return any(affirms(str(item), str(term)) for item in haystack for term in target)
    if not _is_number(value):
        return None  # a comparison on a non-number cannot be decided
    decided: bool = {
        "lt": value < target,
        "le": value <= target,
        "gt": value > target,
        "ge": value >= target,
    }[op]
    return decided


def _all(values: Iterable[Truth]) -> Truth:
    seen = list(values)
    if any(v is False for v in seen):
        return False
    return None if any(v is None for v in seen) else True


def _any(values: Iterable[Truth]) -> Truth:
    seen = list(values)
    if any(v is True for v in seen):
        return True
    return None if any(v is None for v in seen) else False


def context_applies(context: Context, facts: Mapping[str, Any]) -> Truth:
    parts: list[Truth] = [_all(condition_holds(c, facts) for c in context.all)]
    if context.any:
        parts.append(_any(condition_holds(c, facts) for c in context.any))
    return _all(parts)


def missing_facts(context: Context, facts: Mapping[str, Any]) -> list[str]:
    """Facts the context names that the case does not have: what to ask for."""
    names = [c.fact for c in (*context.all, *context.any) if c.op != "present"]
    return sorted({name for name in names if facts.get(name) is None})
