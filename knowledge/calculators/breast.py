"""Breast cancer surrogate subtype (HR+/HER2-, HER2+, TNBC) from ER, PR and HER2 results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from knowledge.calculators._common import CalcResult, Inputs, lookup

SUBTYPE_SOURCE: Final = (
    "Allison KH, et al. Estrogen and progesterone receptor testing in breast cancer: ASCO/CAP "
    "guideline update. J Clin Oncol 2020;38(12):1346-1366 (ER/PR positive if >= 1% of nuclei "
    "stain; 1-10% reported as 'low positive'). Wolff AC, et al. HER2 testing in breast cancer: "
    "ASCO/CAP focused update. J Clin Oncol 2018;36(20):2105-2122 (HER2 positive = IHC 3+ or "
    "IHC 2+ with ISH amplification)."
)

HER2_VALUES: Final = ("0", "1+", "2+_ish_negative", "2+_ish_positive", "3+")
_HER2_POSITIVE: Final = frozenset({"2+_ish_positive", "3+"})
_HER2_LOW: Final = frozenset({"1+", "2+_ish_negative"})

_P_ER = "biomarkers.er_pct"
_P_PR = "biomarkers.pr_pct"
_P_HER2 = "biomarkers.her2"


def _read_her2(inputs: Inputs) -> str | None:
    raw = lookup(inputs.case, _P_HER2)
    # A bare numeric 0 is an unambiguous IHC score, so accept it as "0".
    if raw == 0 and not isinstance(raw, bool):
        inputs.used[_P_HER2] = raw
        return "0"
    if isinstance(raw, str) and raw.strip() in ("2+", "2+_equivocal"):
        inputs.used[_P_HER2] = raw
        inputs.missing.append(_P_HER2)
        inputs.notes.append("HER2 IHC 2+ is equivocal: the ISH result is needed")
        return None
    return inputs.choice(_P_HER2, HER2_VALUES)


def breast_subtype(case: Mapping[str, Any]) -> CalcResult:
    """Return "HER2+", "HR+/HER2-" or "TNBC".

    HER2 is always required. ER and PR are needed only as far as they decide the label:
    one receptor >= 1% is enough for HR+, both must be known (< 1%) to call TNBC.
    """
    name = "breast_subtype"
    inputs = Inputs(case)
    her2 = _read_her2(inputs)
    er = inputs.number(_P_ER, minimum=0, maximum=100, record_missing=False)
    pr = inputs.number(_P_PR, minimum=0, maximum=100, record_missing=False)
    notes: list[str] = []
    if er is not None and 1 <= er <= 10:
        notes.append(
            f"ER low positive ({er:g}%): behaviour and endocrine benefit often closer to "
            "ER-negative disease"
        )
    if er is not None and pr is not None and er < 1 <= pr:
        notes.append("ER-negative/PR-positive is uncommon; consider confirming receptor status")
    hr_positive = (er is not None and er >= 1) or (pr is not None and pr >= 1)
    hr_negative = er is not None and pr is not None and er < 1 and pr < 1

    if her2 is None:
        for path, value in ((_P_ER, er), (_P_PR, pr)):
            if value is None and lookup(case, path) is None and path not in inputs.missing:
                inputs.missing.append(path)
        return inputs.result(name, None, SUBTYPE_SOURCE, notes)

    if her2 in _HER2_POSITIVE:
        hr = "HR+" if hr_positive else "HR-" if hr_negative else "HR status not available"
        return inputs.result(name, "HER2+", SUBTYPE_SOURCE, [f"HER2 {her2}; {hr}", *notes])

    if her2 in _HER2_LOW:
        notes.append(f"HER2-low (IHC {her2.replace('_ish_negative', ', ISH not amplified')})")
    if hr_positive:
        return inputs.result(name, "HR+/HER2-", SUBTYPE_SOURCE, notes)
    if hr_negative:
        return inputs.result(name, "TNBC", SUBTYPE_SOURCE, notes)
    for path, value in ((_P_ER, er), (_P_PR, pr)):
        if value is None and path not in inputs.missing:
            inputs.missing.append(path)
    return inputs.result(name, None, SUBTYPE_SOURCE, notes)
