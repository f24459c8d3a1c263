"""The dose a plan item gives, in words a prescriber checks: the calculation an ``adjust`` rule
names, applied to the regimen the item actually describes.

A carboplatin dose is only meaningful for the target AUC of that regimen: weekly AUC 2 with
radiotherapy, AUC 1.5 weekly in KEYNOTE-522 and AUC 6 in TCHP are different doses, and showing
the AUC 5 figure beside them invites a dosing error. So the AUC is read from the item's
description (or dose notes), and when it cannot be read the item says so instead of showing a
number. The patient's numbers come from the derived facts (``clinical/calculators/dosing.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from consult.engine.schemas import ProposedComponent

_NUMBER = r"(\d+(?:\.\d+)?)"
_RANGE = rf"{_NUMBER}(?:\s*(?:-|–|to|or)\s*{_NUMBER})?"
_AUC = re.compile(rf"\bAUC\s*(?:of\s*|=\s*)?{_RANGE}", re.IGNORECASE)
_CARBOPLATIN = re.compile(r"carbo(?:platin)?\b", re.IGNORECASE)
# The words that belong to one drug of a regimen: a schedule is read only inside the drug's own
# clause ("weekly carboplatin AUC 2", "carboplatin AUC 5 every 3 weeks"), never from a partner's
# ("carboplatin AUC 5 plus nab-paclitaxel 100 mg/m2 weekly").
_CLAUSE_END = re.compile(r"[,;()]|\b(?:plus|with|and|then|or|followed)\b", re.IGNORECASE)
_BEFORE = 45
_WEEKLY = re.compile(r"\bweekly\b|\bevery week\b|\bq1w\b", re.IGNORECASE)
_THREE_WEEKLY = re.compile(r"\bevery (?:3|three) weeks\b|\bq3w\b|\b3-weekly\b", re.IGNORECASE)


def _number(text: str) -> float:
    return float(text)


def _fmt(value: float) -> str:
    return f"{value:g}"


def _clause(text: str, start: int, end: int) -> str:
    """The words of the drug's own clause around an AUC at text[start:end]."""
    before = text[max(0, start - _BEFORE) : start]
    cut = list(_CLAUSE_END.finditer(before))
    head = before[cut[-1].end() :] if cut else before
    after = text[end:]
    stop = _CLAUSE_END.search(after)
    return head + text[start:end] + (after[: stop.start()] if stop else after)


def _schedule(clause: str) -> str:
    if _WEEKLY.search(clause):
        return "weekly"
    if _THREE_WEEKLY.search(clause):
        return "every 3 weeks"
    return ""


def carboplatin_aucs(text: str) -> list[tuple[float, str]]:
    """The target AUCs the text gives carboplatin, each with its schedule, in order and
    without repeats: "carboplatin AUC 5-6" -> [(5, ""), (6, "")]."""
    found: list[tuple[float, str]] = []
    for match in _AUC.finditer(text):
        before = text[max(0, match.start() - _BEFORE) : match.start()]
        if not _CARBOPLATIN.search(before) and not _CARBOPLATIN.match(
            text[match.end() : match.end() + 20].lstrip(" )(:,")
        ):
            continue
        schedule = _schedule(_clause(text, match.start(), match.end()))
        for group in (match.group(1), match.group(2)):
            if group is None:
                continue
            auc = _number(group)
            if 0 < auc <= 10 and (auc, schedule) not in found:
                found.append((auc, schedule))
    return found


def calvert_mg(auc: float, gfr: float) -> int:
    """Calvert: target AUC x (GFR + 25) mg, halves rounded up (GFR already capped)."""
    raw = auc * (gfr + 25.0)
    return int(raw + 0.5)


def _carboplatin(component: ProposedComponent, facts: Mapping[str, Any]) -> str:
    text = " ".join([component.description, *component.dose_adjustments])
    gfr = facts.get("derived.carboplatin_gfr_ml_min")
    basis = facts.get("derived.carboplatin_gfr_basis") or f"GFR {gfr} mL/min"
    if not isinstance(gfr, int | float) or isinstance(gfr, bool):
        return (
            "carboplatin dose not calculable: the Calvert formula needs creatinine, age, "
            "weight and female/male sex"
        )
    aucs = carboplatin_aucs(text)
    if not aucs:
        return (
            f"carboplatin: the regimen states no target AUC, so no dose is given; dose = AUC x "
            f"({_fmt(gfr)} + 25) mg (Calvert, {basis})"
        )
    doses = "; ".join(
        f"carboplatin AUC {_fmt(auc)}{' ' + schedule if schedule else ''}: "
        f"{calvert_mg(auc, gfr)} mg"
        for auc, schedule in aucs
    )
    return f"{doses} (Calvert, {basis})"


def _stated_mg_m2(drug: str, text: str) -> list[float]:
    """The mg/m2 doses the text gives a drug ("capecitabine 1000-1250 mg/m2")."""
    pattern = re.compile(
        rf"{re.escape(drug)}\w*[^;.]{{0,25}}?{_RANGE}\s*mg/m(?:2|²)", re.IGNORECASE
    )
    doses: list[float] = []
    for match in pattern.finditer(text):
        for group in (match.group(1), match.group(2)):
            if group is not None and _number(group) not in doses:
                doses.append(_number(group))
    return doses


def _bsa_text(mg_m2: float, facts: Mapping[str, Any]) -> str:
    bsa = facts.get("derived.bsa_m2")
    if isinstance(bsa, int | float) and not isinstance(bsa, bool):
        return f" (about {round(mg_m2 * bsa / 10) * 10:g} mg at BSA {_fmt(bsa)} m2)"
    return ""


def _percent_of(
    drug: str, fact: str, why: str
) -> Callable[[ProposedComponent, Mapping[str, Any]], str]:
    def note(component: ProposedComponent, facts: Mapping[str, Any]) -> str:
        pct = facts.get(fact)
        if not isinstance(pct, int | float) or isinstance(pct, bool):
            return f"{drug} dose adjustment not calculable ({why} not available)"
        if pct >= 100:
            return f"{drug}: full dose ({why})"
        if pct <= 0:
            return f"{drug}: do not give ({why})"
        text = " ".join([component.description, *component.dose_adjustments])
        stated = _stated_mg_m2(drug, text)
        reduced = "; ".join(
            f"{_fmt(d)} -> {_fmt(round(d * pct / 100))} mg/m2{_bsa_text(d * pct / 100, facts)}"
            for d in stated
        )
        return f"{drug} at {_fmt(pct)} % of the planned dose ({why})" + (
            f": {reduced}" if reduced else ""
        )

    return note


def _capecitabine(component: ProposedComponent, facts: Mapping[str, Any]) -> str:
    pct = facts.get("derived.capecitabine_renal_dose_pct")
    crcl = facts.get("derived.crcl_cockcroft_gault")
    why = f"CrCl {crcl} mL/min" if crcl is not None else "creatinine clearance"
    if not isinstance(pct, int | float) or isinstance(pct, bool):
        return f"capecitabine renal dose not calculable ({why} not available)"
    if pct >= 100:
        return f"capecitabine: full dose ({why})"
    if pct <= 0:
        return f"capecitabine: contraindicated ({why} below 30 mL/min)"
    text = " ".join([component.description, *component.dose_adjustments])
    parts = []
    for dose in _stated_mg_m2("capecitabine", text) or [1250.0]:
        if dose <= 1000:
            parts.append(f"{_fmt(dose)} mg/m2 twice daily needs no reduction (label)")
        else:
            reduced = round(dose * pct / 100)
            parts.append(f"{_fmt(dose)} -> {reduced} mg/m2 twice daily{_bsa_text(reduced, facts)}")
    return f"capecitabine at {_fmt(pct)} % for {why}: " + "; ".join(parts)


def _bilirubin(facts: Mapping[str, Any]) -> str:
    value = facts.get("labs.bilirubin_mg_dl")
    return f"bilirubin {value} mg/dL" if value is not None else "bilirubin"


_NOTES: dict[str, Callable[[ProposedComponent, Mapping[str, Any]], str]] = {
    "derived.carboplatin_gfr_ml_min": _carboplatin,
    "derived.capecitabine_renal_dose_pct": _capecitabine,
}


def _hepatic(drug: str, fact: str) -> Callable[[ProposedComponent, Mapping[str, Any]], str]:
    def note(component: ProposedComponent, facts: Mapping[str, Any]) -> str:
        return _percent_of(drug, fact, _bilirubin(facts))(component, facts)

    return note


_HEPATIC_DRUGS = {
    "derived.doxorubicin_hepatic_dose_pct": ("doxorubicin", "epirubicin"),
    "derived.paclitaxel_hepatic_dose_pct": ("paclitaxel",),
    "derived.irinotecan_hepatic_dose_pct": ("irinotecan",),
    "derived.docetaxel_hepatic_dose_pct": ("docetaxel",),
}


def dose_note(
    calculation: str, component: ProposedComponent, facts: Mapping[str, Any]
) -> str | None:
    """What the calculation means for this item, or None when it is not one of the dose
    calculations (the caller then shows the plain value)."""
    if calculation in _NOTES:
        return _NOTES[calculation](component, facts)
    drugs = _HEPATIC_DRUGS.get(calculation)
    if drugs is None:
        return None
    text = " ".join([component.description, *component.agents]).casefold()
    named = [d for d in drugs if d in text] or [drugs[0]]
    return "; ".join(_hepatic(drug, calculation)(component, facts) for drug in named)
