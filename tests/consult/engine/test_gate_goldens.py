"""Golden outcomes of the safety gate on every case of tests/cases and the public cases: each
gate's rule, status and effect, and the pathway's steps in order. They pin what the gate decides
while its code is reorganised; a deliberate change rewrites them (scripts/gate_goldens.py) and
their diff is the review of what it did to every plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.gate_goldens import GOLDEN, case_files, case_key, summary
from tests.consult.engine.offline_plans import offline_plan

GOLDENS = json.loads(GOLDEN.read_text())
FILES = case_files()


def test_every_case_has_its_golden_and_no_other() -> None:
    assert sorted(GOLDENS) == sorted(case_key(p) for p in FILES)
    assert any(key.startswith("public/") for key in GOLDENS)


@pytest.mark.parametrize("path", FILES, ids=case_key)
def test_gate_outcome_is_the_golden_one(path: Path) -> None:
    # when the guideline engine plans the case, then the gate decides as recorded
    assert summary(offline_plan(path)) == GOLDENS[case_key(path)], (
        "the gate's outcome changed: if on purpose, run scripts/gate_goldens.py and review the diff"
    )
