"""Doses written per kilogram, per square metre or by a weight band, resolved to the number for
the recorded weight and body-surface area (issue 23): "Lenvatinib 12 mg daily (8 mg if under 60
kg)" at 54 kg is 8 mg - a dose adjustment; "bevacizumab 15 mg/kg" at 72 kg is 1080 mg;
"docetaxel 75 mg/m2" at 1.80 m2 is 135 mg. A dose that needs a weight or a BSA that is not
recorded says so instead of a number (never a guess).

Weight bands as the labels state them (lenvatinib in HCC: 12 mg once daily from 60 kg, 8 mg
below - EMA Lenvima SmPC, section 4.2). BSA from the recorded height and weight (Mosteller,
``derived.bsa_m2``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical import lexicon

_NUMBER: Final = r"(\d+(?:\.\d+)?)"
# "12 mg daily (8 mg if under 60 kg)", "12 mg (8 mg if < 60 kg)", "8 mg if below 60 kg".
_BAND = re.compile(
    rf"{_NUMBER}\s*mg\b(?P<between>[^()]{{0,30}}?)\(\s*{_NUMBER}\s*mg\s+if\s+(?:under|below|<|less\s+than)"
    rf"\s*{_NUMBER}\s*kg\s*\)",
    re.IGNORECASE,
)
_PER_KG = re.compile(rf"{_NUMBER}\s*mg\s*/\s*kg\b", re.IGNORECASE)
_PER_M2 = re.compile(rf"{_NUMBER}\s*mg\s*/\s*m(?:2|²)\b", re.IGNORECASE)
_DRUG_BEFORE: Final = 60


def _fmt(value: float) -> str:
    return f"{value:g}"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _drug_before(text: str, start: int) -> str:
    """The drug named just before a dose ("bevacizumab 15 mg/kg"), else ""."""
    window = text[max(0, start - _DRUG_BEFORE) : start]
    names = [m for m in lexicon.mentions(window) if m.drugs]
    if not names:
        return ""
    last = names[-1]
    if len(last.drugs) == 1:
        return next(iter(last.drugs))
    return window[last.start : last.end].strip()


def resolved_doses(description: str, facts: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(dose adjustments, resolved doses) of one item's description for the patient."""
    weight = _number(facts.get("patient.weight_kg"))
    bsa = _number(facts.get("derived.bsa_m2"))
    adjustments: list[str] = []
    doses: list[str] = []
    for match in _BAND.finditer(description):
        full, reduced, limit = (float(match.group(i)) for i in (1, 3, 4))
        drug = _drug_before(description, match.start()) or "the drug"
        if weight is None:
            doses.append(
                f"{drug}: {_fmt(full)} mg or {_fmt(reduced)} mg by body weight (cut-off "
                f"{_fmt(limit)} kg): weight not recorded, weigh the patient before prescribing"
            )
        elif weight < limit:
            adjustments.append(
                f"{drug} {_fmt(reduced)} mg (not {_fmt(full)} mg): body weight {_fmt(weight)} kg "
                f"< {_fmt(limit)} kg"
            )
        else:
            doses.append(
                f"{drug} {_fmt(full)} mg: body weight {_fmt(weight)} kg >= {_fmt(limit)} kg"
            )
    for match in _PER_KG.finditer(description):
        per_kg = float(match.group(1))
        drug = _drug_before(description, match.start()) or "dose"
        if weight is None:
            doses.append(f"{drug} {_fmt(per_kg)} mg/kg: weight not recorded, no dose in mg")
        else:
            total = _fmt(round(per_kg * weight))
            doses.append(f"{drug} {_fmt(per_kg)} mg/kg x {_fmt(weight)} kg = {total} mg")
    for match in _PER_M2.finditer(description):
        per_m2 = float(match.group(1))
        drug = _drug_before(description, match.start()) or "dose"
        if bsa is None:
            doses.append(
                f"{drug} {_fmt(per_m2)} mg/m2: body-surface area not known (height or weight "
                "not recorded), no dose in mg"
            )
        else:
            doses.append(
                f"{drug} {_fmt(per_m2)} mg/m2 x {bsa:.2f} m2 = {_fmt(round(per_m2 * bsa))} mg"
            )
    return adjustments, doses
