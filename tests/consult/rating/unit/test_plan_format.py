"""Comparator plans as mdtboard.plan/1: what is accepted, what is refused and how it says so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consult.rating.blinding import blind_plan, clinical_sentence, neutral_text
from consult.rating.plan_format import parse_plan_bytes
from tests.consult.rating.support import COMPARATOR


def _raw(document: Any) -> bytes:
    return json.dumps(document).encode()


def test_a_valid_plan_is_kept_without_its_engine_or_evidence() -> None:
    parsed = parse_plan_bytes(_raw({**COMPARATOR, "evidence": [{"unit_id": "hcc.tx.x"}]}))
    assert parsed.ok, parsed.errors
    assert parsed.plan is not None
    assert "engine" not in parsed.plan
    assert "evidence" not in parsed.plan
    components = parsed.plan["recommendation"]["components"]
    # primary components are numbered in the order written, alternatives ranked
    assert [(c["role"], c["order"], c["rank"]) for c in components] == [
        ("primary", 1, None),
        ("primary", 2, None),
        ("alternative", None, 1),
    ]


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        ({"format": "mdtboard.plan/2"}, "$.format", 'must be "mdtboard.plan/1"'),
        ({"recommendation": None}, "$.recommendation", "is required"),
        (
            {"recommendation": {"components": [{"role": "primary", "modality": "chemo"}]}},
            "$.recommendation.components[0].modality",
            "must be one of surgery",
        ),
        (
            {"recommendation": {"components": [{"role": "primary", "modality": "surgery"}]}},
            "$.recommendation.components[0].description",
            "is required",
        ),
        (
            {
                "recommendation": {
                    "components": [
                        {"role": "primary", "modality": "surgery", "description": "x"},
                        {"role": "alternative", "modality": "ablation", "description": "y"},
                    ]
                }
            },
            "$.recommendation.components[1].when",
            "is required",
        ),
        (
            {
                "recommendation": {
                    "components": [
                        {
                            "role": "alternative",
                            "modality": "surgery",
                            "description": "x",
                            "when": "if y",
                        }
                    ]
                }
            },
            "$.recommendation.components",
            'at least one component with role "primary"',
        ),
        ({"monitoring": [{"phase": "later", "what": "CT"}]}, "$.monitoring[0].phase", "one of"),
        ({"monitoring": "CT every 3 months"}, "$.monitoring", "must be a list"),
        (
            {"safety": {"flags": [{"severity": "high", "text": "x"}]}},
            "$.safety.flags[0].severity",
            "must be one of critical, major, minor",
        ),
    ],
)
def test_every_problem_names_its_path(change: dict[str, Any], path: str, message: str) -> None:
    parsed = parse_plan_bytes(_raw({**COMPARATOR, **change}))
    assert not parsed.ok
    assert parsed.plan is None
    assert any(e.path == path and message in e.message for e in parsed.errors), parsed.errors


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty"),
        (b"{not json", "not valid JSON"),
        (b'{"format": NaN}', "not valid JSON"),
        (b"\xff\xfe{}", "not valid UTF-8"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"format": "mdtboard.plan/1", "format": "x"}', "appears more than once"),
        (b"{" + b" " * 300_000 + b"}", "at most"),
    ],
)
def test_a_file_that_is_not_a_plan_is_refused_with_a_reason(raw: bytes, message: str) -> None:
    parsed = parse_plan_bytes(raw)
    assert not parsed.ok
    assert any(message in e.message for e in parsed.errors), parsed.errors


def test_neutral_text_rewrites_internal_identifiers() -> None:
    text = (
        "Dose by Calvert [carboplatin auc5 mg: 670] (common.gate.carboplatin-calvert); "
        "needs organ_function.qtc_ms and derived.frailty, as the Pharmacy member said"
    )
    assert neutral_text(text) == (
        "Dose by Calvert (Carboplatin dose for AUC 5 (Calvert, mg): 670); "
        "needs QTc (ms) and Frailty, as the team said"
    )
    # and as one clinical sentence, without the units a field label carries
    assert clinical_sentence(text, 30) == ("Dose by Calvert (Carboplatin dose for AUC 5: 670).")


def test_blind_plan_reads_a_plan_without_roles_or_sections() -> None:
    plan = blind_plan({"recommendation": {"components": [{"modality": "systemic",
                                                          "description": "R-CHOP"}]}})  # fmt: skip
    assert plan.intent == "Not stated"
    assert [item.text for item in plan.pathway] == ["R-CHOP."]
    assert plan.precautions == ()
    assert plan.follow_up == ()


def test_every_public_case_gives_a_valid_demo_comparator() -> None:
    from consult.rating.management.commands.rating_demo import comparator_from_expected
    from consult.rating.plan_format import validate_plan
    from tests.paths import public_case_files

    for path in public_case_files():
        expected = json.loads(path.read_bytes())["expected"]
        document = comparator_from_expected(expected)
        assert document is not None, path.name
        plan, errors = validate_plan(document)
        assert not errors, (path.name, errors)
        assert plan is not None
        primary = json.dumps([c for c in plan["recommendation"]["components"]]).casefold()
        for group in expected.get("primary_all") or []:
            assert any(term.casefold() in primary for term in group), (path.name, group)
