"""The history facts the drug-safety rules read three-valued: a severe immune-related adverse
event on a prior checkpoint inhibitor, a significant bleed in the last six months."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.applicability import case_facts
from clinical.calculators.safety_history import bleeding_within_6_months, prior_irae_severity


def _case(**sections: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cancer_type": "lung_adenocarcinoma",
        "patient": {},
        "diagnosis": {"prior_therapies": []},
        "organ_function": {},
    }
    for key, value in sections.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return base


@pytest.mark.parametrize(
    ("organ", "grade", "expected"),
    [
        ("colon", 3, "severe"),
        ("colon", 4, "life_threatening"),
        ("heart", 3, "life_threatening"),
        ("lung", 3, "life_threatening"),
        ("thyroid", 4, "mild"),
        ("skin", 2, "mild"),
        ("none", None, "none"),
    ],
)
def test_recorded_immune_toxicity_is_graded(organ: str, grade: int | None, expected: str) -> None:
    case = _case(patient={"prior_irae_organ": organ, "prior_irae_grade": grade})
    assert prior_irae_severity(case).value == expected


def test_a_checkpoint_inhibitor_given_without_a_toxicity_record_is_unknown() -> None:
    history = [{"line": 1, "regimen": "pembrolizumab", "end_date": "2025-06-01"}]
    assert prior_irae_severity(_case(diagnosis={"prior_therapies": history})).value is None


def test_no_checkpoint_inhibitor_ever_given_is_none() -> None:
    history = [{"line": 1, "regimen": "carboplatin + pemetrexed", "end_date": "2025-06-01"}]
    assert prior_irae_severity(_case(diagnosis={"prior_therapies": history})).value == "none"


def test_an_event_without_its_grade_is_unknown_not_mild() -> None:
    assert prior_irae_severity(_case(patient={"prior_irae_organ": "colon"})).value is None


def test_toxicity_recorded_with_the_prior_regimen_counts() -> None:
    history = [
        {
            "line": 1,
            "regimen": "nivolumab + ipilimumab",
            "stop_reason": "toxicity",
            "toxicity": {"organ": "liver", "grade": 4},
        }
    ]
    assert prior_irae_severity(_case(diagnosis={"prior_therapies": history})).value == (
        "life_threatening"
    )


def test_grade_3_colitis_written_in_the_notes_reaches_the_fact() -> None:
    case = _case(
        diagnosis={
            "prior_therapies": [{"line": 1, "regimen": "ipilimumab", "end_date": "2024-05-01"}]
        },
        notes="Stopped ipilimumab in 2024 for grade 3 immune-related colitis, given steroids.",
    )
    assert case_facts(case)["derived.prior_irae_severity"] == "severe"


@pytest.mark.parametrize(
    ("site", "when", "expected"),
    [
        (None, None, None),
        ("none", None, False),
        ("variceal", "2026-09-01", True),
        ("pulmonary", "2025-01-10", False),
        ("gastrointestinal", None, True),
    ],
)
def test_bleeding_in_the_last_six_months(site: str | None, when: str | None, expected: Any) -> None:
    # the newest date of the file (the last treatment, 2026-10-20) is the day counted back from
    case = _case(organ_function={"recent_bleeding_site": site, "recent_bleeding_date": when})
    case["diagnosis"]["prior_therapies"] = [{"line": 1, "regimen": "x", "end_date": "2026-10-20"}]
    assert bleeding_within_6_months(case).value is expected
