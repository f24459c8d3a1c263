"""The guideline engine's plan of a case file over the seed, computed once per test session:
the concordance test, the gate goldens and the gate walk read the same plans."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from consult.casefile.validate import parse_case_bytes
from consult.evaluation import plan_offline
from tests.fixtures.seed import seed_bundle


@cache
def _plan(path: Path) -> dict[str, Any]:
    parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
    assert parsed.ok, parsed.errors
    assert parsed.data is not None
    return plan_offline(parsed.data, seed_bundle())


def offline_plan(path: Path) -> dict[str, Any]:
    """A copy: a test may change its plan without changing another test's."""
    return copy.deepcopy(_plan(path))
