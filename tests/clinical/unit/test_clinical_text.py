"""Critical facts written only in free text fill the empty structured fields the safety rules
read, with negation and history respected; a structured field always wins."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.applicability import case_facts
from clinical.text.clinicaltext import complete_from_text


def _filled(case: dict[str, Any]) -> dict[str, Any]:
    _completed, filled, _conflicts = complete_from_text(case)
    return {f["fact"]: f["value"] for f in filled}


@pytest.mark.parametrize(
    ("comorbidity", "expected"),
    [
        ("renal transplant 2015", "kidney"),
        ("s/p liver transplant", "liver"),
        ("OLT", "liver"),
        ("allogeneic stem-cell transplant 2019, no GVHD", "allogeneic_hsct"),
        ("kidney transplant recipient", "kidney"),
        ("heart transplant 2010", "other"),
    ],
)
def test_a_transplant_in_the_comorbidities_is_a_transplant_history(
    comorbidity: str, expected: str
) -> None:
    assert _filled({"patient": {"comorbidities": [comorbidity]}})[
        "diagnosis.transplant_history"
    ] == (expected)


@pytest.mark.parametrize(
    "notes",
    [
        "Within Milan criteria; referred for liver transplant assessment.",
        "Not a transplant candidate.",
        "Autologous stem-cell transplant planned after salvage.",
        "BEAM and autologous SCT in 2021.",
    ],
)
def test_a_transplant_that_is_an_option_is_not_a_history(notes: str) -> None:
    assert _filled({"notes": notes}).get("diagnosis.transplant_history") in (None, "none")


def test_no_history_of_autoimmune_disease_or_transplant_is_read_as_none_of_either() -> None:
    filled = _filled({"notes": "No history of autoimmune disease or transplant."})
    assert filled["diagnosis.transplant_history"] == "none"
    assert filled["organ_function.autoimmune_activity"] == "none"


@pytest.mark.parametrize(
    ("comorbidity", "medications", "activity"),
    [
        ("ulcerative colitis flare", ["prednisolone 40 mg daily"], "active"),
        ("myasthenia gravis", ["pyridostigmine 60 mg tds", "azathioprine 100 mg daily"], "active"),
        ("systemic lupus erythematosus, active nephritis", [], "active"),
        ("stable Hashimoto's thyroiditis on levothyroxine", ["levothyroxine 100 mcg"], "inactive"),
        ("Crohn's disease in remission, no treatment", [], "inactive"),
        ("rheumatoid arthritis, not active", [], "inactive"),
    ],
)
def test_autoimmune_activity_is_read_from_the_words_and_the_medications(
    comorbidity: str, medications: list[str], activity: str
) -> None:
    case = {"patient": {"comorbidities": [comorbidity], "medications": medications}}
    assert _filled(case)["organ_function.autoimmune_activity"] == activity


def test_an_autoimmune_disease_without_activity_or_treatment_leaves_activity_unknown() -> None:
    filled = _filled({"patient": {"comorbidities": ["psoriasis"], "medications": []}})
    assert filled["organ_function.autoimmune_disease"] == "psoriasis"
    assert "organ_function.autoimmune_activity" not in filled


def test_milliseconds_are_not_multiple_sclerosis() -> None:
    assert "organ_function.autoimmune_disease" not in _filled({"notes": "QTc 480 ms."})


@pytest.mark.parametrize(
    ("medications", "expected"),
    [
        (["tacrolimus 2 mg bd"], "other_immunosuppressant"),
        (["mycophenolate mofetil 1 g bd"], "other_immunosuppressant"),
        (["adalimumab 40 mg every 2 weeks"], "other_immunosuppressant"),
        (["prednisolone 20 mg daily"], "high_dose_steroids"),
        (["dexamethasone 2 mg bd"], "high_dose_steroids"),
        (["prednisolone 5 mg daily"], "low_dose_steroids"),
        (["beclometasone inhaler", "prednisolone 40 mg - stopped 2024"], "none"),
        (["everolimus 10 mg daily"], "none"),
        (["metformin 500 mg bd"], "none"),
    ],
)
def test_immunosuppression_is_read_from_the_medication_list(
    medications: list[str], expected: str
) -> None:
    case = {"patient": {"medications": medications}}
    assert _filled(case)["organ_function.immunosuppression"] == expected


def test_a_steroid_of_unstated_dose_leaves_immunosuppression_unknown() -> None:
    assert "organ_function.immunosuppression" not in _filled(
        {"patient": {"medications": ["prednisolone"]}}
    )


@pytest.mark.parametrize(
    ("notes", "weeks"),
    [
        ("G2P1 at 22/40.", 22),
        ("Pregnant, 22 weeks.", 22),
        ("Gestational age 18 weeks.", 18),
        ("She is 12 weeks pregnant.", 12),
        ("Currently pregnant (second trimester).", None),
    ],
)
def test_a_pregnancy_in_the_notes_is_a_pregnancy(notes: str, weeks: int | None) -> None:
    filled = _filled({"notes": notes})
    assert filled["patient.pregnant"] is True
    assert filled.get("patient.gestational_age_weeks") == weeks


@pytest.mark.parametrize(
    ("notes", "pregnant"),
    [
        ("Wishes to become pregnant in the future.", None),
        ("Does not want more children.", None),
        ("Not pregnant; pregnancy test negative.", False),
        ("Negative serum beta-hCG.", False),
        ("Was pregnant in 2019, delivered at term.", False),
    ],
)
def test_a_wish_or_a_past_pregnancy_is_not_a_pregnancy(notes: str, pregnant: bool | None) -> None:
    assert _filled({"notes": notes}).get("patient.pregnant") is pregnant


@pytest.mark.parametrize(
    ("notes", "lvef"),
    [
        ("LVEF 35 % on echo.", 35),
        ("EF 35%.", 35),
        ("Echo: ejection fraction of 35 percent.", 35),
        ("LVEF 45-50%.", 45),
        ("LVEF 62% in 2020, now 38% after myocardial infarction.", 38),
    ],
)
def test_an_ejection_fraction_in_the_notes_is_the_lvef(notes: str, lvef: int) -> None:
    assert _filled({"notes": notes})["organ_function.lvef_pct"] == lvef


def test_qtc_and_heart_rate_are_read_with_their_units() -> None:
    filled = _filled({"notes": "ECG: sinus bradycardia 46 bpm, QTc 482 ms."})
    assert filled["organ_function.qtc_ms"] == 482
    assert filled["organ_function.heart_rate_bpm"] == 46


def test_the_structured_field_wins_and_the_disagreement_is_reported() -> None:
    case = {"organ_function": {"lvef_pct": 60}, "notes": "EF 35% on last echo."}
    completed, filled, conflicts = complete_from_text(case)
    assert completed["organ_function"]["lvef_pct"] == 60
    assert filled == []
    assert conflicts[0]["fact"] == "organ_function.lvef_pct"
    assert conflicts[0]["structured"] == 60
    assert "EF 35%" in conflicts[0]["phrase"]


def test_the_rules_see_the_text_facts_with_their_words() -> None:
    case = {
        "cancer_type": "lung_adenocarcinoma",
        "patient": {"comorbidities": ["renal transplant 2015"], "medications": []},
        "diagnosis": {"transplant_history": None},
    }
    facts = case_facts(case)
    assert facts["diagnosis.transplant_history"] == "kidney"
    assert facts["derived.from_text"][0]["phrase"] == "renal transplant 2015"


def test_autoimmune_disease_recorded_as_none_answers_its_activity() -> None:
    facts = case_facts({"organ_function": {"autoimmune_disease": "none"}})
    assert facts["organ_function.autoimmune_activity"] == "none"


def test_heart_failure_without_an_lvef_makes_a_low_lvef_likely() -> None:
    facts = case_facts({"patient": {"comorbidities": ["HFrEF, NYHA II"]}})
    assert "HFrEF" in facts["derived.likely_missing"]["organ_function.lvef_pct"]
    measured = case_facts({"patient": {"comorbidities": ["HFrEF"]}, "notes": "LVEF 55%"})
    assert "organ_function.lvef_pct" not in measured["derived.likely_missing"]


@pytest.mark.parametrize(
    "notes",
    [
        "Mother has systemic lupus erythematosus.",
        "Family history of myasthenia gravis.",
        "Her sister is pregnant.",
        "His brother had a kidney transplant in 2015.",
    ],
)
def test_a_relatives_history_is_not_the_patients(notes: str) -> None:
    filled = _filled({"notes": notes, "patient": {"comorbidities": [notes]}})
    assert filled.get("diagnosis.transplant_history") in (None, "none")
    assert "organ_function.autoimmune_activity" not in filled
    assert filled.get("patient.pregnant") is not True
