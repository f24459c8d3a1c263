"""Breast cancer surrogate subtype (HR+/HER2-, HER2+, TNBC) from ER, PR and HER2 results."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.calculators.tnm import breast_tnm_stage
from clinical.results import CalcResult, Inputs, lookup

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


CDK46_ADJUVANT_SOURCE: Final = (
    "monarchE (Johnston SRD et al., J Clin Oncol 2020; Harbeck N et al., Ann Oncol 2021): "
    "abemaciclib for 4 or more involved axillary nodes, or 1-3 with a tumour of 5 cm or more "
    "or histological grade 3. NATALEE (Slamon D et al., N Engl J Med 2024): ribociclib for "
    "anatomic stage II-III, node-negative stage IIA only with grade 3, or grade 2 with Ki-67 of "
    "20% or more. As adopted by ESMO early breast cancer 2024 and NCCN Breast v2.2025."
)
_GRADE = re.compile(r"\bgrade\s*(?:3|iii)\b|\bG3\b|\bpoorly\s+differentiated\b", re.IGNORECASE)
_GRADE_2 = re.compile(r"\bgrade\s*(?:2|ii)\b|\bG2\b|\bmoderately\s+differentiated\b", re.I)


def _histologic_grade(case: Mapping[str, Any]) -> int | None:
    texts = [
        lookup(case, path)
        for path in ("diagnosis.histology", "diagnosis.subtype", "notes")
        if isinstance(lookup(case, path), str)
    ]
    joined = " ".join(str(t) for t in texts)
    if _GRADE.search(joined):
        return 3
    if _GRADE_2.search(joined):
        return 2
    return None


def adjuvant_cdk46(case: Mapping[str, Any]) -> CalcResult:
    """Which adjuvant CDK4/6 inhibitor the trial criteria support for HR+/HER2- early breast
    cancer: "abemaciclib" (monarchE high risk), "ribociclib" (NATALEE, not monarchE), "none";
    None when the nodal category or the stage is not recorded."""
    name = "adjuvant_cdk46"
    inputs = Inputs(case)
    n = inputs.text("staging.n")
    t = inputs.text("staging.t")
    stage = breast_tnm_stage(case).value
    if n is None or t is None or not isinstance(stage, str):
        return inputs.result(name, None, CDK46_ADJUVANT_SOURCE, "N, T or stage not recorded")
    grade = _histologic_grade(case)
    ki67 = inputs.number("biomarkers.ki67_pct", minimum=0, maximum=100, record_missing=False)
    n_cat, t_cat = n.upper(), t.upper()
    four_or_more = n_cat.startswith(("N2", "N3"))
    one_to_three = n_cat.startswith("N1") and n_cat != "N1MI"
    large = t_cat.startswith(("T3", "T4"))
    grade_text = f"grade {grade}" if grade else "grade not stated"
    if four_or_more or (one_to_three and (large or grade == 3)):
        detail = f"{n_cat}, {t_cat}, {grade_text}: monarchE high risk"
        return inputs.result(name, "abemaciclib", CDK46_ADJUVANT_SOURCE, detail)
    node_negative_high = grade == 3 or (grade == 2 and ki67 is not None and ki67 >= 20)
    if stage in ("IIB", "IIIA", "IIIB", "IIIC") or (
        stage == "IIA" and (one_to_three or node_negative_high)
    ):
        detail = f"stage {stage}, {n_cat}, {grade_text}: NATALEE population"
        return inputs.result(name, "ribociclib", CDK46_ADJUVANT_SOURCE, detail)
    return inputs.result(name, "none", CDK46_ADJUVANT_SOURCE, f"stage {stage}, {n_cat}")
