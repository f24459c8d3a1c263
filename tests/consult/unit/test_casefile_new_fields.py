"""The additive case fields (2026-11-23): lactation, frailty, G8, HIV, autoimmune activity,
immunosuppression, QTc and heart rate, as a clinician records them."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from consult.casefile.validate import (
    canonical_json,
    case_to_canonical,
    case_warnings,
    parse_case_bytes,
    validate_case,
)
from tests.paths import PUBLIC_CASES

TODAY = date(2026, 6, 1)


def lung_on_osimertinib_candidate() -> dict[str, Any]:
    """EGFR-mutant lung adenocarcinoma, 74, on citalopram, treated hypothyroidism."""
    data: dict[str, Any] = json.loads((PUBLIC_CASES / "pub-lung-03.json").read_text())
    data.pop("expected", None)
    data["patient"].update(
        age_years=74, sex="female", breastfeeding=False, frailty="vulnerable", g8_score=13
    )
    data["labs"]["hiv"] = "negative"
    data["organ_function"].update(
        autoimmune_disease="Hashimoto thyroiditis on levothyroxine",
        autoimmune_activity="inactive",
        immunosuppression="none",
        qtc_ms=468,
        heart_rate_bpm=64,
    )
    return data


def _errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_case(data, filename="x", today=TODAY)]


def _warnings(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(w.path, w.message) for w in case_warnings(data, filename="x", today=TODAY)]


def test_new_fields_are_valid_and_survive_export_and_import() -> None:
    data = lung_on_osimertinib_candidate()
    assert _errors(data) == []
    assert _warnings(data) == []
    exported = canonical_json(data).encode("utf-8")
    again = parse_case_bytes(exported, filename="x.json", today=TODAY)
    assert again.errors == ()
    canonical = again.canonical()
    assert canonical["patient"]["breastfeeding"] is False  # "no", not "not available"
    assert canonical["patient"]["frailty"] == "vulnerable"
    assert canonical["patient"]["g8_score"] == 13
    assert canonical["labs"]["hiv"] == "negative"
    assert canonical["organ_function"]["autoimmune_activity"] == "inactive"
    assert canonical["organ_function"]["qtc_ms"] == 468
    assert canonical["organ_function"]["heart_rate_bpm"] == 64
    # catalog order: the new keys sit beside their neighbours, not at the end
    keys = list(canonical["patient"])
    start = keys.index("pregnant")
    assert keys[start : start + 5] == [
        "pregnant",
        "gestational_age_weeks",
        "breastfeeding",
        "frailty",
        "g8_score",
    ]
    assert list(canonical["organ_function"])[-4:] == [
        "autoimmune_activity",
        "immunosuppression",
        "qtc_ms",
        "heart_rate_bpm",
    ]


def test_a_file_without_the_new_fields_reads_them_as_not_available() -> None:
    data = json.loads((PUBLIC_CASES / "pub-breast-01.json").read_text())
    canonical = case_to_canonical(data)
    assert canonical["patient"]["breastfeeding"] is None
    assert canonical["organ_function"]["qtc_ms"] is None


@pytest.mark.parametrize(
    ("path", "value", "phrase"),
    [
        ("organ_function.qtc_ms", 900, "QTc 900 ms is outside the plausible range 250\u2013800"),
        ("organ_function.qtc_ms", 0, "QTc 0 ms is outside the plausible range"),
        ("organ_function.qtc_ms", 452.5, "QTc (ms) must be a whole number; found 452.5"),
        ("organ_function.qtc_ms", "abc", "QTc (ms) must be a whole number (or null"),
        ("organ_function.qtc_ms", "480", "Write numbers without quotes"),
        ("organ_function.heart_rate_bpm", 300, "Heart rate 300 beats/min is outside"),
        ("patient.g8_score", 20, "G8 geriatric screening score 20 is outside the plausible"),
        ("patient.g8_score", -1, "score -1 is outside the plausible range 0\u201317"),
        ("patient.breastfeeding", "yes", "Write true or false without quotes"),
        ("patient.frailty", "pre-frail", "use one of: fit, vulnerable, frail"),
        ("labs.hiv", "pos", "use one of: positive, negative"),
        ("organ_function.autoimmune_activity", "flare", "use one of: none, inactive, active"),
    ],
)
def test_bad_values_of_new_fields_are_errors_naming_the_field(
    path: str, value: object, phrase: str
) -> None:
    data = lung_on_osimertinib_candidate()
    section, key = path.split(".")
    data[section][key] = value
    [(where, message)] = _errors(data)
    assert where == f"$.{path}"
    assert phrase in message


@pytest.mark.parametrize(
    ("path", "value", "phrase"),
    [
        ("organ_function.qtc_ms", 580, "QTc 580 ms is unusual (typical range 340\u2013550 ms)"),
        ("organ_function.qtc_ms", 300, "QTc 300 ms is unusual"),
        ("organ_function.heart_rate_bpm", 38, "Heart rate 38 beats/min is unusual"),
        ("organ_function.heart_rate_bpm", 142, "Heart rate 142 beats/min is unusual"),
    ],
)
def test_unusual_but_possible_cardiac_values_are_warnings(
    path: str, value: int, phrase: str
) -> None:
    data = lung_on_osimertinib_candidate()
    section, key = path.split(".")
    data[section][key] = value
    assert _errors(data) == []
    [(where, message)] = _warnings(data)
    assert where == f"$.{path}"
    assert phrase in message


# --------------------------------------------------------------------------- cross-field


def test_breastfeeding_male_is_an_error_like_pregnant_male() -> None:
    data = lung_on_osimertinib_candidate()
    data["patient"].update(sex="male", breastfeeding=True)
    assert _errors(data) == [
        (
            "$.patient.breastfeeding",
            "Breastfeeding is true but sex is male; correct one of them (use null if not known).",
        )
    ]
    data["patient"].update(pregnant=True)
    assert [p for p, _ in _errors(data)] == ["$.patient.pregnant", "$.patient.breastfeeding"]


@pytest.mark.parametrize(("sex", "value"), [("male", False), ("male", None), ("other", True)])
def test_breastfeeding_is_not_contradicted_otherwise(sex: str, value: bool | None) -> None:
    data = lung_on_osimertinib_candidate()
    data["patient"].update(sex=sex, breastfeeding=value)
    assert _errors(data) == []


def test_breastfeeding_woman_is_valid() -> None:
    data = json.loads((PUBLIC_CASES / "pub-breast-01.json").read_text())
    data["patient"].update(breastfeeding=True, pregnant=False)
    assert _errors(data) == []


@pytest.mark.parametrize(
    "text",
    ["psoriasis", "rheumatoid arthritis on methotrexate", "SLE, last flare 2019", "Crohn's"],
)
def test_activity_none_with_a_described_disease_is_a_warning(text: str) -> None:
    data = lung_on_osimertinib_candidate()
    data["organ_function"].update(autoimmune_disease=text, autoimmune_activity="none")
    assert _errors(data) == []
    [(path, message)] = _warnings(data)
    assert path == "$.organ_function.autoimmune_activity"
    assert 'Autoimmune disease activity is "none"' in message
    assert text in message


@pytest.mark.parametrize(
    "text", ["none", "None.", "no", "nil", "none known", "No autoimmune disease"]
)
@pytest.mark.parametrize("activity", ["inactive", "active"])
def test_activity_given_while_the_disease_is_none_is_a_warning(text: str, activity: str) -> None:
    data = lung_on_osimertinib_candidate()
    data["organ_function"].update(autoimmune_disease=text, autoimmune_activity=activity)
    assert _errors(data) == []
    [(path, message)] = _warnings(data)
    assert path == "$.organ_function.autoimmune_disease"
    assert f'its activity is "{activity}"' in message


@pytest.mark.parametrize(
    ("text", "activity"),
    [
        ("none", "none"),
        ("no known", "none"),
        ("psoriasis", "inactive"),
        ("ulcerative colitis, flare on mesalazine", "active"),
        ("unknown", "none"),
        ("unknown", "active"),
        ("", "active"),
        (None, "active"),
        ("myasthenia gravis", None),
    ],
)
def test_consistent_or_unknown_autoimmune_answers_raise_nothing(
    text: str | None, activity: str | None
) -> None:
    data = lung_on_osimertinib_candidate()
    data["organ_function"].update(autoimmune_disease=text, autoimmune_activity=activity)
    assert _errors(data) == []
    assert _warnings(data) == []


@pytest.mark.parametrize(
    "drug", ["high_dose_steroids", "low_dose_steroids", "other_immunosuppressant"]
)
def test_immunosuppression_without_autoimmune_disease_is_fine(drug: str) -> None:
    # steroids for brain oedema, COPD or after a transplant: no autoimmune disease needed
    data = lung_on_osimertinib_candidate()
    data["organ_function"].update(
        autoimmune_disease="none", autoimmune_activity="none", immunosuppression=drug
    )
    assert _errors(data) == []
    assert _warnings(data) == []


def test_frail_with_a_normal_g8_is_a_warning_and_the_reverse_is_not() -> None:
    data = lung_on_osimertinib_candidate()
    data["patient"].update(frailty="frail", g8_score=16)
    assert _errors(data) == []
    [(path, message)] = _warnings(data)
    assert path == "$.patient.frailty"
    assert "G8 score is 16" in message
    # an abnormal G8 screen with a fit geriatric assessment is common and fine
    data["patient"].update(frailty="fit", g8_score=11)
    assert _warnings(data) == []


# --------------------------------------------------------------------------- gestational age


def pregnant_breast_patient(weeks: int | None) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLIC_CASES / "pub-breast-03.json").read_text())
    data.pop("expected", None)
    data["patient"].update(pregnant=True, gestational_age_weeks=weeks, height_cm=164)
    return data


def test_gestational_age_of_a_pregnant_patient_is_valid_and_round_trips() -> None:
    data = pregnant_breast_patient(11)
    assert _errors(data) == []
    assert _warnings(data) == []
    exported = canonical_json(data).encode("utf-8")
    canonical = parse_case_bytes(exported, filename="x.json", today=TODAY).canonical()
    assert canonical["patient"]["gestational_age_weeks"] == 11
    assert canonical["patient"]["height_cm"] == 164


@pytest.mark.parametrize(
    ("pregnant", "phrase"),
    [(False, "but Pregnant is false"), (None, "but Pregnant is not recorded")],
)
def test_gestational_age_without_a_pregnancy_is_an_error(
    pregnant: bool | None, phrase: str
) -> None:
    data = pregnant_breast_patient(20)
    data["patient"]["pregnant"] = pregnant
    [(path, message)] = _errors(data)
    assert path == "$.patient.gestational_age_weeks"
    assert "A gestational age (20 weeks) is recorded" in message
    assert phrase in message


def test_gestational_age_in_a_male_patient_is_an_error() -> None:
    data = lung_on_osimertinib_candidate()
    data["patient"].update(sex="male", gestational_age_weeks=12)
    assert (
        "$.patient.gestational_age_weeks",
        "A gestational age is recorded but sex is male; "
        "correct one of them (use null if not known).",
    ) in _errors(data)


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (43, "Gestational age 43 weeks is outside the plausible range 0\u201342"),
        (-1, "outside the plausible range"),
        (12.5, "Gestational age (weeks) must be a whole number; found 12.5"),
        ("14", "Write numbers without quotes"),
    ],
)
def test_bad_gestational_ages_are_errors(value: object, phrase: str) -> None:
    data = pregnant_breast_patient(None)
    data["patient"]["gestational_age_weeks"] = value
    [(path, message)] = _errors(data)
    assert path == "$.patient.gestational_age_weeks"
    assert phrase in message


def test_pregnant_without_a_gestational_age_is_a_warning_asking_for_it() -> None:
    data = pregnant_breast_patient(None)
    assert _errors(data) == []
    [(path, message)] = _warnings(data)
    assert path == "$.patient.gestational_age_weeks"
    assert "gestational age is not recorded" in message


@pytest.mark.parametrize(("value", "phrase"), [(120, "Height 120 cm is unusual"), (35, None)])
def test_height_out_of_the_usual_range(value: int, phrase: str | None) -> None:
    data = lung_on_osimertinib_candidate()
    data["patient"]["height_cm"] = value
    if phrase is None:
        [(path, message)] = _errors(data)
        assert "Height 35 cm is outside the plausible range" in message
    else:
        assert _errors(data) == []
        [(path, message)] = _warnings(data)
        assert phrase in message
    assert path == "$.patient.height_cm"
