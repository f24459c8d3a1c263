"""Tests of the mdtboard.case/1 catalog, schema, validator and canonical form."""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from benchmarks.parsers import CASEFILE_WORST
from clinical.vocab import CancerType
from consult.casefile.fields import (
    FIELDS,
    FIELDS_BY_PATH,
    FORMAT_ID,
    PRIOR_THERAPY_FIELDS,
    SECTIONS,
    TNM_CODES,
    FieldType,
    fields_for,
    get_field,
)
from consult.casefile.schema import SCHEMA_PATH, build_schema, schema_json
from consult.casefile.validate import (
    MAX_BYTES,
    MAX_ERRORS,
    CaseError,
    ParsedCase,
    canonical_json,
    case_to_canonical,
    case_warnings,
    parse_case_bytes,
    validate_case,
)
from tests.linearity import assert_linear
from tests.paths import PUBLIC_CASES, public_case_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "malformed"
PUBLIC = PUBLIC_CASES
# Fixed "today" so that the date checks do not depend on when the tests run.
TODAY = date(2026, 6, 1)
MINIMAL: dict[str, Any] = {"format": FORMAT_ID, "case_id": "t-1", "cancer_type": "hcc"}
# Additive mdtboard.case/1 fields (2026-11-23) that the public case files predate: a file
# without them is still valid, and they read as null (not available).
ADDITIVE_FIELDS: frozenset[str] = frozenset(
    {
        "patient.height_cm",
        "patient.gestational_age_weeks",
        "patient.breastfeeding",
        "patient.frailty",
        "patient.g8_score",
        "labs.hiv",
        "organ_function.autoimmune_activity",
        "organ_function.immunosuppression",
        "organ_function.qtc_ms",
        "organ_function.heart_rate_bpm",
        # 2026-11-27 (issue 21): the facts safety gates need
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
        # 2026-11-27 (issue 29): no lesion is measured before the diagnosis
        "diagnosis.date",
    }
)
# Additive keys of one prior therapy: why the line ended (2026-11-24); what kind of treatment it
# was, its intent, start and worst toxicity (2026-11-27, FORMAT.md §4).
ADDITIVE_PRIOR_KEYS: frozenset[str] = frozenset(
    {"stop_reason", "kind", "intent", "start_date", "toxicity"}
)

# (fixture file, JSON path of the error, phrase the message must contain). A file with several
# rows must produce exactly those paths; every other file exactly one error.
MALFORMED: list[tuple[str, str, str]] = [
    # bytes, encoding and JSON syntax
    ("empty.json", "$", "empty"),
    ("whitespace-only.json", "$", "empty"),
    ("not-json.json", "$", "not valid JSON: Expecting value at line 1, column 1"),
    ("truncated.json", "$", "not valid JSON"),
    ("trailing-comma.json", "$", "line 1, column 68"),
    ("single-quotes.json", "$", "double quotes at line 1, column 2"),
    ("top-level-array.json", "$", "contains a list"),
    ("top-level-string.json", "$", "single text value"),
    ("top-level-null.json", "$", "the value null"),
    ("invalid-utf8.json", "$", "byte 0xFF at byte offset 210"),
    ("latin1-encoded.json", "$", "not valid UTF-8: byte 0xFC at byte offset 103"),
    ("utf16.json", "$", "UTF-16; save it as UTF-8"),
    ("duplicate-key.json", "$.labs.inr", 'field "inr" appears more than once'),
    ("nan.json", "$.labs.inr", "INR must be a finite number; found NaN"),
    ("infinity.json", "$.biomarkers.afp_ng_ml", "AFP (ng/mL) must be a finite number; found Inf"),
    ("huge-exponent.json", "$.labs.bilirubin_mg_dl", "Bilirubin (mg/dL) must be a finite number"),
    ("huge-integer.json", "$.patient.age_years", "a number too large to store"),
    ("nested-junk.json", "$.notes", "Notes must be text"),
    ("nul-in-string.json", "$.notes", "NUL character"),
    ("lone-surrogate.json", "$.patient.pseudonym", "unpaired surrogate"),
    # format and identity
    ("missing-format.json", "$.format", '"format": "mdtboard.case/1"'),
    ("wrong-format-version.json", "$.format", 'Unsupported format "mdtboard.case/2"'),
    ("plan-instead-of-case.json", "$.format", 'reads "mdtboard.case/1" case files'),
    ("format-not-string.json", "$.format", "found the number 1"),
    ("missing-cancer-type.json", "$.cancer_type", '"cancer_type" field is missing'),
    ("null-cancer-type.json", "$.cancer_type", "cannot be null"),
    ("unknown-cancer-type.json", "$.cancer_type", 'Cancer type "liver" is not a recognised value'),
    ("missing-case-id.json", "$.case_id", '"case_id" field is missing'),
    ("case-id-number.json", "$.case_id", "Case ID must be text; found the number 42"),
    ("case-id-path-traversal.json", "$.case_id", "starting with a letter or digit"),
    ("case-id-trailing-newline.json", "$.case_id", '"pub-hcc-01\\n" is not allowed'),
    ("case-id-too-long.json", "$.case_id", "1\u201364 letters"),
    ("unknown-top-level-key.json", "$.patient_name", 'Unknown field "patient_name" at the top'),
    ("unknown-key-other-unit.json", "$.labs.bilirubin_umol_l", 'Did you mean "bilirubin_mg_dl"'),
    ("section-not-object.json", "$.labs", "Laboratory values section (labs) must be an object"),
    ("section-null.json", "$.organ_function", "must be an object { ... }; found null"),
    ("question-object.json", "$.question", "MDT question must be text"),
    # wrong types
    ("string-number.json", "$.labs.bilirubin_mg_dl", "Write numbers without quotes"),
    ("rating-junk.json", "$.labs.albumin_g_dl", "Albumin (g/dL) must be a number"),
    ("bool-as-number.json", "$.labs.platelets_10e9_l", "found true (a yes/no value)"),
    ("bool-as-ecog.json", "$.patient.ecog", "whole number (or null if not available); found false"),
    ("ecog-rating.json", "$.patient.ecog", 'found the text "2/4"'),
    ("ecog-fraction.json", "$.patient.ecog", "must be a whole number; found 1.5"),
    ("bool-as-string.json", "$.patient.pregnant", "Write true or false without quotes"),
    ("list-as-string.json", "$.patient.comorbidities", 'Write a list, e.g. ["diabetes"]'),
    ("list-items-not-text.json", "$.patient.medications[0]", "must be text; found the number 1"),
    ("list-items-not-text.json", "$.patient.medications[1]", "must be text; found null"),
    ("tnm-edition-text.json", "$.staging.tnm_edition", 'found the text "8th"'),
    ("text-too-long.json", "$.patient.pseudonym", "too long (1,000 characters)"),
    ("too-many-comorbidities.json", "$.patient.comorbidities", "has 150 entries; the limit is 100"),
    # out of range
    (
        "bilirubin-out-of-range.json",
        "$.labs.bilirubin_mg_dl",
        "Bilirubin 250 mg/dL is outside the plausible range 0\u201350 mg/dL",
    ),
    ("negative-size.json", "$.index_lesion.size_mm", "-5 mm is not possible"),
    ("zero-size.json", "$.staging.largest_nodule_mm", "greater than 0 mm"),
    ("size-absurd.json", "$.index_lesion.size_mm", "3400 mm is outside the plausible range"),
    ("qtc-absurd.json", "$.organ_function.qtc_ms", "QTc 900 ms is outside the plausible range"),
    ("g8-out-of-range.json", "$.patient.g8_score", "score 20 is outside the plausible range 0"),
    ("frailty-unknown-value.json", "$.patient.frailty", 'Did you mean "frail"?'),
    (
        "immunosuppression-free-text.json",
        "$.organ_function.immunosuppression",
        "high_dose_steroids = corticosteroids of 10 mg/day",
    ),
    ("ecog-5.json", "$.patient.ecog", "ECOG performance status 5 is outside the plausible range 0"),
    ("age-200.json", "$.patient.age_years", "Age 200 years is outside"),
    ("weight-negative.json", "$.patient.weight_kg", "Weight -70 kg is outside"),
    ("percent-over-100.json", "$.biomarkers.er_pct", "ER 150 % is outside the plausible range 0"),
    ("pdl1-negative.json", "$.biomarkers.pdl1_tps_pct", "PD-L1 TPS -10 %"),
    ("lvef-over-100.json", "$.organ_function.lvef_pct", "LVEF 120 % is outside"),
    (
        "platelets-absurd.json",
        "$.labs.platelets_10e9_l",
        "Platelets 160000 \u00d710\u2079/L is outside the plausible range 0\u20135000",
    ),
    ("hemoglobin-zero.json", "$.labs.hemoglobin_g_dl", "Haemoglobin 0 g/dL is outside"),
    ("inr-absurd.json", "$.labs.inr", "INR 45 is outside the plausible range 0.5\u201320"),
    ("albumin-in-g-l.json", "$.labs.albumin_g_dl", "Albumin 41 g/dL"),
    ("creatinine-in-umol.json", "$.labs.creatinine_mg_dl", "Creatinine 80 mg/dL"),
    ("anc-negative.json", "$.labs.anc_10e9_l", "Absolute neutrophil count -1"),
    ("afp-negative.json", "$.biomarkers.afp_ng_ml", "AFP -35 ng/mL"),
    ("ldh-uln-zero.json", "$.biomarkers.ldh_uln_u_l", "must be greater than 0 U/L"),
    ("negative-count.json", "$.staging.brain_metastases_count", "-1 is outside"),
    ("fractional-count.json", "$.staging.nodules_count", "whole number; found 2.5"),
    ("tnm-edition-7.json", "$.staging.tnm_edition", "must be 8 when given; found 7"),
    # enumerations
    ("unknown-enum-her2.json", "$.biomarkers.her2", 'HER2 "4+" is not a recognised value'),
    ("enum-wrong-case.json", "$.patient.sex", 'Did you mean "male"?'),
    ("unknown-enum-egfr.json", "$.biomarkers.egfr", "exon19del, L858R, exon20ins"),
    ("enum-number.json", "$.organ_function.ascites", "found the number 0"),
    ("unknown-enum-setting.json", "$.diagnosis.setting", '"relapsed" is not a recognised'),
    # prior therapies and dates
    (
        "future-date.json",
        "$.diagnosis.prior_therapies[0].end_date",
        "2999-01-01 is in the future (today is 2026-06-01)",
    ),
    ("bad-date.json", "$.diagnosis.prior_therapies[0].end_date", "not a valid calendar date"),
    ("date-wrong-format.json", "$.diagnosis.prior_therapies[0].end_date", "yyyy-mm-dd"),
    ("date-not-string.json", "$.diagnosis.prior_therapies[0].end_date", "number 20250402"),
    ("date-too-early.json", "$.diagnosis.prior_therapies[0].end_date", "implausibly early"),
    ("prior-therapy-not-object.json", "$.diagnosis.prior_therapies[0]", "must be an object"),
    ("prior-therapies-not-list.json", "$.diagnosis.prior_therapies", "found an object"),
    (
        "prior-therapy-unknown-key.json",
        "$.diagnosis.prior_therapies[0].lines",
        'Did you mean "line"?',
    ),
    (
        "prior-therapy-palliative-line-zero.json",
        "$.diagnosis.prior_therapies[0].line",
        "palliative systemic lines are numbered from 1",
    ),
    (
        "prior-therapy-unknown-kind.json",
        "$.diagnosis.prior_therapies[0].kind",
        '"chemotherapy" is not a recognised value; use one of: systemic, operation',
    ),
    (
        "prior-therapy-unknown-intent.json",
        "$.diagnosis.prior_therapies[0].intent",
        '"salvage" is not a recognised value',
    ),
    (
        "prior-therapy-end-before-start.json",
        "$.diagnosis.prior_therapies[0].end_date",
        "End date 2025-04-02 is before the start date 2025-05-01",
    ),
    (
        "prior-therapy-start-date-future.json",
        "$.diagnosis.prior_therapies[0].start_date",
        "Start date 2999-01-01 is in the future",
    ),
    (
        "prior-therapy-toxicity-grade-six.json",
        "$.diagnosis.prior_therapies[0].toxicity.grade",
        "CTCAE toxicity grade 6 is outside the plausible range 1\u20135",
    ),
    (
        "prior-therapy-toxicity-grade-zero.json",
        "$.diagnosis.prior_therapies[0].toxicity.grade",
        "CTCAE toxicity grade 0 is outside the plausible range 1\u20135",
    ),
    (
        "prior-therapy-toxicity-not-object.json",
        "$.diagnosis.prior_therapies[0].toxicity",
        'must be an object with organ and grade, e.g. {"organ": "lung", "grade": 3}',
    ),
    (
        "prior-therapy-toxicity-unknown-key.json",
        "$.diagnosis.prior_therapies[0].toxicity.agent",
        'Unknown field "agent" in the toxicity of a prior therapy',
    ),
    ("prior-therapy-line-text.json", "$.diagnosis.prior_therapies[0].line", "whole number"),
    (
        "prior-therapy-duplicate-lines.json",
        "$.diagnosis.prior_therapies[1].line",
        "Line of therapy 1 appears more than once",
    ),
    (
        "prior-therapy-negative-months.json",
        "$.diagnosis.prior_therapies[0].months_to_relapse",
        "Time to relapse -3 months is outside",
    ),
    (
        "prior-therapy-bad-response.json",
        "$.diagnosis.prior_therapies[0].best_response",
        "CR, PR, SD, PD",
    ),
    # TNM per organ
    ("tnm-invalid-lung-t.json", "$.staging.t", '"T5" is not a valid AJCC 8th edition code'),
    ("tnm-breast-code-in-lung.json", "$.staging.n", "for lung adenocarcinoma"),
    ("tnm-lung-code-in-hcc.json", "$.staging.t", "for hepatocellular carcinoma"),
    ("tnm-breast-m1a.json", "$.staging.m", "valid codes: M0, M1"),
    ("tnm-lowercase.json", "$.staging.t", 'Did you mean "T2a"?'),
    ("tnm-prefixed.json", "$.staging.t", 'without the c/p/y prefix: "T2"'),
    ("tnm-for-lymphoma.json", "$.staging.t", "TNM is not used for lymphoma"),
    ("tnm-other-junk.json", "$.staging.m", "does not look like a TNM code"),
    # cross-field contradictions
    ("hcc-m1-without-extrahepatic-spread.json", "$.staging.m", "contradicts extrahepatic spread"),
    ("hcc-n1-without-extrahepatic-spread.json", "$.staging.n", "contradicts extrahepatic spread"),
    ("hcc-extrahepatic-spread-n0-m0.json", "$.staging.extrahepatic_spread", "N0 M0"),
    ("brain-metastases-with-m0.json", "$.staging.brain_metastases_count", "M category is M0"),
    ("pregnant-male.json", "$.patient.pregnant", "Pregnant is true but sex is male"),
    ("menopausal-male.json", "$.patient.menopausal_status", "but sex is male"),
    ("breastfeeding-male.json", "$.patient.breastfeeding", "Breastfeeding is true but sex is"),
    ("nodules-count-mismatch.json", "$.staging.nodules_count", "(2) differs"),
    (
        "index-lesion-larger-than-largest-nodule.json",
        "$.staging.largest_nodule_mm",
        "Largest liver nodule 30 mm is smaller than the index lesion (45 mm)",
    ),
    ("ann-arbor-marrow-not-stage-iv.json", "$.staging.ann_arbor_stage", "marrow involvement"),
    ("ann-arbor-ii-both-sides.json", "$.staging.ann_arbor_stage", "both sides of the diaphragm"),
    ("ann-arbor-iii-one-side.json", "$.staging.ann_arbor_stage", "stage III means nodal"),
    ("ann-arbor-i-several-regions.json", "$.staging.ann_arbor_stage", "single nodal region"),
    # several faults in one file: all are reported, in document order
    ("several-errors.json", "$.patient.ecog", "7 is outside"),
    ("several-errors.json", "$.staging.foo", 'Unknown field "foo" in the Staging section'),
    ("several-errors.json", "$.labs.inr", 'found the text "high"'),
    ("several-errors.json", "$.organ_function.varices", '"huge" is not a recognised value'),
]

_BY_FILE: dict[str, list[tuple[str, str]]] = defaultdict(list)
for _name, _path, _phrase in MALFORMED:
    _BY_FILE[_name].append((_path, _phrase))


def _parse_fixture(name: str) -> ParsedCase:
    return parse_case_bytes((FIXTURES / name).read_bytes(), filename=name, today=TODAY)


def _public_files() -> list[Path]:
    return public_case_files()


def _public(name: str) -> dict[str, Any]:
    path = PUBLIC / name
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _without_expected(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "expected"}


# --------------------------------------------------------------------------- malformed corpus


def test_corpus_and_table_agree() -> None:
    on_disk = {p.name for p in FIXTURES.iterdir()}
    assert on_disk == set(_BY_FILE)
    assert len(on_disk) >= 45


@pytest.mark.parametrize("name", sorted(_BY_FILE))
def test_malformed_file_reports_the_specific_error(name: str) -> None:
    parsed = _parse_fixture(name)
    assert not parsed.ok
    expected = _BY_FILE[name]
    assert [e.path for e in parsed.errors] == [path for path, _ in expected], parsed.errors
    for error, (path, phrase) in zip(parsed.errors, expected, strict=True):
        assert error.filename == name
        assert error.severity == "error"
        assert phrase in error.message, (path, error.message)


def test_ten_megabyte_file_is_rejected_before_parsing() -> None:
    raw = b'{"format": "mdtboard.case/1", "notes": "' + b"a" * (10 * 1024 * 1024) + b'"}'
    parsed = parse_case_bytes(raw, filename="big.json", today=TODAY)
    assert parsed.data is None
    [error] = parsed.errors
    assert error.path == "$"
    assert f"10.0 MiB ({len(raw):,} bytes)" in error.message
    assert "limited to 1 MiB" in error.message


def test_size_limit_boundary() -> None:
    base = json.dumps(MINIMAL | {"notes": ""}).encode()
    padding = MAX_BYTES - len(base)
    at_limit = base.replace(b'"notes": ""', b'"notes": "' + b"x" * padding + b'"')
    assert len(at_limit) == MAX_BYTES
    # At the limit the file is read; the note is then only too long for the Notes field.
    assert [e.path for e in parse_case_bytes(at_limit, filename="a", today=TODAY).errors] == [
        "$.notes"
    ]
    over = parse_case_bytes(at_limit + b" ", filename="b", today=TODAY)
    assert "limited to 1 MiB" in over.errors[0].message


def test_deeply_nested_text_is_rejected_without_recursion() -> None:
    depth = 200_000
    raw = b"[" * depth + b"]" * depth
    [error] = parse_case_bytes(raw, filename="deep.json", today=TODAY).errors
    assert error.path == "$"
    assert "nested too deeply" in error.message


def test_deeply_nested_junk_inside_a_case_is_rejected() -> None:
    depth = 50_000
    raw = (
        b'{"format": "mdtboard.case/1", "case_id": "x", "cancer_type": "hcc", "notes": '
        + b'{"a": ' * depth
        + b"1"
        + b"}" * depth
        + b"}"
    )
    [error] = parse_case_bytes(raw, filename="deep.json", today=TODAY).errors
    assert "nested too deeply" in error.message


def test_deep_python_object_is_rejected_without_recursion() -> None:
    root: list[Any] = []
    node = root
    for _ in range(100_000):
        child: list[Any] = []
        node.append(child)
        node = child
    errors = validate_case(MINIMAL | {"expected": root}, filename="deep", today=TODAY)
    assert [(e.path, "nested too deeply" in e.message) for e in errors] == [("$", True)]


def _parse(raw: object) -> object:
    assert isinstance(raw, bytes)
    return parse_case_bytes(raw, filename="quotes.json", today=TODAY)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CASEFILE_WORST))
def test_depth_prescan_is_linear_on_a_megabyte_of_quotes(kind: str) -> None:
    # given a 1 MiB upload built to make a backtracking string pattern rescan (30 KB of
    # escaped quotes used to freeze the whole server for 9.5 s)
    make = CASEFILE_WORST[kind]
    raw = make(MAX_BYTES)
    assert len(raw) <= MAX_BYTES
    # when it is checked
    parsed = parse_case_bytes(raw, filename="quotes.json", today=TODAY)
    # then it is refused with a readable message
    assert parsed.data is None
    assert "not valid JSON" in parsed.errors[0].message
    # and the check costs about 4 times as much at 1 MiB as at 256 KiB (a quadratic one: 16);
    # make bench prints the time at 1 MiB (casefile_hostile_1mib_worst, target under 1 s)
    assert_linear(make, _parse, small=MAX_BYTES // 4, large=MAX_BYTES)


@pytest.mark.slow
def test_linearity_check_catches_the_old_backtracking_prescan() -> None:
    # given the depth pre-scan's pattern before the fix, which rescanned the rest of the text
    # from every escaped quote
    old = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
    make = CASEFILE_WORST["unterminated-escaped-quotes"]
    # when the linearity check measures it (on kilobytes: at a megabyte it takes hours)
    # then it fails
    with pytest.raises(AssertionError, match="cost grew"):
        assert_linear(
            lambda size: make(size).decode(),
            lambda text: sum(1 for _ in old.finditer(str(text))),
            small=2048,
            large=8192,
        )


def test_depth_prescan_counts_brackets_after_escaped_quotes() -> None:
    raw = b'["\\"]", "\\\\", ' + b"[" * 200 + b"]" * 200 + b"]"
    [error] = parse_case_bytes(raw, filename="deep.json", today=TODAY).errors
    assert "nested too deeply" in error.message


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    raw = json.dumps(MINIMAL | {"notes": "[" * 5000 + "{" * 5000}).encode()
    assert parse_case_bytes(raw, filename="s", today=TODAY).errors == ()


def test_utf8_bom_is_accepted() -> None:
    raw = b"\xef\xbb\xbf" + json.dumps(MINIMAL).encode()
    parsed = parse_case_bytes(raw, filename="bom.json", today=TODAY)
    assert parsed.ok
    assert parsed.data == MINIMAL


def test_invalid_utf8_offset_counts_the_bom() -> None:
    raw = b"\xef\xbb\xbf" + json.dumps(MINIMAL | {"notes": "ab"}).encode().replace(b"ab", b"a\xc3")
    [error] = parse_case_bytes(raw, filename="x", today=TODAY).errors
    assert f"byte offset {raw.index(b'a' + bytes([0xC3])) + 1}" in error.message


def test_utf16_without_bom_is_recognised() -> None:
    raw = json.dumps(MINIMAL).encode("utf-16-le")
    [error] = parse_case_bytes(raw, filename="x", today=TODAY).errors
    assert "UTF-16" in error.message


def test_all_errors_are_returned_in_document_order() -> None:
    data = MINIMAL | {
        "notes": 5,
        "labs": {"inr": "x", "bilirubin_mg_dl": -1},
        "patient": {"age_years": 300, "sex": "m"},
        "question": [],
    }
    paths = [e.path for e in validate_case(data, filename="x", today=TODAY)]
    assert paths == [
        "$.question",
        "$.patient.age_years",
        "$.patient.sex",
        "$.labs.bilirubin_mg_dl",
        "$.labs.inr",
        "$.notes",
    ]


def test_error_list_is_capped_for_junk_files() -> None:
    data = MINIMAL | {"labs": {f"junk_{i}": 1 for i in range(MAX_ERRORS + 20)}}
    errors = validate_case(data, filename="x", today=TODAY)
    assert len(errors) == MAX_ERRORS + 1
    assert "20 further problems are not listed" in errors[-1].message


def test_booleans_are_never_numbers() -> None:
    for path in (f.path for f in FIELDS if f.is_numeric):
        section, key = path.split(".")
        errors = validate_case(MINIMAL | {section: {key: True}}, filename="x", today=TODAY)
        assert [e.path for e in errors] == [f"$.{path}"], path


def test_format_mismatch_stops_further_checks() -> None:
    data = MINIMAL | {"format": "mdtboard.case/2", "labs": {"inr": "junk"}, "extra": 1}
    assert [e.path for e in validate_case(data, filename="x", today=TODAY)] == ["$.format"]


def test_missing_format_is_reported_with_the_other_errors() -> None:
    data = {k: v for k, v in MINIMAL.items() if k != "format"} | {"labs": {"inr": "junk"}}
    paths = [e.path for e in validate_case(data, filename="x", today=TODAY)]
    assert paths == ["$.format", "$.labs.inr"]


def test_validate_case_rejects_non_objects() -> None:
    values: tuple[object, ...] = ([], "x", None, 3)
    for value in values:
        [error] = validate_case(value, filename="x", today=TODAY)
        assert error.path == "$"


def test_non_text_keys_from_python_callers_are_reported() -> None:
    [error] = validate_case(MINIMAL | {"labs": {1: 2}}, filename="x", today=TODAY)
    assert error.path == "$.labs"
    assert "Field names must be text" in error.message


def test_today_is_injectable() -> None:
    data = MINIMAL | {
        "diagnosis": {"prior_therapies": [{"line": 1, "end_date": "2026-03-01"}]},
    }
    assert validate_case(data, filename="x", today=date(2026, 3, 1)) == []
    # One day of slack for time zones, then the date is in the future.
    assert validate_case(data, filename="x", today=date(2026, 2, 28)) == []
    [error] = validate_case(data, filename="x", today=date(2026, 2, 27))
    assert error.path == "$.diagnosis.prior_therapies[0].end_date"
    assert "in the future" in error.message


def test_ldh_without_uln_is_fine() -> None:
    data = MINIMAL | {"cancer_type": "lymphoma", "biomarkers": {"ldh_u_l": 300}}
    assert validate_case(data, filename="x", today=TODAY) == []


def test_case_error_str_names_file_path_and_message() -> None:
    error = CaseError("a.json", "$.labs.inr", "INR must be a number")
    assert str(error) == "a.json: $.labs.inr: INR must be a number"


def test_unusual_key_is_shown_escaped_in_path() -> None:
    [error] = validate_case(MINIMAL | {"labs": {"a b": 1}}, filename="x", today=TODAY)
    assert error.path == '$.labs["a b"]'


# --------------------------------------------------------------------------- warnings


def test_warnings_do_not_block_import() -> None:
    data = MINIMAL | {
        "cancer_type": "breast",
        "patient": {"age_years": 75, "sex": "female", "menopausal_status": "premenopausal"},
        "organ_function": {"lvef_pct": 95},
        "biomarkers": {"afp_ng_ml": 10},
        "diagnosis": {
            "setting": "newly_diagnosed",
            "prior_therapies": [{"line": 1, "end_date": "2026-05-01", "months_to_relapse": 12}],
        },
    }
    assert validate_case(data, filename="x", today=TODAY) == []
    warnings = case_warnings(data, filename="x", today=TODAY)
    assert [(w.path, w.severity) for w in warnings] == [
        ("$.patient.menopausal_status", "warning"),
        ("$.diagnosis.setting", "warning"),
        ("$.diagnosis.prior_therapies[0].months_to_relapse", "warning"),
        ("$.biomarkers.afp_ng_ml", "warning"),
        ("$.organ_function.lvef_pct", "warning"),
    ]
    assert "LVEF 95 % is unusual (typical range 5\u201390 %)" in warnings[-1].message
    assert "not normally recorded for breast cancer" in warnings[3].message


def test_lung_brain_metastases_coded_m1a_is_a_warning() -> None:
    data = _public("pub-lung-01.json")
    assert validate_case(data, filename="x", today=TODAY) == []
    [warning] = case_warnings(data, filename="x", today=TODAY)
    assert warning.path == "$.staging.m"
    assert "M1b (single) or M1c (multiple)" in warning.message


# --------------------------------------------------------------------------- public cases


def test_all_public_cases_validate_without_errors() -> None:
    files = _public_files()
    assert len(files) == 12
    for path in files:
        parsed = parse_case_bytes(path.read_bytes(), filename=path.name, today=TODAY)
        assert parsed.errors == (), parsed.errors
        assert parsed.ok
        # Same with the real date, as the importer will call it.
        assert parse_case_bytes(path.read_bytes(), filename=path.name).errors == ()


def test_public_cases_pass_the_published_schema_alone() -> None:
    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    for path in _public_files():
        data = json.loads(path.read_text(encoding="utf-8"))
        assert list(validator.iter_errors(data)) == [], path.name


def test_catalog_covers_exactly_the_keys_of_the_format() -> None:
    data = _without_expected(_public("pub-lymph-03.json"))
    keys: set[str] = set()
    for key, value in data.items():
        if isinstance(value, dict):
            keys.update(f"{key}.{sub}" for sub in value)
        else:
            keys.add(key)
    assert keys | ADDITIVE_FIELDS == {f.path for f in FIELDS}
    assert not keys & ADDITIVE_FIELDS
    entry = data["diagnosis"]["prior_therapies"][0]
    assert {f"diagnosis.prior_therapies[].{k}" for k in {*entry, *ADDITIVE_PRIOR_KEYS}} == {
        f.path for f in PRIOR_THERAPY_FIELDS
    }


# --------------------------------------------------------------------------- schema


def test_committed_schema_equals_build_schema() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert json.loads(committed) == build_schema()
    assert committed == schema_json()


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = build_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["format", "case_id", "cancer_type"]
    assert schema["properties"]["format"] == {
        "title": "Format",
        "description": 'Always "mdtboard.case/1".',
        "const": FORMAT_ID,
    }
    assert schema["additionalProperties"] is False
    assert "expected" in schema["properties"]
    for section in ("patient", "diagnosis", "index_lesion", "staging", "biomarkers", "labs"):
        assert schema["properties"][section]["additionalProperties"] is False


def test_every_leaf_of_the_schema_allows_null() -> None:
    validator = Draft202012Validator(build_schema())
    nulls = MINIMAL | {f.parent or f.path: {} for f in FIELDS if f.parent is not None}
    for f in FIELDS:
        if f.required:
            continue
        if f.parent is None:
            nulls[f.path] = None
        else:
            nulls[f.parent][f.key] = None
    nulls["diagnosis"]["prior_therapies"] = [{f.key: None for f in PRIOR_THERAPY_FIELDS}]
    assert list(validator.iter_errors(nulls)) == []
    assert validate_case(nulls, filename="x", today=TODAY) == []


# --------------------------------------------------------------------------- canonical form


def _drop_additive(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    for path in ADDITIVE_FIELDS:
        section, key = path.split(".")
        del out[section][key]
    for entry in out["diagnosis"].get("prior_therapies") or []:
        for key in ADDITIVE_PRIOR_KEYS:
            assert entry.pop(key) is None, key
    return out


def test_public_canonical_form_is_the_file_without_expected() -> None:
    for path in _public_files():
        data = json.loads(path.read_text(encoding="utf-8"))
        canonical = case_to_canonical(data)
        # the fields added after the file was written are present and null (not available)
        for added in ADDITIVE_FIELDS:
            section, key = added.split(".")
            assert canonical[section][key] is None, added
        assert _drop_additive(canonical) == _without_expected(data)
        # Key order too: an export must look like the file it came from.
        assert json.dumps(_drop_additive(canonical)) == json.dumps(_without_expected(data))


def test_canonical_is_idempotent_and_fills_nulls() -> None:
    data = MINIMAL | {"labs": {"inr": 1.2}, "diagnosis": {"prior_therapies": [{"line": 1}]}}
    once = case_to_canonical(data)
    assert case_to_canonical(once) == once
    assert once["labs"]["inr"] == 1.2
    assert once["labs"]["bilirubin_mg_dl"] is None
    assert once["diagnosis"]["prior_therapies"] == [
        {
            "line": 1,
            "regimen": None,
            "end_date": None,
            "best_response": None,
            "months_to_relapse": None,
            "stop_reason": None,
            "toxicity": None,
            "kind": None,
            "intent": None,
            "start_date": None,
        }
    ]
    assert once["patient"] == {f.key: None for f in FIELDS if f.parent == "patient"}
    assert list(once) == [
        "format",
        "case_id",
        "cancer_type",
        "question",
        "patient",
        "diagnosis",
        "index_lesion",
        "staging",
        "biomarkers",
        "labs",
        "organ_function",
        "notes",
    ]
    assert validate_case(once, filename="x", today=TODAY) == []


def test_canonical_does_not_share_state_with_the_input() -> None:
    data = copy.deepcopy(MINIMAL) | {"patient": {"comorbidities": ["COPD"]}}
    canonical = case_to_canonical(data)
    canonical["patient"]["comorbidities"].append("asthma")
    assert data["patient"]["comorbidities"] == ["COPD"]


def test_export_then_import_round_trips_exactly() -> None:
    for path in _public_files():
        original = parse_case_bytes(path.read_bytes(), filename=path.name, today=TODAY)
        exported = canonical_json(original.canonical()).encode("utf-8")
        again = parse_case_bytes(exported, filename=path.name, today=TODAY)
        assert again.errors == ()
        assert again.canonical() == original.canonical()
        assert canonical_json(again.canonical()).encode("utf-8") == exported


def test_canonical_of_invalid_parse_raises() -> None:
    parsed = parse_case_bytes(b"[]", filename="x", today=TODAY)
    with pytest.raises(ValueError, match="has errors"):
        parsed.canonical()


# --------------------------------------------------------------------------- catalog


def test_labels_carry_the_unit() -> None:
    assert get_field("labs.bilirubin_mg_dl").label == "Bilirubin (mg/dL)"
    assert get_field("organ_function.lvef_pct").label == "LVEF (%)"
    assert get_field("labs.inr").label == "INR"
    for f in FIELDS:
        if f.unit:
            assert f.label.endswith(f"({f.unit})")


def test_numeric_fields_have_ranges_and_every_field_a_section() -> None:
    sections = {s.key for s in SECTIONS}
    for f in FIELDS + PRIOR_THERAPY_FIELDS:
        assert f.section in sections
        if f.is_numeric:
            assert f.minimum is not None, f.path
            assert f.maximum is not None, f.path
        if f.type is FieldType.ENUM:
            assert f.choices, f.path
    assert FIELDS_BY_PATH["patient.ecog"].maximum == 4


def test_fields_for_cancer_type() -> None:
    hcc = {f.path for f in fields_for("hcc")}
    lung = {f.path for f in fields_for("lung_adenocarcinoma")}
    breast = {f.path for f in fields_for("breast")}
    lymphoma = {f.path for f in fields_for("lymphoma")}
    assert {
        "labs.bilirubin_mg_dl",
        "labs.albumin_g_dl",
        "labs.inr",
        "organ_function.ascites",
        "organ_function.encephalopathy",
        "organ_function.varices",
        "biomarkers.afp_ng_ml",
    } <= hcc
    assert {
        "biomarkers.egfr",
        "biomarkers.alk",
        "biomarkers.ros1",
        "biomarkers.kras",
        "biomarkers.braf",
        "biomarkers.met_exon14",
        "biomarkers.ret",
        "biomarkers.pdl1_tps_pct",
    } <= lung
    assert {
        "biomarkers.er_pct",
        "biomarkers.pr_pct",
        "biomarkers.her2",
        "biomarkers.ki67_pct",
        "biomarkers.germline_brca",
        "patient.menopausal_status",
    } <= breast
    assert {
        "staging.ann_arbor_stage",
        "biomarkers.cd20",
        "biomarkers.cell_of_origin",
        "biomarkers.ldh_u_l",
        "staging.extranodal_sites_count",
    } <= lymphoma
    assert "biomarkers.egfr" not in hcc
    assert "organ_function.varices" not in breast
    assert "staging.t" not in lymphoma
    for cancer_type in CancerType:
        assert {"case_id", "patient.age_years", "labs.creatinine_mg_dl"} <= {
            f.path for f in fields_for(cancer_type)
        }
    assert fields_for("unknown") == ()


def test_tnm_codes_match_ajcc8_choices() -> None:
    assert TNM_CODES["lung_adenocarcinoma"]["m"] == ("M0", "M1", "M1a", "M1b", "M1c")
    assert {"T4a", "T4d", "N1mi", "N3c"} <= set(TNM_CODES["breast"]["t"] + TNM_CODES["breast"]["n"])
    assert TNM_CODES["hcc"]["n"] == ("NX", "N0", "N1")
    assert "T2a" not in TNM_CODES["hcc"]["t"]


# --- invisible characters in free text ----------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "path", "message"),
    [
        (
            MINIMAL | {"patient": {"pseudonym": "\u202eHCC-123"}},
            "$.patient.pseudonym",
            "Pseudonym contains an invisible text-direction control (U+202E)",
        ),
        (
            MINIMAL | {"patient": {"pseudonym": "HCC\u2066-123"}},
            "$.patient.pseudonym",
            "Pseudonym contains an invisible text-direction control (U+2066)",
        ),
        (
            MINIMAL | {"patient": {"pseudonym": "HCC-\u200f12-3"}},
            "$.patient.pseudonym",
            "Pseudonym contains an invisible text-direction control (U+200F)",
        ),
        (
            MINIMAL | {"patient": {"pseudonym": "\u200eHCC-123"}},
            "$.patient.pseudonym",
            "Pseudonym contains an invisible text-direction control (U+200E)",
        ),
        (
            MINIMAL | {"question": "Resect segment 4\u061c-5?"},
            "$.question",
            "MDT question contains an invisible text-direction control (U+061C)",
        ),
        (
            MINIMAL | {"question": "Resect?\x1b[31m urgent\x1b[0m"},
            "$.question",
            "MDT question contains an invisible control character (U+001B)",
        ),
        (
            MINIMAL | {"question": "Resect?\x9b31m"},
            "$.question",
            "MDT question contains an invisible control character (U+009B)",
        ),
        (
            MINIMAL | {"patient": {"pseudonym": "HCC\n123"}},
            "$.patient.pseudonym",
            "Pseudonym must be a single line",
        ),
    ],
    ids=[
        "rlo-pseudonym",
        "lri-pseudonym",
        "rlm-pseudonym",
        "lrm-pseudonym",
        "alm-question",
        "ansi-question",
        "c1-csi-question",
        "newline-pseudonym",
    ],
)
def test_text_that_would_display_differently_is_refused_naming_the_field(
    document: dict[str, Any], path: str, message: str
) -> None:
    # given a pseudonym or question carrying a direction override or a terminal escape
    # when it is validated
    errors = validate_case(document, filename="c.json", today=TODAY)
    # then the field is named and the character given by its code (it cannot be seen)
    assert [(e.path, e.message.startswith(message)) for e in errors] == [(path, True)]


def test_direction_marks_stay_allowed_in_free_text_notes() -> None:
    # given right-to-left clinical notes, which need the marks to display as written
    document = MINIMAL | {"notes": "\u05de\u05d8\u05d5\u05e4\u05dc \u200f(ECOG 1)\u200f"}
    # then they are accepted: only the pseudonym and the question refuse them
    assert validate_case(document, filename="c.json", today=TODAY) == []


def test_question_keeps_its_line_breaks_and_tabs() -> None:
    document = MINIMAL | {"question": "Resect or ablate?\n\tSecond opinion requested.\r\n"}
    assert validate_case(document, filename="c.json", today=TODAY) == []
