"""The patient's course in time (issue 23): the line counts only systemic lines for advanced
disease, time since treatments, relapse timing by the cancer's threshold, the operations done,
oligoprogression, the toxicities that bar a rechallenge and the recency of a bleeding - each
saying where it came from."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clinical.calculators import derive_all
from clinical.calculators.course import (
    days_since_bleeding,
    months_since_immunotherapy,
    months_since_last_treatment,
    months_since_platinum,
    oligoprogression,
    operations_done,
    palliative_line,
    primary_operation_done,
    rechallenge_barred,
    relapse_timing,
)
from consult.casefile.validate import parse_case_bytes
from tests.paths import REPO


def case(
    cancer: str,
    therapies: list[dict[str, Any]] | None,
    *,
    setting: str = "recurrent",
    notes: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "cancer_type": cancer,
        "diagnosis": {"setting": setting, "prior_therapies": therapies},
        "notes": notes,
    }
    document.update(extra)
    return document


def test_consolidation_after_chemoradiation_is_not_a_metastatic_line() -> None:
    # given stage III lung cancer treated with chemoradiation then durvalumab consolidation
    therapies = [
        {
            "regimen": "concurrent cisplatin-pemetrexed chemoradiation 60 Gy",
            "end_date": "2025-03-01",
        },
        {"regimen": "durvalumab consolidation x12 months", "end_date": "2026-03-01"},
    ]
    # when the line is derived
    result = palliative_line(case("lung_adenocarcinoma", therapies))
    # then the relapse is planned as a first line, and the detail says why
    assert result.value == 1
    assert "consolidation" in result.detail
    assert "not a line" in result.detail


def test_recorded_intent_and_kind_decide_the_line() -> None:
    therapies = [
        {"kind": "operation", "regimen": "right upper lobectomy", "line": 0},
        {"kind": "systemic", "intent": "adjuvant", "regimen": "cisplatin + vinorelbine x4"},
        {
            "kind": "systemic",
            "intent": "palliative",
            "line": 1,
            "regimen": "carboplatin + pemetrexed + pembrolizumab",
        },
        {
            "kind": "systemic",
            "intent": "maintenance",
            "line": 1,
            "regimen": "pembrolizumab + pemetrexed",
        },
    ]
    assert palliative_line(case("lung_adenocarcinoma", therapies)).value == 2


def test_lines_without_new_fields_still_count_as_before() -> None:
    therapies = [{"line": 1, "regimen": "R-CHOP x6"}, {"line": 2, "regimen": "Pola-BR x6"}]
    assert palliative_line(case("lymphoma", therapies)).value == 3
    assert palliative_line(case("lymphoma", [])).value == 1
    assert palliative_line(case("lymphoma", None)).value is None


def test_lymphoma_curative_immunochemotherapy_is_the_first_line_and_asct_is_not_a_line() -> None:
    therapies = [
        {"kind": "systemic", "intent": "curative", "regimen": "R-CHOP x6"},
        {"kind": "systemic", "intent": "palliative", "regimen": "R-ICE x3"},
        {"kind": "transplant", "intent": "consolidation", "regimen": "BEAM-ASCT", "line": 0},
    ]
    assert palliative_line(case("lymphoma", therapies)).value == 3


def test_early_relapse_after_adjuvant_platinum_counts_it_as_first_line() -> None:
    therapies = [
        {
            "kind": "systemic",
            "intent": "adjuvant",
            "regimen": "cisplatin + vinorelbine x4",
            "months_to_relapse": 3,
        },
    ]
    result = palliative_line(case("lung_adenocarcinoma", therapies))
    assert result.value == 2
    assert "platinum" in result.detail


def test_time_since_last_platinum_and_immunotherapy_from_dates() -> None:
    # given two lines with end dates and a measurement that dates the case
    therapies = [
        {"regimen": "carboplatin + paclitaxel", "end_date": "2025-01-15"},
        {"regimen": "pembrolizumab", "end_date": "2026-01-15"},
    ]
    lesions = [
        {"lesion_id": "L1", "measurements": [{"date": "2026-07-15", "longest_diameter_mm": 20}]}
    ]
    document = case("lung_adenocarcinoma", therapies, lesions=lesions)
    # then each is counted to the assessment date, and the detail names the course
    assert months_since_platinum(document).value == pytest.approx(18.0, abs=0.2)
    assert months_since_immunotherapy(document).value == pytest.approx(6.0, abs=0.2)
    assert months_since_last_treatment(document).value == pytest.approx(6.0, abs=0.2)
    assert "pembrolizumab" in months_since_immunotherapy(document).detail
    assert months_since_platinum(case("lung_adenocarcinoma", [])).value is None


@pytest.mark.parametrize(
    ("cancer", "therapies", "timing"),
    [
        ("lymphoma", [{"regimen": "R-CHOP x6", "months_to_relapse": 5}], "early"),
        ("lymphoma", [{"regimen": "R-CHOP x6", "months_to_relapse": 20}], "late"),
        ("lymphoma", [{"regimen": "R-CHOP x6", "best_response": "PD"}], "early"),
        ("breast", [{"regimen": "adjuvant letrozole 5 years", "months_to_relapse": 8}], "early"),
        ("breast", [{"regimen": "adjuvant anastrozole", "months_to_relapse": 30}], "late"),
        (
            "hcc",
            [{"kind": "operation", "regimen": "right hemihepatectomy", "months_to_relapse": 10}],
            "early",
        ),
        (
            "hcc",
            [
                {
                    "kind": "operation",
                    "regimen": "segment VI resection of the liver",
                    "months_to_relapse": 40,
                }
            ],
            "late",
        ),
    ],
)
def test_relapse_timing_by_the_cancers_threshold(
    cancer: str, therapies: list[dict[str, Any]], timing: str
) -> None:
    result = relapse_timing(case(cancer, therapies))
    assert result.value == timing
    assert result.source  # cites the guideline threshold


def test_relapse_timing_unknown_without_timing_and_none_at_diagnosis() -> None:
    assert relapse_timing(case("lymphoma", [{"regimen": "R-CHOP x6"}])).value is None
    assert relapse_timing(case("lymphoma", [], setting="newly_diagnosed")).value is None


@pytest.mark.parametrize(
    ("cancer", "regimen", "tag"),
    [
        ("hcc", "right posterior sectionectomy", "liver_resection"),
        ("hcc", "laparoscopic left hepatectomy", "liver_resection"),
        ("lung_adenocarcinoma", "VATS right upper lobectomy + mediastinal dissection", "lobectomy"),
        ("breast", "left mastectomy and sentinel node biopsy", "mastectomy"),
    ],
)
def test_operation_done_for_every_cancer(cancer: str, regimen: str, tag: str) -> None:
    document = case(
        cancer, [{"regimen": regimen, "end_date": "2026-10-01"}], setting="newly_diagnosed"
    )
    assert tag in operations_done(document).value
    assert primary_operation_done(document).value == tag


def test_a_planned_or_declined_operation_is_not_done_and_relapse_is_decided_again() -> None:
    planned = case(
        "lung_adenocarcinoma", [], setting="newly_diagnosed", notes="Lobectomy planned next week."
    )
    assert operations_done(planned).value == []
    declined = case("hcc", [], setting="newly_diagnosed", notes="He declines hepatectomy.")
    assert operations_done(declined).value == []
    relapse = case("hcc", [{"regimen": "right hepatectomy"}], setting="recurrent")
    assert primary_operation_done(relapse).value == "none_recorded"


def test_oligoprogression_from_notes_and_from_new_lesions() -> None:
    therapies = [{"line": 1, "regimen": "osimertinib 80 mg daily"}]
    stated = case(
        "lung_adenocarcinoma",
        therapies,
        setting="progressive",
        notes="One new adrenal metastasis; all other lesions stable on osimertinib.",
    )
    assert oligoprogression(stated).value is True
    widespread = case(
        "lung_adenocarcinoma",
        therapies,
        setting="progressive",
        notes="Multiple new liver metastases.",
    )
    assert oligoprogression(widespread).value is False
    lesions = [
        {"lesion_id": "L1", "measurements": [{"date": "2026-01-01"}, {"date": "2026-06-01"}]},
        {"lesion_id": "L2", "measurements": [{"date": "2026-06-01"}]},
    ]
    serial = case("lung_adenocarcinoma", therapies, setting="progressive", lesions=lesions)
    assert oligoprogression(serial).value is True
    assert "L2" in oligoprogression(serial).detail
    assert (
        oligoprogression(case("lung_adenocarcinoma", therapies, setting="progressive")).value
        is None
    )


def test_grade_3_immune_pneumonitis_bars_every_checkpoint_inhibitor() -> None:
    therapies = [
        {
            "regimen": "pembrolizumab",
            "stop_reason": "toxicity",
            "toxicity": {"organ": "lung", "grade": 3},
        }
    ]
    result = rechallenge_barred(case("lung_adenocarcinoma", therapies))
    assert {"pembrolizumab", "nivolumab", "atezolizumab", "durvalumab"} <= set(result.value)
    assert "lung grade 3" in result.detail


def test_endocrine_irae_and_grade_2_do_not_bar_rechallenge() -> None:
    thyroid = [{"regimen": "nivolumab", "toxicity": {"organ": "thyroid", "grade": 3}}]
    assert rechallenge_barred(case("lung_adenocarcinoma", thyroid)).value == []
    mild = [{"regimen": "pembrolizumab", "toxicity": {"organ": "skin", "grade": 2}}]
    assert rechallenge_barred(case("lung_adenocarcinoma", mild)).value == []


def test_anthracycline_cardiotoxicity_bars_anthracyclines() -> None:
    therapies = [{"regimen": "R-CHOP x6", "toxicity": {"organ": "heart", "grade": 2}}]
    assert "doxorubicin" in rechallenge_barred(case("lymphoma", therapies)).value


def test_days_since_bleeding() -> None:
    document = case(
        "hcc",
        [],
        setting="newly_diagnosed",
        organ_function={"recent_bleeding_site": "variceal", "recent_bleeding_date": "2026-09-01"},
        lesions=[{"lesion_id": "L1", "measurements": [{"date": "2026-09-29"}]}],
    )
    assert days_since_bleeding(document).value == 28


def test_derive_all_carries_the_course_facts() -> None:
    results = derive_all(case("hcc", [{"regimen": "right hepatectomy"}], setting="newly_diagnosed"))
    for name in ("relapse_timing", "operations_done", "oligoprogression", "rechallenge_barred"):
        assert name in results
        assert results[name].source


def test_early_relapse_from_the_dates_when_months_to_relapse_is_not_recorded() -> None:
    # given R-CHOP ended in January and the relapse imaged in June, months_to_relapse empty
    therapies = [{"line": 1, "regimen": "R-CHOP x6", "end_date": "2026-01-10"}]
    lesions = [{"lesion_id": "L1", "measurements": [{"date": "2026-06-10"}]}]
    results = derive_all(case("lymphoma", therapies, lesions=lesions))
    # then the relapse is early (< 12 months), read from the dates
    assert results["early_relapse"].value is True
    assert "from the dates" in results["early_relapse"].detail


def test_a_case_file_with_line_0_imports_and_starts_no_line() -> None:
    document = json.loads((REPO / "tests" / "cases" / "course-01.json").read_text())
    document["diagnosis"]["prior_therapies"] = [
        {"line": 0, "kind": "transplant", "regimen": "liver transplantation"},
        {"line": 1, "kind": "systemic", "intent": "palliative", "regimen": "osimertinib"},
    ]
    parsed = parse_case_bytes(json.dumps(document).encode(), filename="line0.json")
    assert parsed.ok, parsed.errors
    assert parsed.data is not None
    assert derive_all(parsed.data)["line"].value == 2
