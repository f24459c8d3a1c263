"""Hostile and malformed FHIR input: a clear error with the FHIR path, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consult.fhir.parse import MAX_BYTES, MAX_DEPTH, looks_like_fhir, parse_bundle_bytes

JENNY = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "fhir"
    / "Bundle-mcode-patient-bundle-jenny-m.json"
)


def _jenny() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JENNY.read_text())
    return data


def _errors(raw: bytes) -> list[tuple[str, str]]:
    parsed = parse_bundle_bytes(raw, filename="b.json")
    assert not parsed.ok
    return [(e.path, e.message) for e in parsed.errors]


def test_the_hl7_example_bundle_reads() -> None:
    parsed = parse_bundle_bytes(JENNY.read_bytes(), filename="jenny.json")
    assert parsed.ok
    assert len(parsed.resources) == 40


def test_a_wrong_value_is_named_by_its_fhir_path() -> None:
    data = _jenny()
    data["entry"][25]["resource"]["valueQuantity"]["value"] = "155 lb"
    data["entry"][7]["resource"]["effectiveDateTime"] = "2018-13-45"
    [(p1, m1), (p2, m2)] = _errors(json.dumps(data).encode())
    assert p1 == "Bundle.entry[7].resource.effectiveDateTime"
    assert 'Found "2018-13-45"' in m1
    assert p2 == "Bundle.entry[25].resource.valueQuantity.value"
    assert "Decimal" in m2


def test_an_unknown_element_and_an_unknown_resource_type_are_named() -> None:
    data = _jenny()
    data["entry"][5]["resource"]["dosage"] = "1 mg"
    assert _errors(json.dumps(data).encode())[0][0] == "Bundle.entry[5].resource.dosage"
    data = _jenny()
    data["entry"][3]["resource"]["resourceType"] = "Medicine"
    [(path, message)] = _errors(json.dumps(data).encode())
    assert path == "Bundle.entry[3].resource.resourceType"
    assert "not a FHIR R4 resource type" in message


@pytest.mark.parametrize(
    ("raw", "phrase"),
    [
        (b"", "empty"),
        (b"{", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"resourceType": "Patient", "id": "x"}', "holds a Patient resource"),
        (b'{"resourceType": "Bundle", "type": "message", "entry": []}', "carries no patient"),
        (b'{"resourceType": "Bundle", "type": "collection", "type": "document"}', "appears twice"),
        ("{}".encode("utf-16"), "not valid UTF-8"),
        (b'{"resourceType": "Bundle"}', "type"),
    ],
)
def test_malformed_files_get_a_clear_error(raw: bytes, phrase: str) -> None:
    errors = _errors(raw)
    assert any(phrase in message for _, message in errors), errors


def test_deep_nesting_and_size_are_refused_before_parsing() -> None:
    deep = (
        b'{"resourceType": "Bundle", "a": ' + b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5) + b"}"
    )
    assert "nested too deeply" in _errors(deep)[0][1]
    huge = b'{"resourceType": "Bundle", "x": "' + b"a" * (MAX_BYTES + 1) + b'"}'
    assert "limited to 20 MiB" in _errors(huge)[0][1]


def test_a_case_file_is_not_mistaken_for_fhir() -> None:
    assert looks_like_fhir(JENNY.read_bytes())
    assert not looks_like_fhir(b'{"format": "mdtboard.case/1", "case_id": "x"}')
