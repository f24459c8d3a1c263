"""HCC liver-transplant criteria from the staging block: Milan, up-to-7 and UCSF.

Each criterion is three-valued: True (within), False (beyond), None (the case does not say
enough). A single known failing criterion (e.g. macrovascular invasion, four nodules) decides
False even when other inputs are missing; True needs every input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs

MILAN_SOURCE: Final = (
    "Mazzaferro V, Regalia E, Doci R, et al. Liver transplantation for the treatment of small "
    "hepatocellular carcinomas in patients with cirrhosis. N Engl J Med 1996;334(11):693-699 "
    "(single nodule <= 5 cm, or 2-3 nodules each <= 3 cm; no macrovascular invasion or "
    "extrahepatic spread)."
)
UP_TO_7_SOURCE: Final = (
    "Mazzaferro V, Llovet JM, Miceli R, et al. Predicting survival after liver transplantation "
    "in patients with hepatocellular carcinoma beyond the Milan criteria: a retrospective, "
    "exploratory analysis. Lancet Oncol 2009;10(1):35-43 (largest nodule in cm + number of "
    "nodules <= 7; no microvascular/macrovascular invasion - here macrovascular, the only one "
    "the case file records - and no extrahepatic spread)."
)
UCSF_SOURCE: Final = (
    "Yao FY, Ferrell L, Bass NM, et al. Liver transplantation for hepatocellular carcinoma: "
    "expansion of the tumor size limits does not adversely impact survival. Hepatology "
    "2001;33(6):1394-1403 (single <= 6.5 cm, or 2-3 nodules, largest <= 4.5 cm and total "
    "diameter <= 8 cm)."
)

_P_COUNT = "staging.nodules_count"
_P_LARGEST = "staging.largest_nodule_mm"
_P_MVI = "staging.macrovascular_invasion"
_P_EHS = "staging.extrahepatic_spread"

Truth = bool | None


def _read(inputs: Inputs) -> tuple[int | None, float | None, bool | None, bool | None]:
    count_raw = inputs.number(_P_COUNT, minimum=1, maximum=100)
    count: int | None = None
    if count_raw is not None:
        if count_raw != int(count_raw):
            inputs.missing.append(_P_COUNT)
            inputs.notes.append(f"{_P_COUNT} is not a whole number")
        else:
            count = int(count_raw)
    largest = inputs.number(_P_LARGEST, positive=True, maximum=400.0)
    mvi = inputs.boolean(_P_MVI)
    ehs = inputs.boolean(_P_EHS)
    return count, largest, mvi, ehs


def _decide(inputs: Inputs, name: str, parts: dict[str, Truth], source: str) -> CalcResult:
    """Combine criteria: any False -> False (even with gaps), all True -> True, else None."""
    failing = [label for label, ok in parts.items() if ok is False]
    if failing:
        # A failing criterion settles it: what else is missing cannot bring the tumour within.
        missing = list(inputs.missing)
        inputs.missing.clear()
        detail = ["beyond: " + ", ".join(failing)]
        if missing:
            detail.append("not needed: " + ", ".join(missing))
        return inputs.result(name, False, source, detail)
    undecided = [label for label, ok in parts.items() if ok is None]
    if undecided or inputs.missing:
        return inputs.result(name, None, source, ["undecided: " + ", ".join(undecided)])
    return inputs.result(name, True, source, "within: " + ", ".join(parts))


def _no_invasion(mvi: bool | None, ehs: bool | None) -> dict[str, Truth]:
    return {
        "no macrovascular invasion": None if mvi is None else not mvi,
        "no extrahepatic spread": None if ehs is None else not ehs,
    }


def within_milan(case: Mapping[str, Any]) -> CalcResult:
    """Milan: one nodule <= 50 mm, or 2-3 nodules each <= 30 mm; no MVI, no extrahepatic spread.

    With 2-3 nodules the largest one bounds all of them, so the largest is enough.
    """
    inputs = Inputs(case)
    count, largest, mvi, ehs = _read(inputs)
    size: Truth
    if count is not None and count >= 4:
        size = False
    elif largest is not None and largest > 50:
        size = False  # beyond the single-nodule limit, so beyond whatever the count
    elif count is None or largest is None:
        size = None
    else:
        size = largest <= (50 if count == 1 else 30)
    label = (
        "tumour burden"
        if count is None or largest is None
        else f"{count} nodule(s), largest {largest:g} mm"
    )
    parts = {label: size, **_no_invasion(mvi, ehs)}
    return _decide(inputs, "within_milan", parts, MILAN_SOURCE)


def within_up_to_7(case: Mapping[str, Any]) -> CalcResult:
    """Up-to-7: largest nodule (cm) + number of nodules <= 7; no MVI, no extrahepatic spread."""
    inputs = Inputs(case)
    count, largest, mvi, ehs = _read(inputs)
    size: Truth
    if count is not None and largest is not None:
        size = largest + 10 * count <= 70  # in mm, so no floating-point rounding
    elif count is not None and count >= 7:
        size = False  # seven nodules already reach 7 before any size is added
    elif largest is not None and largest + 10 > 70:
        size = False  # at least one nodule, so the sum is at least largest (cm) + 1
    else:
        size = None
    label = (
        "tumour burden"
        if count is None or largest is None
        else f"{largest / 10:g} cm + {count} nodule(s) = {largest / 10 + count:g}"
    )
    parts = {label: size, **_no_invasion(mvi, ehs)}
    return _decide(inputs, "within_up_to_7", parts, UP_TO_7_SOURCE)


def within_ucsf(case: Mapping[str, Any]) -> CalcResult:
    """UCSF: one nodule <= 65 mm, or 2-3 nodules, largest <= 45 mm and total diameter <= 80 mm.

    The case records only the number and the largest diameter, so for 2-3 nodules the total is
    bounded by count x largest: within when that bound is <= 80 mm, undecidable (None) when the
    bound exceeds 80 mm but the largest is <= 45 mm.
    """
    inputs = Inputs(case)
    count, largest, mvi, ehs = _read(inputs)
    size: Truth
    label = "tumour burden"
    if count is not None and count >= 4:
        size = False
    elif largest is not None and largest > 65:
        size = False  # beyond the single-nodule limit, so beyond whatever the count
        label = f"largest nodule {largest:g} mm (> 65 mm)"
    elif count is None or largest is None:
        size = None
    elif count == 1:
        size = largest <= 65
        label = f"single nodule {largest:g} mm"
    elif largest > 45:
        size = False
        label = f"{count} nodules, largest {largest:g} mm (> 45 mm)"
    elif count * largest <= 80:
        size = True
        label = f"{count} nodules, largest {largest:g} mm, total <= {count * largest:g} mm"
    else:
        size = None
        label = (
            f"{count} nodules, largest {largest:g} mm: total diameter unknown "
            f"(up to {count * largest:g} mm)"
        )
    parts = {label: size, **_no_invasion(mvi, ehs)}
    return _decide(inputs, "within_ucsf", parts, UCSF_SOURCE)


TUMOUR_BURDEN_SOURCE: Final = (
    "Largest nodule (cm) + number of nodules, the sum behind up-to-7 (Mazzaferro V et al., Lancet "
    "Oncol 2009;10(1):35-43) and the 'six-and-twelve' score for chemoembolisation (Wang Q et al., "
    "J Hepatol 2019;70(5):893-903: <= 6 low, > 6 to 12 intermediate, > 12 high burden, where "
    "TACE gives the poorest survival)."
)


def tumour_burden_score(case: Mapping[str, Any]) -> CalcResult:
    """Largest nodule in cm plus the number of nodules (both required), one decimal."""
    inputs = Inputs(case)
    count, largest, _mvi, _ehs = _read(inputs)
    # Invasion is irrelevant to the sum: only the two burden inputs are required.
    inputs.missing[:] = [p for p in inputs.missing if p in (_P_COUNT, _P_LARGEST)]
    inputs.used.pop(_P_MVI, None)
    inputs.used.pop(_P_EHS, None)
    if count is None or largest is None:
        return inputs.result("tumour_burden_score", None, TUMOUR_BURDEN_SOURCE)
    score = round(largest / 10 + count, 1)
    band = "<= 6" if score <= 6 else "> 6 to 12" if score <= 12 else "> 12"
    detail = f"{largest / 10:g} cm + {count} nodule(s) = {score:g} (six-and-twelve band {band})"
    return inputs.result("tumour_burden_score", score, TUMOUR_BURDEN_SOURCE, detail)
