"""Dose-finding facts: the kidney function carboplatin is dosed on, body surface area, and the
fraction of a planned dose that renal or hepatic impairment allows.

Each returns a number a rule can name as its ``calculation``; the plan item then shows the
dose for the regimen it actually gives (``consult/engine/dosing.py`` reads the target AUC or the
mg/m2 from the item). A missing input gives None and names the field, never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from clinical.calculators.renal import CALVERT_GFR_CAP_ML_MIN, SEXES, cockcroft_gault
from clinical.results import CalcResult, Inputs

CALVERT_GFR_SOURCE: Final = (
    "NCCN Chemotherapy Order Templates, Appendix B: Carboplatin dosing in adults (last updated "
    "9 December 2020): GFR for the Calvert formula (dose mg = target AUC x (GFR + 25); Calvert "
    "AH et al., J Clin Oncol 1989;7(11):1748-1756) estimated by Cockcroft-Gault, capped at "
    "125 mL/min (US FDA / NCI CTEP 2010); adjusted body weight (ideal + 0.4 x (actual - "
    "ideal)) for a body-mass index of 25 kg/m2 or more; a minimum serum creatinine of "
    "0.7 mg/dL for abnormally low values (elderly or cachectic patients). Ideal body weight by "
    "Devine (50 kg men, 45.5 kg women, + 2.3 kg per inch over 5 feet)."
)
BSA_SOURCE: Final = (
    "Mosteller RD. Simplified calculation of body-surface area. N Engl J Med "
    "1987;317(17):1098 (BSA m2 = sqrt(height cm x weight kg / 3600))."
)
CAPECITABINE_SOURCE: Final = (
    "XELODA (capecitabine) EU Summary of Product Characteristics, section 4.2 (renal "
    "impairment): creatinine clearance 30-50 mL/min -> 75 % of the 1250 mg/m2 starting dose "
    "(no reduction of a 1000 mg/m2 starting dose); below 30 mL/min contraindicated (4.3)."
)
ANTHRACYCLINE_SOURCE: Final = (
    "Doxorubicin and epirubicin UK Summaries of Product Characteristics, section 4.2 (hepatic "
    "impairment): bilirubin 1.2-3.0 mg/dL -> 50 % of the dose, above 3.0 mg/dL -> 25 %; "
    "severe hepatic impairment contraindicated (4.3), taken as bilirubin above 5 mg/dL as in "
    "the US doxorubicin label."
)
PACLITAXEL_SOURCE: Final = (
    "TAXOL (paclitaxel) US prescribing information, Dosage and Administration - hepatic "
    "impairment (3-hour infusion of 175 mg/m2): bilirubin up to 1.25 x ULN -> 175 mg/m2; "
    "1.26-2.0 x ULN -> 135 mg/m2; 2.01-5.0 x ULN -> 90 mg/m2; above 5 x ULN not recommended "
    "(the EU SmPC: severe hepatic impairment must not be treated). ULN taken as 1.2 mg/dL."
)
IRINOTECAN_SOURCE: Final = (
    "Irinotecan UK Summary of Product Characteristics, sections 4.2-4.3: bilirubin up to "
    "1.5 x ULN -> 350 mg/m2 (monotherapy every 3 weeks); 1.5-3 x ULN -> 200 mg/m2; above "
    "3 x ULN contraindicated. ULN taken as 1.2 mg/dL."
)
DOCETAXEL_SOURCE: Final = (
    "TAXOTERE (docetaxel) EU Summary of Product Characteristics, sections 4.2 and 4.4: "
    "bilirubin above the upper limit of normal -> docetaxel should not be used unless strictly "
    "indicated. ULN taken as 1.2 mg/dL."
)

CREATININE_FLOOR_MG_DL: Final = 0.7
ADJUSTED_WEIGHT_BMI: Final = 25.0
BILIRUBIN_ULN_MG_DL: Final = 1.2
_INCH_CM: Final = 2.54
_P_SCR = "labs.creatinine_mg_dl"
_P_BILI = "labs.bilirubin_mg_dl"


def ideal_body_weight_kg(height_cm: float, female: bool) -> float:
    """Devine: 50 kg (men) or 45.5 kg (women) plus 2.3 kg per inch above 5 feet."""
    return (45.5 if female else 50.0) + 2.3 * (height_cm / _INCH_CM - 60.0)


def adjusted_body_weight_kg(actual_kg: float, ideal_kg: float) -> float:
    return ideal_kg + 0.4 * (actual_kg - ideal_kg)


def _dosing_weight(inputs: Inputs, weight: float, female: bool) -> tuple[float, str, str]:
    """The weight for Cockcroft-Gault in carboplatin dosing, in short and in full."""
    height = inputs.number("patient.height_cm", minimum=40, maximum=250, record_missing=False)
    if height is None:
        return (
            weight,
            f"actual weight {weight:g} kg, no height for BMI",
            f"actual body weight {weight:g} kg: height not recorded, so the body-mass index is "
            "unknown (with a BMI of 25 or more the adjusted weight would give a lower dose)",
        )
    bmi = weight / (height / 100.0) ** 2
    ideal = ideal_body_weight_kg(height, female)
    if bmi >= ADJUSTED_WEIGHT_BMI and weight > ideal:
        adjusted = adjusted_body_weight_kg(weight, ideal)
        return (
            adjusted,
            f"adjusted weight {adjusted:.1f} kg for BMI {bmi:.1f}",
            f"adjusted body weight {adjusted:.1f} kg = ideal {ideal:.1f} + 0.4 x (actual "
            f"{weight:g} - ideal), because the BMI is {bmi:.1f} (25 or more)",
        )
    text = f"actual weight {weight:g} kg, BMI {bmi:.1f}"
    return weight, text, f"actual body weight {weight:g} kg (BMI {bmi:.1f}, below 25)"


def _calvert(case: Mapping[str, Any]) -> tuple[Inputs, float | None, str, str]:
    inputs = Inputs(case)
    scr = inputs.number(_P_SCR, positive=True, maximum=30.0)
    age = inputs.number("patient.age_years", minimum=0, maximum=120)
    sex = inputs.choice("patient.sex", SEXES)
    weight = inputs.number("patient.weight_kg", positive=True, maximum=400.0)
    if age is not None and age < 18:
        inputs.missing.append("patient.age_years")
        inputs.notes.append("Cockcroft-Gault is for adults; a child's carboplatin dose is not")
    if sex == "other":
        inputs.missing.append("patient.sex")
        inputs.notes.append("Cockcroft-Gault needs female or male sex; not assumed")
    if scr is None or age is None or sex is None or weight is None or inputs.missing:
        return inputs, None, "", ""
    female = sex == "female"
    used_weight, weight_short, weight_long = _dosing_weight(inputs, weight, female)
    used_scr = max(scr, CREATININE_FLOOR_MG_DL)
    scr_text = (
        f"creatinine {scr:g} raised to the 0.7 mg/dL floor"
        if scr < CREATININE_FLOOR_MG_DL
        else f"creatinine {scr:g} mg/dL"
    )
    crcl = cockcroft_gault(age, used_weight, used_scr, female)
    gfr = min(crcl, CALVERT_GFR_CAP_ML_MIN)
    cap = " capped at 125" if crcl > CALVERT_GFR_CAP_ML_MIN else ""
    short = f"CrCl {crcl:.0f} mL/min{cap} (Cockcroft-Gault; {weight_short}; {scr_text})"
    detail = (
        f"GFR {gfr:.1f} mL/min = Cockcroft-Gault {crcl:.1f} mL/min{cap}; {weight_long}; {scr_text}"
    )
    return inputs, round(gfr, 1), short, detail


def carboplatin_gfr_ml_min(case: Mapping[str, Any]) -> CalcResult:
    """The GFR (mL/min, one decimal) to put in the Calvert formula: Cockcroft-Gault with the
    dosing weight and the creatinine floor, capped at 125 mL/min."""
    inputs, gfr, _short, detail = _calvert(case)
    return inputs.result("carboplatin_gfr_ml_min", gfr, CALVERT_GFR_SOURCE, detail)


def carboplatin_gfr_basis(case: Mapping[str, Any]) -> CalcResult:
    """In words, which weight and creatinine gave the Calvert GFR (shown with every dose)."""
    inputs, gfr, short, _detail = _calvert(case)
    return inputs.result(
        "carboplatin_gfr_basis", short if gfr is not None else None, CALVERT_GFR_SOURCE
    )


def bsa_m2(case: Mapping[str, Any]) -> CalcResult:
    """Body surface area (m2, two decimals) by Mosteller; needs height and weight."""
    inputs = Inputs(case)
    height = inputs.number("patient.height_cm", minimum=40, maximum=250)
    weight = inputs.number("patient.weight_kg", positive=True, maximum=400.0)
    if height is None or weight is None:
        return inputs.result("bsa_m2", None, BSA_SOURCE)
    value = round(math.sqrt(height * weight / 3600.0), 2)
    return inputs.result("bsa_m2", value, BSA_SOURCE, f"{height:g} cm, {weight:g} kg")


def capecitabine_renal_dose_pct(case: Mapping[str, Any]) -> CalcResult:
    """Per cent of the 1250 mg/m2 capecitabine starting dose the kidneys allow: 100 above
    50 mL/min, 75 at 30-50, 0 (contraindicated) below 30 (Cockcroft-Gault, actual weight)."""
    inputs = Inputs(case)
    scr = inputs.number(_P_SCR, positive=True, maximum=30.0)
    age = inputs.number("patient.age_years", minimum=18, maximum=120)
    sex = inputs.choice("patient.sex", ("female", "male"))
    weight = inputs.number("patient.weight_kg", positive=True, maximum=400.0)
    if scr is None or age is None or sex is None or weight is None:
        return inputs.result("capecitabine_renal_dose_pct", None, CAPECITABINE_SOURCE)
    crcl = cockcroft_gault(age, weight, scr, sex == "female")
    pct = 100 if crcl > 50.0 else 75 if crcl >= 30.0 else 0
    detail = f"CrCl {crcl:.0f} mL/min (Cockcroft-Gault, actual body weight {weight:g} kg)"
    return inputs.result("capecitabine_renal_dose_pct", pct, CAPECITABINE_SOURCE, detail)


def _bilirubin_pct(
    case: Mapping[str, Any], name: str, source: str, bands: tuple[tuple[float, float], ...]
) -> CalcResult:
    """Per cent of the planned dose for the bilirubin: the first band whose upper limit
    (mg/dL, inclusive) is not exceeded; 0 above the last (do not give)."""
    inputs = Inputs(case)
    bilirubin = inputs.number(_P_BILI, minimum=0, maximum=60.0)
    if bilirubin is None:
        return inputs.result(name, None, source)
    pct = next((p for limit, p in bands if bilirubin <= limit + 1e-9), 0)
    ratio = bilirubin / BILIRUBIN_ULN_MG_DL
    detail = f"bilirubin {bilirubin:g} mg/dL = {ratio:.1f} x ULN (ULN taken as 1.2 mg/dL)"
    return inputs.result(name, pct, source, detail)


_ULN = BILIRUBIN_ULN_MG_DL


def doxorubicin_hepatic_dose_pct(case: Mapping[str, Any]) -> CalcResult:
    """Doxorubicin (and epirubicin): 100 % below 1.2 mg/dL bilirubin, 50 % to 3.0, 25 % to
    5.0, not given above 5.0."""
    return _bilirubin_pct(
        case,
        "doxorubicin_hepatic_dose_pct",
        ANTHRACYCLINE_SOURCE,
        ((1.2 - 1e-6, 100), (3.0, 50), (5.0, 25)),
    )


def paclitaxel_hepatic_dose_pct(case: Mapping[str, Any]) -> CalcResult:
    """Paclitaxel: 100 % to 1.25 x ULN, 135/175 (77 %) to 2 x ULN, 90/175 (51 %) to 5 x ULN,
    not given above."""
    return _bilirubin_pct(
        case,
        "paclitaxel_hepatic_dose_pct",
        PACLITAXEL_SOURCE,
        ((1.25 * _ULN, 100), (2.0 * _ULN, 77.1), (5.0 * _ULN, 51.4)),
    )


def irinotecan_hepatic_dose_pct(case: Mapping[str, Any]) -> CalcResult:
    """Irinotecan: 100 % to 1.5 x ULN, 200/350 (57 %) to 3 x ULN, contraindicated above."""
    return _bilirubin_pct(
        case,
        "irinotecan_hepatic_dose_pct",
        IRINOTECAN_SOURCE,
        ((1.5 * _ULN, 100), (3.0 * _ULN, 57.1)),
    )


def docetaxel_hepatic_dose_pct(case: Mapping[str, Any]) -> CalcResult:
    """Docetaxel: 100 % with bilirubin within normal, not given above the ULN."""
    return _bilirubin_pct(case, "docetaxel_hepatic_dose_pct", DOCETAXEL_SOURCE, ((_ULN, 100),))
