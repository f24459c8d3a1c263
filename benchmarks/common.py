"""Helpers shared by the benchmarks: timing and the JSON-lines output."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# As tests/paths.py: shared/ beside the repository, or where MDTBOARD_SHARED_DIR says (a git
# worktree elsewhere has none beside it).
PUBLIC_CASES = (
    Path(os.environ.get("MDTBOARD_SHARED_DIR") or REPO.parent / "shared") / "cases" / "public"
)


def repository_tests_package() -> None:
    """Make ``tests`` this repository's tests/ (the benchmarks use its stub LLM, process
    helpers and shapes). tests/ has no __init__.py, so outside pytest another installed
    package called "tests" (medspacy-quickumls ships one) would be found first."""
    package = types.ModuleType("tests")
    package.__path__ = [str(REPO / "tests")]
    sys.modules["tests"] = package


def emit(name: str, value: float, unit: str, target: str | None = None) -> None:
    line = {"name": name, "value": round(value, 3), "unit": unit, "target": target}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18]
