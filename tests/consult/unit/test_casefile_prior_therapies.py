"""The prior-therapy fields of FORMAT.md §4 (2026-11-27): kind, intent, start date, why it ended
and the worst toxicity; line 0 for a course that is not a numbered line."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

from clinical.calculators.history import intolerant_of, progressed_on
from consult.casefile.fields import PRIOR_THERAPY_KINDS, UNNUMBERED_KINDS
from consult.casefile.validate import (
    canonical_json,
    case_to_canonical,
    case_warnings,
    parse_case_bytes,
    validate_case,
)
from consult.forms import prior_rows_for_display, section_values
from consult.presenters import case_sections
from tests.paths import PUBLIC_CASES

TODAY = date(2026, 6, 1)
REGRESSIONS = Path(__file__).resolve().parent.parent / "fixtures" / "regressions"


def breast_after_surgery_and_two_lines() -> dict[str, Any]:
    """Breast cancer: operation, adjuvant radiotherapy, then two palliative lines."""
    data: dict[str, Any] = json.loads((PUBLIC_CASES / "pub-breast-01.json").read_text())
    data.pop("expected", None)
    data["diagnosis"]["setting"] = "progressive"
    data["diagnosis"]["prior_therapies"] = [
        {
            "line": 0,
            "kind": "operation",
            "intent": "curative",
            "regimen": "left mastectomy and sentinel node biopsy",
            "start_date": "2021-03-02",
            "end_date": "2021-03-02",
        },
        {
            "line": None,
            "kind": "radiotherapy",
            "intent": "adjuvant",
            "regimen": "chest wall radiotherapy 40 Gy in 15 fractions",
            "start_date": "2021-04-12",
            "end_date": "2021-05-01",
            "stop_reason": "completed",
            "toxicity": {"organ": "skin", "grade": 2},
        },
        {
            "line": 1,
            "kind": "systemic",
            "intent": "palliative",
            "regimen": "letrozole and palbociclib",
            "start_date": "2023-01-10",
            "end_date": "2025-02-20",
            "best_response": "PR",
            "stop_reason": "progression",
        },
        {
            "line": 2,
            "kind": "systemic",
            "intent": "palliative",
            "regimen": "capecitabine",
            "start_date": "2025-03-01",
            "end_date": "2025-06-15",
            "stop_reason": "toxicity",
            "toxicity": {"organ": "skin", "grade": 3},
        },
    ]
    return data


def _errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_case(data, filename="x", today=TODAY)]


def _warnings(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(w.path, w.message) for w in case_warnings(data, filename="x", today=TODAY)]


def test_a_file_with_line_zero_imports_again() -> None:
    # given the file that was refused with "0 is outside 1-30" (FORMAT.md: what imported keeps
    # importing, and line 0 is allowed for a course that is not a numbered line)
    raw = (REGRESSIONS / "prior-therapy-line-zero.json").read_bytes()
    # when it is read
    parsed = parse_case_bytes(raw, filename="prior-therapy-line-zero.json", today=TODAY)
    # then it is valid and keeps its line 0; the missing kind reads as not available
    assert parsed.errors == ()
    [entry] = parsed.canonical()["diagnosis"]["prior_therapies"]
    assert entry["line"] == 0
    assert entry["kind"] is None
    assert entry["regimen"] == "R-CHOP x6"


def test_the_full_history_is_valid_and_survives_export_and_import() -> None:
    data = breast_after_surgery_and_two_lines()
    assert _errors(data) == []
    assert _warnings(data) == []
    exported = canonical_json(data).encode("utf-8")
    again = parse_case_bytes(exported, filename="x.json", today=TODAY)
    assert again.errors == ()
    entries = again.canonical()["diagnosis"]["prior_therapies"]
    assert [e["kind"] for e in entries] == ["operation", "radiotherapy", "systemic", "systemic"]
    assert [e["intent"] for e in entries] == ["curative", "adjuvant", "palliative", "palliative"]
    assert entries[1]["start_date"] == "2021-04-12"
    assert entries[1]["toxicity"] == {"organ": "skin", "grade": 2}
    assert entries[3]["stop_reason"] == "toxicity"
    assert canonical_json(again.canonical()).encode("utf-8") == exported


def test_several_unnumbered_courses_may_all_have_line_zero() -> None:
    data = breast_after_surgery_and_two_lines()
    data["diagnosis"]["prior_therapies"][1]["line"] = 0
    assert _errors(data) == []


def test_numbered_lines_are_still_unique() -> None:
    data = breast_after_surgery_and_two_lines()
    data["diagnosis"]["prior_therapies"][3]["line"] = 1
    assert _errors(data) == [
        (
            "$.diagnosis.prior_therapies[3].line",
            "Line of therapy 1 appears more than once in prior therapies (also entry 3); each "
            "line needs its own number.",
        )
    ]


def test_a_numbered_line_on_an_operation_is_read_but_flagged() -> None:
    data = breast_after_surgery_and_two_lines()
    data["diagnosis"]["prior_therapies"][0]["line"] = 3
    data["diagnosis"]["prior_therapies"][1]["line"] = 4
    assert _errors(data) == []
    warnings = _warnings(data)
    assert [path for path, _ in warnings] == [
        "$.diagnosis.prior_therapies[0].line",
        "$.diagnosis.prior_therapies[1].line",
    ]
    assert "Line of therapy 3 is given to an operation" in warnings[0][1]
    assert "a radiotherapy course" in warnings[1][1]


def test_a_curative_systemic_course_with_a_line_number_is_flagged() -> None:
    data = breast_after_surgery_and_two_lines()
    data["diagnosis"]["prior_therapies"][2].update(intent="adjuvant", line=1)
    [(path, message)] = _warnings(data)
    assert path == "$.diagnosis.prior_therapies[2].line"
    assert "a course of adjuvant intent" in message


def test_old_files_without_kind_read_as_before() -> None:
    for path in sorted(PUBLIC_CASES.glob("*.json")):
        parsed = parse_case_bytes(path.read_bytes(), filename=path.name, today=TODAY)
        assert parsed.errors == (), path.name
        for entry in parsed.canonical()["diagnosis"]["prior_therapies"] or []:
            assert entry["kind"] is None
            assert entry["toxicity"] is None


def test_a_toxicity_with_only_the_grade_is_kept() -> None:
    data = breast_after_surgery_and_two_lines()
    data["diagnosis"]["prior_therapies"][3]["toxicity"] = {"grade": 4}
    assert _errors(data) == []
    canonical = case_to_canonical(data)
    assert canonical["diagnosis"]["prior_therapies"][3]["toxicity"] == {
        "organ": None,
        "grade": 4,
    }


def test_every_kind_reads_and_only_the_unnumbered_ones_are_flagged_with_a_line() -> None:
    for kind, _ in PRIOR_THERAPY_KINDS:
        data = breast_after_surgery_and_two_lines()
        data["diagnosis"]["prior_therapies"][3].update(kind=kind, intent=None)
        assert _errors(data) == [], kind
        flagged = [path for path, _ in _warnings(data)]
        expected = ["$.diagnosis.prior_therapies[3].line"] if kind in UNNUMBERED_KINDS else []
        assert flagged == expected, kind


def test_a_stop_for_toxicity_is_read_as_intolerance_and_progression_as_before() -> None:
    data = breast_after_surgery_and_two_lines()
    assert intolerant_of(data).value == ["capecitabine"]
    assert progressed_on(data).value == ["letrozole and palbociclib"]
    # a stop at the patient's wish is a known reason: not read as progression on it
    data["diagnosis"]["prior_therapies"][3]["stop_reason"] = "patient_choice"
    assert intolerant_of(data).value == []
    assert progressed_on(data).value == ["letrozole and palbociclib"]


def test_the_dossier_form_reads_and_writes_every_new_key() -> None:
    data = case_to_canonical(breast_after_surgery_and_two_lines())
    rows = prior_rows_for_display(data)
    assert rows[1]["kind"] == "radiotherapy"
    assert rows[1]["toxicity_organ"] == "skin"
    assert rows[1]["toxicity_grade"] == "2"
    assert rows[0]["line"] == "0"
    assert rows[-1] == {key: "" for key in rows[0]}  # the empty rows to add more
    # given the form posted back unchanged, with one new row of an operation
    post = {f"prior-{i}-{k}": v for i, row in enumerate(rows) for k, v in row.items()}
    post |= {
        "prior-count": str(len(rows)),
        "prior-4-kind": "operation",
        "prior-4-regimen": "excision of a chest wall recurrence",
        "prior-4-start_date": "2025-09-01",
        "prior-4-toxicity_grade": "6",
    }
    # when the section is applied
    updated = section_values(copy.deepcopy(data), "diagnosis", "breast", post)
    # then the stored entries are unchanged and the new one carries its values
    entries = updated["diagnosis"]["prior_therapies"]
    assert entries[:4] == data["diagnosis"]["prior_therapies"]
    assert entries[4]["kind"] == "operation"
    assert entries[4]["toxicity"] == {"organ": None, "grade": 6}
    # and the impossible grade is refused with a clear message at its path
    assert _errors(updated) == [
        (
            "$.diagnosis.prior_therapies[4].toxicity.grade",
            "CTCAE toxicity grade 6 is outside the plausible range 1\u20135.",
        )
    ]


def test_the_dossier_page_shows_the_new_keys_in_words() -> None:
    data = case_to_canonical(breast_after_surgery_and_two_lines())
    [diagnosis] = [s for s in case_sections(data) if s.key == "diagnosis"]
    assert diagnosis.prior_therapies is not None
    radiotherapy = {row.label: row.text for row in diagnosis.prior_therapies[1]}
    assert radiotherapy["Kind of treatment"] == "radiotherapy"
    assert radiotherapy["Intent"] == "adjuvant (after surgery or radiotherapy)"
    assert radiotherapy["Start date (yyyy-mm-dd)"] == "2021-04-12"
    assert radiotherapy["Worst toxicity"] == "skin, CTCAE grade 2"
    operation = {row.label: row.text for row in diagnosis.prior_therapies[0]}
    assert operation["Worst toxicity"] == "not available"
    assert operation["Line of therapy"] == "0"
