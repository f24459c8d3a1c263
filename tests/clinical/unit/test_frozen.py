"""Freezing a case's facts keeps them exactly: what the gate reads from a snapshot is what it
would have computed, and the stored document names the code that computed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import clinical.frozen
from clinical.applicability import case_facts
from clinical.calculators import derive_all, staging_summary
from clinical.frozen import FACTS_VERSION, FrozenFacts, changed_facts, freeze
from clinical.results import CalcResult

CASES = sorted((Path(__file__).resolve().parents[2] / "cases").glob("*.json"))
# One case of each kind for the fast suite; every case in the slow one.
SOME = [p for p in CASES if p.stem.endswith("-01")]


@pytest.mark.parametrize("path", SOME, ids=lambda p: p.stem)
def test_frozen_facts_are_the_facts_the_rules_would_read(path: Path) -> None:
    _check_frozen(path)


@pytest.mark.slow
def test_every_case_freezes_faithfully() -> None:
    for path in CASES:
        _check_frozen(path)


def _check_frozen(path: Path) -> None:
    case = json.loads(path.read_text())
    frozen = freeze(case)
    assert frozen.facts == case_facts(case), path.name
    derived = derive_all(case)
    assert {n: r.to_dict() for n, r in frozen.derived.items()} == {
        n: r.to_dict() for n, r in derived.items()
    }, path.name
    assert frozen.staging == staging_summary(derived), path.name
    # and the stored document reads back to the same facts
    stored = json.loads(json.dumps(frozen.to_json()))
    assert FrozenFacts.from_json(stored) == frozen, path.name


def test_the_document_names_the_code_that_computed_it() -> None:
    document = freeze({"cancer_type": "hcc"}).to_json()
    assert document["format"] == "mdtboard.facts/1"
    assert document["version"] == FACTS_VERSION
    assert FACTS_VERSION.startswith(clinical.frozen.FACTS_RELEASE + "+")


def test_a_document_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match=r"mdtboard\.facts/1"):
        FrozenFacts.from_json({})


def test_changed_facts_names_what_a_recompute_changed() -> None:
    def result(name: str, value: object) -> CalcResult:
        return CalcResult(name, value, {}, [], "test")

    before = FrozenFacts("a", {"bclc": result("bclc", "A"), "ipi": result("ipi", 2)}, {})
    after = FrozenFacts("b", {"bclc": result("bclc", "B"), "flipi": result("flipi", 1)}, {})
    assert changed_facts(before, after) == ["bclc", "flipi", "ipi"]
    assert changed_facts(before, before) == []
