"""Unit tests for the derived facts added for the knowledge-base contract: transplant criteria,
FLIPI, Calvert carboplatin doses, medication classes, prior-therapy facts, frailty, liver
decompensation and the BCLC stage of decompensated disease."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clinical.applicability import case_facts
from clinical.calculators.liver import bclc_stage, liver_decompensated
from clinical.calculators.lymphoma import flipi, flipi_risk
from clinical.calculators.medications import (
    anticoagulants,
    antiplatelets,
    cyp2d6_inhibitors,
    qt_prolonging_drugs,
    strong_cyp3a4_inducers,
    strong_cyp3a4_inhibitors,
)
from clinical.calculators.patient import (
    early_relapse,
    frailty,
    months_to_relapse,
    prior_regimens,
    treatment_line,
)
from clinical.calculators.renal import calvert_dose_mg, carboplatin_auc5_mg, carboplatin_auc6_mg
from clinical.calculators.transplant import within_milan, within_ucsf, within_up_to_7


def case(cancer_type: str | None = None, **sections: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"format": "mdtboard.case/1", "case_id": "t", "cancer_type": cancer_type}
    out.update(sections)
    return out


# --- Milan / up-to-7 / UCSF ---------------------------------------------------------------------


def hcc(
    count: int | None, largest: float | None, mvi: bool | None = False, ehs: bool | None = False
) -> dict[str, Any]:
    return case(
        "hcc",
        staging={
            "nodules_count": count,
            "largest_nodule_mm": largest,
            "macrovascular_invasion": mvi,
            "extrahepatic_spread": ehs,
        },
    )


@pytest.mark.parametrize(
    ("count", "largest", "milan", "up_to_7", "ucsf"),
    [
        (1, 50, True, True, True),  # single 5 cm: Milan limit; 5 + 1 = 6 <= 7; <= 6.5 cm
        (1, 51, False, True, True),  # 5.1 cm single: beyond Milan; 5.1 + 1 = 6.1; UCSF ok
        (1, 60, False, True, True),  # 6 + 1 = 7: up-to-7 limit exactly
        (1, 65, False, False, True),  # 6.5 + 1 = 7.5 > 7; UCSF single limit 6.5 cm
        (1, 66, False, False, False),
        (3, 30, True, True, None),  # Milan; 3 + 3 = 6; UCSF total up to 90 mm > 80 -> unknown
        (2, 40, False, True, True),  # 4 + 2 = 6; UCSF total <= 2 x 40 = 80 mm -> within
        (2, 46, False, True, False),  # largest > 45 mm -> beyond UCSF; 4.6 + 2 = 6.6
        (3, 40, False, True, None),  # 4 + 3 = 7; UCSF total up to 120 mm -> undecidable
        (4, 20, False, True, False),  # 4 nodules: beyond Milan and UCSF; 2 + 4 = 6
        (5, 25, False, False, False),  # 2.5 + 5 = 7.5
    ],
)
def test_transplant_criteria_table(
    count: int, largest: float, milan: bool, up_to_7: bool, ucsf: bool | None
) -> None:
    c = hcc(count, largest)
    assert within_milan(c).value is milan
    assert within_up_to_7(c).value is up_to_7
    assert within_ucsf(c).value is ucsf


def test_transplant_criteria_invasion_or_spread_is_beyond_all() -> None:
    for c in (hcc(1, 20, mvi=True), hcc(1, 20, ehs=True)):
        assert within_milan(c).value is False
        assert within_up_to_7(c).value is False
        assert within_ucsf(c).value is False


def test_transplant_criteria_missing_input_is_none_unless_already_beyond() -> None:
    # given a small single nodule but invasion not recorded -> unknown, input named
    result = within_milan(hcc(1, 20, mvi=None))
    assert result.value is None
    assert "staging.macrovascular_invasion" in result.inputs_missing
    # given five nodules and no size: beyond Milan whatever the size
    assert within_milan(hcc(5, None)).value is False
    # given no staging at all
    assert within_milan(case("hcc")).value is None
    # given a 75 mm nodule and no count: at least 7.5 -> beyond up-to-7
    assert within_up_to_7(hcc(None, 75)).value is False
    assert within_up_to_7(hcc(None, 30)).value is None
    # a 70 mm nodule is beyond Milan and UCSF whatever the count
    assert within_milan(hcc(None, 70)).value is False
    assert within_ucsf(hcc(None, 70)).value is False
    assert within_milan(hcc(None, 40)).value is None


# --- FLIPI ---------------------------------------------------------------------------------------


def fl(
    age: float = 65, stage: str = "III", hb: float = 11.5, ldh: float = 300, nodal: int = 6
) -> dict[str, Any]:
    return case(
        "lymphoma",
        patient={"age_years": age},
        staging={"ann_arbor_stage": stage, "nodal_regions_involved": nodal},
        labs={"hemoglobin_g_dl": hb},
        biomarkers={"ldh_u_l": ldh, "ldh_uln_u_l": 250},
    )


def test_flipi_worked_examples() -> None:
    # age 65 > 60 (1) + stage III (1) + Hb 11.5 < 12 (1) + LDH 300 > 250 (1) + 6 > 4 areas (1) = 5
    assert flipi(fl()).value == 5
    assert flipi_risk(fl()).value == "high"
    # age 60 (0) + stage II (0) + Hb 12.0 (0, not < 12) + LDH 250 (0, not > ULN) + 4 areas (0)
    low = fl(age=60, stage="II", hb=12.0, ldh=250, nodal=4)
    assert flipi(low).value == 0
    assert flipi_risk(low).value == "low"
    # age 61 (1) + stage IV (1) + rest 0 = 2 -> intermediate
    mid = fl(age=61, stage="IV", hb=13, ldh=200, nodal=2)
    assert flipi(mid).value == 2
    assert flipi_risk(mid).value == "intermediate"
    # 3 factors -> high
    assert flipi_risk(fl(age=50, stage="II")).value == "high"


def test_flipi_missing_input_is_none() -> None:
    c = fl()
    c["staging"]["nodal_regions_involved"] = None
    result = flipi(c)
    assert result.value is None
    assert result.inputs_missing == ["staging.nodal_regions_involved"]
    assert flipi_risk(c).value is None


def test_flipi_runs_only_for_lymphoma() -> None:
    assert "derived.flipi" not in case_facts({**fl(), "cancer_type": "breast"})
    assert case_facts(fl())["derived.flipi_risk"] == "high"


# --- Calvert -------------------------------------------------------------------------------------


def renal(age: float, weight: float, scr: float, sex: str) -> dict[str, Any]:
    return case(
        patient={"age_years": age, "weight_kg": weight, "sex": sex}, labs={"creatinine_mg_dl": scr}
    )


def test_calvert_worked_example_male() -> None:
    # 60-year-old man, 70 kg, creatinine 1.0 mg/dL:
    #   CrCl = (140 - 60) x 70 / (72 x 1.0) = 5600 / 72 = 77.78 mL/min
    #   AUC 5: 5 x (77.78 + 25) = 5 x 102.78 = 513.9 -> 514 mg
    #   AUC 6: 6 x 102.78 = 616.7 -> 617 mg
    c = renal(60, 70, 1.0, "male")
    assert carboplatin_auc5_mg(c).value == 514
    assert carboplatin_auc6_mg(c).value == 617
    assert "Calvert" in carboplatin_auc5_mg(c).source


def test_calvert_worked_example_female() -> None:
    # 50-year-old woman, 60 kg, creatinine 0.8 mg/dL:
    #   CrCl = (140 - 50) x 60 / (72 x 0.8) x 0.85 = 5400 / 57.6 x 0.85 = 93.75 x 0.85 = 79.69
    #   AUC 5: 5 x 104.69 = 523.4 -> 523 mg;  AUC 6: 6 x 104.69 = 628.1 -> 628 mg
    c = renal(50, 60, 0.8, "female")
    assert carboplatin_auc5_mg(c).value == 523
    assert carboplatin_auc6_mg(c).value == 628


def test_calvert_caps_gfr_at_125() -> None:
    # 30-year-old man, 100 kg, creatinine 0.6: CrCl = 110 x 100 / 43.2 = 254.6 -> capped at 125
    #   AUC 5: 5 x (125 + 25) = 750 mg;  AUC 6: 6 x 150 = 900 mg (the maximum doses)
    c = renal(30, 100, 0.6, "male")
    assert carboplatin_auc5_mg(c).value == 750
    assert carboplatin_auc6_mg(c).value == 900
    assert "capped at 125" in carboplatin_auc5_mg(c).detail


def test_calvert_missing_weight_is_none() -> None:
    c = renal(60, 70, 1.0, "male")
    del c["patient"]["weight_kg"]
    result = carboplatin_auc5_mg(c)
    assert result.value is None
    assert result.inputs_missing == ["patient.weight_kg"]


@given(
    auc=st.integers(min_value=1, max_value=7),
    gfr=st.floats(min_value=0, max_value=300),
    more=st.floats(min_value=0, max_value=300),
)
def test_calvert_monotone_in_gfr_and_bounded(auc: int, gfr: float, more: float) -> None:
    # a higher clearance never gives a lower dose, and the dose never exceeds AUC x 150
    assert calvert_dose_mg(auc, gfr + more) >= calvert_dose_mg(auc, gfr)
    assert calvert_dose_mg(auc, gfr + more) <= auc * 150


# --- medication classes --------------------------------------------------------------------------


def meds(*names: str) -> dict[str, Any]:
    return case(patient={"medications": list(names)})


def test_medication_classes() -> None:
    c = meds(
        "Clarithromycin 500 mg bd",
        "Rifampicin 600 mg",
        "ESCITALOPRAM 10 mg",
        "Eliquis 5 mg bd",
        "ASA 100 mg",
        "paroxetine 20 mg",
        "metformin",
        "St John\u2019s wort",
    )
    assert strong_cyp3a4_inhibitors(c).value == ["Clarithromycin 500 mg bd"]
    assert strong_cyp3a4_inducers(c).value == ["Rifampicin 600 mg", "St John\u2019s wort"]
    assert qt_prolonging_drugs(c).value == ["Clarithromycin 500 mg bd", "ESCITALOPRAM 10 mg"]
    assert anticoagulants(c).value == ["Eliquis 5 mg bd"]
    assert antiplatelets(c).value == ["ASA 100 mg"]
    assert cyp2d6_inhibitors(c).value == ["paroxetine 20 mg"]
    assert "strong" in cyp2d6_inhibitors(c).detail


def test_medication_classes_empty_and_missing() -> None:
    assert anticoagulants(meds("metformin", "ramipril")).value == []
    assert anticoagulants(meds()).value == []
    result = anticoagulants(case(patient={}))
    assert result.value is None
    assert result.inputs_missing == ["patient.medications"]


def test_medication_names_match_at_word_start_only() -> None:
    # "asa" must not match inside another word; enoxaparin is not mistaken for heparin
    assert antiplatelets(meds("mesalazine (Asacol)")).value == []
    assert anticoagulants(meds("enoxaparin 40 mg")).value == ["enoxaparin 40 mg"]
    assert anticoagulants(meds("unfractionated heparin")).value == ["unfractionated heparin"]


# --- prior therapies -----------------------------------------------------------------------------


def prior(*therapies: dict[str, Any]) -> dict[str, Any]:
    return case("lymphoma", diagnosis={"prior_therapies": list(therapies)})


def test_prior_therapy_facts() -> None:
    c = prior(
        {"line": 1, "regimen": "R-CHOP x6", "best_response": "CR", "months_to_relapse": 30},
        {"line": 2, "regimen": "R-GDP", "best_response": "PR", "months_to_relapse": 7},
    )
    assert prior_regimens(c).value == ["r-chop x6", "r-gdp"]
    assert months_to_relapse(c).value == 7  # the most recent line (2)
    assert early_relapse(c).value is True  # 7 < 12


@pytest.mark.parametrize(
    ("regimens", "line"),
    [
        ([], 1),
        (["R-CHOP x6"], 2),
        (["R-CHOP x6 + ISRT 30 Gy", "R-ICE then BEAM-ASCT"], 3),
        # local therapies alone start no line: first-line systemic therapy after them
        (["right hepatectomy", "radiofrequency ablation", "conventional TACE x2"], 1),
        (["liver transplantation"], 1),
        (["lobectomy", "adjuvant cisplatin-vinorelbine x4"], 2),
        (["lumpectomy and whole-breast radiotherapy 40 Gy", "letrozole 5 years"], 2),
        (["atezolizumab + bevacizumab x12", "SBRT to a bone metastasis"], 2),
        # what cannot be read counts as a line (the cautious reading)
        (["trial drug XY-123"], 2),
    ],
)
def test_treatment_line_counts_systemic_therapies_only(regimens: list[str], line: int) -> None:
    c = prior(*({"regimen": r} for r in regimens))
    assert treatment_line(c).value == line


def test_treatment_line_unknown_without_prior_therapies() -> None:
    assert treatment_line(case("hcc")).value is None
    assert "diagnosis.prior_therapies" in treatment_line(case("hcc")).inputs_missing


def test_early_relapse_rules() -> None:
    late = prior({"line": 1, "regimen": "R-CHOP", "best_response": "CR", "months_to_relapse": 12})
    assert early_relapse(late).value is False  # 12 is not < 12
    refractory = prior({"line": 1, "regimen": "R-CHOP", "best_response": "PD"})
    assert early_relapse(refractory).value is True  # primary refractory, months not needed
    stable = prior({"line": 1, "regimen": "R-CHOP", "best_response": "SD", "months_to_relapse": 20})
    assert early_relapse(stable).value is True
    unknown = prior({"line": 1, "regimen": "R-CHOP", "best_response": "CR"})
    assert early_relapse(unknown).value is None
    assert months_to_relapse(unknown).value is None


def test_prior_therapy_none_and_empty() -> None:
    empty = prior()
    assert prior_regimens(empty).value == []
    assert months_to_relapse(empty).value is None
    assert early_relapse(empty).value is None
    not_recorded = case("lymphoma", diagnosis={})
    assert prior_regimens(not_recorded).value is None


# --- frailty -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patient", "expected"),
    [
        ({"frailty": "frail", "g8_score": 16}, "frail"),  # the clinician's judgement wins
        ({"g8_score": 14}, "vulnerable"),  # G8 <= 14
        ({"g8_score": 15}, "fit"),  # G8 > 14
        ({}, None),
    ],
)
def test_frailty(patient: dict[str, Any], expected: str | None) -> None:
    assert frailty(case(patient=patient)).value == expected


# --- liver decompensation and BCLC ----------------------------------------------------------------


def liver(
    ascites: str | None = "none",
    he: str | None = "none",
    bili: float | None = 0.9,
    alb: float = 4.1,
    inr: float = 1.1,
    ecog: int = 0,
) -> dict[str, Any]:
    return case(
        "hcc",
        patient={"ecog": ecog},
        labs={"bilirubin_mg_dl": bili, "albumin_g_dl": alb, "inr": inr},
        organ_function={"ascites": ascites, "encephalopathy": he},
        staging={
            "nodules_count": 1,
            "largest_nodule_mm": 28,
            "macrovascular_invasion": False,
            "extrahepatic_spread": False,
        },
    )


def test_liver_decompensated() -> None:
    assert liver_decompensated(liver()).value is False  # CP A 5, no ascites/HE
    assert liver_decompensated(liver(ascites="mild")).value is True
    assert liver_decompensated(liver(he="grade_1_2", bili=None)).value is True  # labs not needed
    # CP C without ascites/HE: bilirubin 3.5 (3) + albumin 2.5 (3) + INR 2.5 (3) + 1 + 1 = 11
    assert liver_decompensated(liver(bili=3.5, alb=2.5, inr=2.5)).value is True
    result = liver_decompensated(liver(bili=None))
    assert result.value is None
    assert result.inputs_missing == ["labs.bilirubin_mg_dl"]


def test_bclc_child_pugh_b7_compensated_is_staged_by_tumour() -> None:
    # bilirubin 2.5 (2) + albumin 3.2 (2) + INR 1 + ascites 1 + HE 1 = B7; single 28 mm, ECOG 0
    assert bclc_stage(liver(bili=2.5, alb=3.2)).value == "A"


def test_bclc_child_pugh_b8_compensated_is_staged_but_flagged() -> None:
    # bilirubin 2.5 (2) + albumin 3.0 (2) + INR 2.0 (2) + ascites 1 + HE 1 = B8
    result = bclc_stage(liver(bili=2.5, alb=3.0, inr=2.0))
    assert result.value == "A"
    assert "hepatology review" in result.detail


def test_bclc_encephalopathy_is_d_even_without_labs_or_ecog() -> None:
    c = liver(he="grade_1_2", bili=None)
    c["patient"]["ecog"] = None
    result = bclc_stage(c)
    assert result.value == "D"
    assert result.inputs_missing == []


def test_case_facts_expose_every_new_fact() -> None:
    facts = case_facts(liver())
    for name in (
        "within_milan",
        "within_up_to_7",
        "within_ucsf",
        "liver_decompensated",
        "frailty",
        "declines",
        "wants",
        "strong_cyp3a4_inhibitors",
        "strong_cyp3a4_inducers",
        "qt_prolonging_drugs",
        "anticoagulants",
        "antiplatelets",
        "cyp2d6_inhibitors",
        "carboplatin_auc5_mg",
        "carboplatin_auc6_mg",
        "months_to_relapse",
        "prior_regimens",
        "early_relapse",
    ):
        assert f"derived.{name}" in facts, name
    assert facts["derived.within_milan"] is True
    assert facts["derived.liver_decompensated"] is False
