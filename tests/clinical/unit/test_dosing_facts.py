"""Dose-finding facts against worked examples: the Calvert GFR with the dosing weight, the
creatinine floor and the 125 mL/min cap; body surface area; the capecitabine renal and the
anthracycline, paclitaxel, irinotecan and docetaxel hepatic fractions."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.applicability import case_facts
from clinical.calculators.dosing import (
    bsa_m2,
    capecitabine_renal_dose_pct,
    carboplatin_gfr_basis,
    carboplatin_gfr_ml_min,
    docetaxel_hepatic_dose_pct,
    doxorubicin_hepatic_dose_pct,
    ideal_body_weight_kg,
    irinotecan_hepatic_dose_pct,
    paclitaxel_hepatic_dose_pct,
)


def patient(
    age: float, weight: float, scr: float | None, sex: str, height: float | None = None
) -> dict[str, Any]:
    return {
        "format": "mdtboard.case/1",
        "case_id": "t",
        "cancer_type": "lung_adenocarcinoma",
        "patient": {"age_years": age, "weight_kg": weight, "sex": sex, "height_cm": height},
        "labs": {"creatinine_mg_dl": scr},
    }


def test_calvert_gfr_without_height_uses_actual_weight_and_says_so() -> None:
    # 60-year-old man, 70 kg, creatinine 1.0: CrCl = 80 x 70 / 72 = 77.78 mL/min
    c = patient(60, 70, 1.0, "male")
    assert carboplatin_gfr_ml_min(c).value == 77.8
    assert carboplatin_gfr_basis(c).value == (
        "CrCl 78 mL/min (Cockcroft-Gault; actual weight 70 kg, no height for BMI; "
        "creatinine 1 mg/dL)"
    )
    assert "height not recorded" in carboplatin_gfr_ml_min(c).detail


def test_calvert_gfr_floors_a_low_creatinine_at_0_7() -> None:
    # 75-year-old woman, 50 kg, creatinine 0.5 (cachexia):
    #   with the 0.7 floor: 65 x 50 / (72 x 0.7) x 0.85 = 3250 / 50.4 x 0.85 = 54.81
    #   (0.5 as measured would give 76.7 mL/min and a dose a third higher)
    c = patient(75, 50, 0.5, "female")
    assert carboplatin_gfr_ml_min(c).value == 54.8
    assert "creatinine 0.5 raised to the 0.7 mg/dL floor" in str(carboplatin_gfr_basis(c).value)


def test_calvert_gfr_uses_adjusted_weight_from_a_bmi_of_25() -> None:
    # 50-year-old man, 110 kg, 175 cm: BMI 35.9
    #   ideal (Devine) = 50 + 2.3 x (175 / 2.54 - 60) = 50 + 2.3 x 8.898 = 70.46 kg
    #   adjusted = 70.46 + 0.4 x (110 - 70.46) = 86.28 kg
    #   CrCl = 90 x 86.28 / 72 = 107.85 mL/min (actual weight would give 137.5, capped at 125)
    c = patient(50, 110, 1.0, "male", height=175)
    assert ideal_body_weight_kg(175, female=False) == pytest.approx(70.46, abs=0.01)
    assert carboplatin_gfr_ml_min(c).value == pytest.approx(107.8, abs=0.05)
    assert "adjusted weight 86.3 kg for BMI 35.9" in str(carboplatin_gfr_basis(c).value)


def test_calvert_gfr_keeps_actual_weight_below_a_bmi_of_25() -> None:
    # 50-year-old woman, 60 kg, 165 cm: BMI 22.0; CrCl = 90 x 60 / (72 x 0.8) x 0.85 = 79.69
    c = patient(50, 60, 0.8, "female", height=165)
    assert carboplatin_gfr_ml_min(c).value == 79.7
    assert "actual weight 60 kg, BMI 22.0" in str(carboplatin_gfr_basis(c).value)


def test_calvert_gfr_is_capped_at_125() -> None:
    # 30-year-old man, 100 kg, creatinine 0.8: CrCl = 110 x 100 / 57.6 = 191 -> 125
    c = patient(30, 100, 0.8, "male")
    assert carboplatin_gfr_ml_min(c).value == 125.0
    assert "CrCl 191 mL/min capped at 125" in str(carboplatin_gfr_basis(c).value)


@pytest.mark.parametrize(
    ("change", "missing"),
    [
        ({"labs": {"creatinine_mg_dl": None}}, "labs.creatinine_mg_dl"),
        ({"patient": {"age_years": 60, "weight_kg": None, "sex": "male"}}, "patient.weight_kg"),
        ({"patient": {"age_years": 60, "weight_kg": 70, "sex": "other"}}, "patient.sex"),
    ],
)
def test_calvert_gfr_is_not_guessed(change: dict[str, Any], missing: str) -> None:
    c = patient(60, 70, 1.0, "male") | change
    assert carboplatin_gfr_ml_min(c).value is None
    assert missing in carboplatin_gfr_ml_min(c).inputs_missing
    assert carboplatin_gfr_basis(c).value is None


def test_bsa_by_mosteller_needs_height() -> None:
    # sqrt(170 x 70 / 3600) = sqrt(3.3056) = 1.818
    assert bsa_m2(patient(60, 70, 1.0, "male", height=170)).value == 1.82
    assert bsa_m2(patient(60, 70, 1.0, "male")).value is None


@pytest.mark.parametrize(
    ("age", "weight", "scr", "sex", "pct"),
    [
        (50, 80, 1.0, "male", 100),  # CrCl 100
        (72, 60, 1.2, "female", 75),  # 68 x 60 / 86.4 x 0.85 = 40.1
        (60, 72, 1.6, "male", 75),  # 80 x 72 / 115.2 = 50.0: 30-50 inclusive
        (80, 70, 2.5, "male", 0),  # 60 x 70 / 180 = 23.3: contraindicated
    ],
)
def test_capecitabine_fraction_by_creatinine_clearance(
    age: float, weight: float, scr: float, sex: str, pct: int
) -> None:
    assert capecitabine_renal_dose_pct(patient(age, weight, scr, sex)).value == pct


def _bilirubin(value: float | None) -> dict[str, Any]:
    return {"cancer_type": "breast", "labs": {"bilirubin_mg_dl": value}}


@pytest.mark.parametrize(
    ("bilirubin", "pct"),
    [(1.0, 100), (1.2, 50), (3.0, 50), (3.1, 25), (5.0, 25), (5.1, 0)],
)
def test_anthracycline_fraction_by_bilirubin(bilirubin: float, pct: int) -> None:
    assert doxorubicin_hepatic_dose_pct(_bilirubin(bilirubin)).value == pct


@pytest.mark.parametrize(
    ("bilirubin", "pct"),
    # ULN 1.2 mg/dL: 1.25 x = 1.5, 2 x = 2.4, 5 x = 6.0; 135/175 = 77.1 %, 90/175 = 51.4 %
    [(1.5, 100), (1.6, 77.1), (2.4, 77.1), (2.5, 51.4), (6.0, 51.4), (6.1, 0)],
)
def test_paclitaxel_fraction_by_bilirubin(bilirubin: float, pct: float) -> None:
    assert paclitaxel_hepatic_dose_pct(_bilirubin(bilirubin)).value == pct


@pytest.mark.parametrize(("bilirubin", "pct"), [(1.8, 100), (1.9, 57.1), (3.6, 57.1), (3.7, 0)])
def test_irinotecan_fraction_by_bilirubin(bilirubin: float, pct: float) -> None:
    assert irinotecan_hepatic_dose_pct(_bilirubin(bilirubin)).value == pct


def test_docetaxel_not_given_above_the_upper_limit_and_unknown_without_bilirubin() -> None:
    assert docetaxel_hepatic_dose_pct(_bilirubin(1.2)).value == 100
    assert docetaxel_hepatic_dose_pct(_bilirubin(1.3)).value == 0
    result = docetaxel_hepatic_dose_pct(_bilirubin(None))
    assert result.value is None
    assert result.inputs_missing == ["labs.bilirubin_mg_dl"]


def test_dosing_facts_reach_every_case() -> None:
    facts = case_facts(patient(60, 70, 1.0, "male", height=170))
    assert facts["derived.carboplatin_gfr_ml_min"] == 77.8
    assert facts["derived.bsa_m2"] == 1.82
    assert facts["derived.capecitabine_renal_dose_pct"] == 100
