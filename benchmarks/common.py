"""Helpers shared by the benchmarks: timing and the JSON-lines output."""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PUBLIC_CASES = REPO.parent / "shared" / "cases" / "public"


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
