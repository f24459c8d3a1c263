"""Kidney function estimates: eGFR (CKD-EPI 2021, race-free) and Cockcroft-Gault CrCl."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, round_half_up

EGFR_SOURCE: Final = (
    "Inker LA, Eneanya ND, Coresh J, et al. New creatinine- and cystatin C-based equations to "
    "estimate GFR without race. N Engl J Med 2021;385(19):1737-1749 (2021 CKD-EPI creatinine "
    "equation; mL/min/1.73 m2)."
)
CRCL_SOURCE: Final = (
    "Cockcroft DW, Gault MH. Prediction of creatinine clearance from serum creatinine. "
    "Nephron 1976;16(1):31-41 (mL/min; x0.85 for women)."
)

SEXES: Final = ("female", "male", "other")
_P_SCR = "labs.creatinine_mg_dl"
_P_AGE = "patient.age_years"
_P_SEX = "patient.sex"
_P_WEIGHT = "patient.weight_kg"


def ckd_epi_2021(creatinine_mg_dl: float, age_years: float, female: bool) -> float:
    """Unrounded 2021 CKD-EPI creatinine eGFR in mL/min/1.73 m2."""
    kappa = 0.7 if female else 0.9
    alpha = -0.241 if female else -0.302
    ratio = creatinine_mg_dl / kappa
    # math.pow keeps the arithmetic typed as float (float ** float is Any to mypy).
    egfr = (
        142.0
        * math.pow(min(ratio, 1.0), alpha)
        * math.pow(max(ratio, 1.0), -1.200)
        * math.pow(0.9938, age_years)
    )
    return egfr * 1.012 if female else egfr


def cockcroft_gault(
    age_years: float, weight_kg: float, creatinine_mg_dl: float, female: bool
) -> float:
    """Unrounded Cockcroft-Gault creatinine clearance in mL/min."""
    crcl = (140.0 - age_years) * weight_kg / (72.0 * creatinine_mg_dl)
    return crcl * 0.85 if female else crcl


def _common(inputs: Inputs) -> tuple[float | None, float | None, str | None, list[str]]:
    """Creatinine, age and sex, with the adult-only and binary-sex restrictions applied."""
    # Upper bounds catch umol/L creatinine typed into the mg/dL field (e.g. 88 instead of 1.0).
    scr = inputs.number(_P_SCR, positive=True, maximum=30.0)
    age = inputs.number(_P_AGE, minimum=0, maximum=120)
    sex = inputs.choice(_P_SEX, SEXES)
    blockers: list[str] = []
    if age is not None and age < 18:
        blockers.append("equation is for adults (>= 18 years); use a paediatric equation")
    if sex == "other":
        blockers.append(
            "equation coefficients are defined only for female or male sex; with sex 'other' "
            "the estimate is not computed rather than assuming either"
        )
    return scr, age, sex, blockers


def egfr_ckd_epi_2021(case: Mapping[str, Any]) -> CalcResult:
    """eGFR (mL/min/1.73 m2, whole number). Requires creatinine, age and female/male sex."""
    name = "egfr_ckd_epi_2021"
    inputs = Inputs(case)
    scr, age, sex, blockers = _common(inputs)
    if scr is None or age is None or sex is None or blockers:
        return inputs.result(name, None, EGFR_SOURCE, blockers)
    raw = ckd_epi_2021(scr, age, sex == "female")
    detail = f"unrounded {raw:.1f} mL/min/1.73 m2; race-free equation; assumes stable creatinine"
    return inputs.result(name, round_half_up(raw), EGFR_SOURCE, detail)


def crcl_cockcroft_gault(case: Mapping[str, Any]) -> CalcResult:
    """Creatinine clearance (mL/min, whole number) using actual body weight.

    Requires creatinine, age, weight and female/male sex. Actual weight overestimates
    clearance in obesity; height is not in the case file, so ideal/adjusted weight cannot be
    used and the choice is stated in detail.
    """
    name = "crcl_cockcroft_gault"
    inputs = Inputs(case)
    scr, age, sex, blockers = _common(inputs)
    weight = inputs.number(_P_WEIGHT, positive=True, maximum=400.0)
    if scr is None or age is None or sex is None or weight is None or blockers:
        return inputs.result(name, None, CRCL_SOURCE, blockers)
    raw = cockcroft_gault(age, weight, scr, sex == "female")
    detail = (
        f"unrounded {raw:.1f} mL/min; actual body weight {weight:g} kg (may overestimate in "
        "obesity); not normalised to body surface area; creatinine not floored"
    )
    return inputs.result(name, round_half_up(raw), CRCL_SOURCE, detail)


CALVERT_SOURCE: Final = (
    "Calvert AH, Newell DR, Gumbrell LA, et al. Carboplatin dosage: prospective evaluation of a "
    "simple formula based on renal function. J Clin Oncol 1989;7(11):1748-1756 (dose mg = target "
    "AUC x (GFR + 25)); GFR estimated by Cockcroft-Gault and capped at 125 mL/min as in the US "
    "FDA / NCI CTEP carboplatin dosing communication (2010) and the carboplatin label, so the "
    "maximum dose is AUC x 150 mg."
)
CALVERT_GFR_CAP_ML_MIN: Final = 125.0


def calvert_dose_mg(target_auc: float, gfr_ml_min: float) -> int:
    """Calvert carboplatin dose in whole mg, GFR capped at 125 mL/min (halves rounded up)."""
    gfr = min(gfr_ml_min, CALVERT_GFR_CAP_ML_MIN)
    return round_half_up(target_auc * (gfr + 25.0))


def _carboplatin(case: Mapping[str, Any], auc: int) -> CalcResult:
    name = f"carboplatin_auc{auc}_mg"
    inputs = Inputs(case)
    scr, age, sex, blockers = _common(inputs)
    weight = inputs.number(_P_WEIGHT, positive=True, maximum=400.0)
    if scr is None or age is None or sex is None or weight is None or blockers:
        return inputs.result(name, None, CALVERT_SOURCE, blockers)
    crcl = cockcroft_gault(age, weight, scr, sex == "female")
    capped = min(crcl, CALVERT_GFR_CAP_ML_MIN)
    dose = calvert_dose_mg(auc, crcl)
    detail = [
        f"AUC {auc} x (GFR {capped:.1f} + 25) = {auc * (capped + 25.0):.1f} -> {dose} mg",
        f"GFR = Cockcroft-Gault CrCl {crcl:.1f} mL/min (actual body weight {weight:g} kg)"
        + (" capped at 125 mL/min" if crcl > CALVERT_GFR_CAP_ML_MIN else ""),
        "creatinine not floored: a very low creatinine (cachexia, low muscle mass) overestimates "
        "GFR - check against a measured GFR where possible",
    ]
    return inputs.result(name, dose, CALVERT_SOURCE, detail)


def carboplatin_auc5_mg(case: Mapping[str, Any]) -> CalcResult:
    """Carboplatin dose (mg) for target AUC 5 by the Calvert formula."""
    return _carboplatin(case, 5)


def carboplatin_auc6_mg(case: Mapping[str, Any]) -> CalcResult:
    """Carboplatin dose (mg) for target AUC 6 by the Calvert formula."""
    return _carboplatin(case, 6)
