"""The dossier fields of issue 21 item 4 (DPD, UGT1A1, prior immune-related adverse event,
endoscopy, recent bleeding): valid values import, bad ones get a clear error."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from consult.casefile.fields import FIELDS_BY_PATH
from consult.casefile.schema import build_schema
from consult.casefile.validate import validate_case

CASES = Path(__file__).resolve().parents[2] / "cases"
TODAY = date(2026, 11, 27)


def _case() -> dict[str, object]:
    case = json.loads((CASES / sorted(p.name for p in CASES.glob("*.json"))[0]).read_text())
    case.pop("expected", None)
    return case


def test_gate_fields_are_in_the_catalogue_and_the_schema() -> None:
    schema = build_schema()
    for path in (
        "biomarkers.dpd_status",
        "biomarkers.dpd_test",
        "biomarkers.ugt1a1_status",
        "patient.prior_irae_organ",
        "patient.prior_irae_grade",
        "patient.prior_irae_agent",
        "patient.prior_irae_date",
        "organ_function.endoscopy_date",
        "organ_function.endoscopy_varices_size",
        "organ_function.endoscopy_red_signs",
        "organ_function.endoscopy_varices_treated",
        "organ_function.recent_bleeding_site",
        "organ_function.recent_bleeding_date",
    ):
        assert path in FIELDS_BY_PATH
        section, key = path.split(".")
        assert key in schema["properties"][section]["properties"]


def test_gate_fields_with_good_values_import() -> None:
    case = _case()
    case["biomarkers"]["dpd_status"] = "partial_deficiency"  # type: ignore[index]
    case["biomarkers"]["dpd_test"] = "genotype"  # type: ignore[index]
    case["patient"]["prior_irae_organ"] = "colon"  # type: ignore[index]
    case["patient"]["prior_irae_grade"] = 3  # type: ignore[index]
    case["organ_function"]["endoscopy_date"] = "2026-09-01"  # type: ignore[index]
    case["organ_function"]["endoscopy_varices_size"] = "large"  # type: ignore[index]
    case["organ_function"]["recent_bleeding_site"] = "variceal"  # type: ignore[index]
    case["organ_function"]["recent_bleeding_date"] = "2026-10-30"  # type: ignore[index]
    assert validate_case(case, filename="ok.json", today=TODAY) == []


@pytest.mark.parametrize(
    ("section", "key", "value", "message"),
    [
        ("patient", "prior_irae_grade", 7, "outside the plausible range 1–5"),
        ("organ_function", "endoscopy_date", "2030-01-01", "is in the future"),
        ("organ_function", "recent_bleeding_date", "2026-02-30", "not a valid calendar date"),
        ("patient", "prior_irae_date", "30/01/2025", "not written as yyyy-mm-dd"),
        ("biomarkers", "dpd_status", "complete", "not a recognised value"),
        ("organ_function", "endoscopy_varices_size", "F3", "not a recognised value"),
    ],
)
def test_gate_fields_with_bad_values_are_refused_with_the_reason(
    section: str, key: str, value: object, message: str
) -> None:
    case = _case()
    case[section][key] = value  # type: ignore[index]
    errors = [str(e) for e in validate_case(case, filename="bad.json", today=TODAY)]
    assert any(f"$.{section}.{key}" in e and message in e for e in errors), errors
