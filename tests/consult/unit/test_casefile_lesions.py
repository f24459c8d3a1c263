"""lesions[] in mdtboard.case/1 (FORMAT.md §4): accepted, kept, and refused with clear errors."""

from __future__ import annotations

import copy
import json
from datetime import date
from typing import Any

import pytest

from consult.casefile.validate import case_to_canonical, validate_case
from tests.paths import PUBLIC_CASES

TODAY = date(2026, 11, 27)


def _case_with_lesions() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLIC_CASES / "pub-hcc-01.json").read_text("utf-8"))
    data.pop("expected", None)
    data["diagnosis"]["date"] = "2026-01-05"
    data["lesions"] = [
        {
            "lesion_id": "L1",
            "site": "liver segment VI",
            "kind": "primary",
            "target": True,
            "is_index": True,
            "measurements": [
                {"date": "2026-01-10", "modality": "MRI", "longest_diameter_mm": 28},
                {"date": "2026-04-10", "modality": "MRI", "longest_diameter_mm": 20},
            ],
        }
    ]
    return data


def test_case_with_lesions_is_accepted_and_kept_in_the_canonical_form() -> None:
    data = _case_with_lesions()
    assert validate_case(data, filename="c.json", today=TODAY) == []
    canonical = case_to_canonical(data)
    assert canonical["lesions"] == data["lesions"]
    assert canonical["diagnosis"]["date"] == "2026-01-05"


def test_old_file_keeps_its_canonical_form_without_lesions() -> None:
    data = _case_with_lesions()
    del data["lesions"]
    assert "lesions" not in case_to_canonical(data)


@pytest.mark.parametrize(
    ("change", "path", "phrase"),
    [
        (
            lambda d: d["lesions"][0]["measurements"][1].update(modality="PET-CT", deauville=6),
            "$.lesions[0].measurements[1].deauville",
            "Deauville score 6 is outside the five-point scale (1-5)",
        ),
        (
            lambda d: d["lesions"][0]["measurements"].append(
                {"date": "2026-06-10", "longest_diameter_cm": 1.8}
            ),
            "$.lesions[0].measurements[2]",
            "millimetres",
        ),
        (
            lambda d: d["diagnosis"].update(date="2026-02-01"),
            "$.lesions[0].measurements[0].date",
            "Lesion L1 is measured on 2026-01-10, before the diagnosis date 2026-02-01",
        ),
        (
            lambda d: d["lesions"][0]["measurements"][1].update(date="2027-04-10"),
            "$.lesions[0].measurements[1].date",
            "in the future",
        ),
    ],
)
def test_bad_lesion_input_is_refused_with_the_lesion_and_date(
    change: Any, path: str, phrase: str
) -> None:
    # given a valid case, when one measurement is wrong
    data = copy.deepcopy(_case_with_lesions())
    change(data)
    errors = validate_case(data, filename="c.json", today=TODAY)
    # then one error says which lesion and what is wrong, at its JSON path
    assert [e.path for e in errors] == [path]
    assert phrase in errors[0].message
