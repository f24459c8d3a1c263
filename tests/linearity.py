"""A check that a parser's cost grows linearly with its input, without a wall-clock bound.

A fixed time limit fails on a loaded two-core machine (or passes a quadratic parser on a fast
one). Instead: the CPU time of this thread at ``large`` bytes against ``small`` bytes. With
``large = 4 * small`` a linear parser costs about 4 times as much, a quadratic one 16 times;
the bound of 8 sits between them. CPU time of this thread is not inflated by other processes,
the minimum of a few runs drops the odd interrupt or collection, and a measurement over the
bound is retried a couple of times: a quadratic parser exceeds it every time, a linear one
practically never twice. The figure in seconds at 1 MiB is `make bench`'s
(benchmarks/parsers.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

GROWTH_BOUND = 8.0


def cpu_seconds(fn: Callable[[], object], *, repeat: int) -> float:
    """The least CPU time of this thread that ``fn`` took over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        started = time.thread_time()
        fn()
        best = min(best, time.thread_time() - started)
    return best


def growth(
    make: Callable[[int], object], run: Callable[[object], object], *, small: int, large: int
) -> float:
    """How many times more CPU time ``run`` takes on ``make(large)`` than on ``make(small)``."""
    small_input, large_input = make(small), make(large)
    small_s = cpu_seconds(lambda: run(small_input), repeat=5)
    large_s = cpu_seconds(lambda: run(large_input), repeat=3)
    # A floor of 50 µs: below it the clock's resolution, not the parser, sets the ratio.
    return large_s / max(small_s, 50e-6)


def assert_linear(
    make: Callable[[int], object],
    run: Callable[[object], object],
    *,
    small: int,
    large: int,
    attempts: int = 3,
) -> None:
    """Fail unless the cost from ``small`` to ``large`` grows at most GROWTH_BOUND / 4 times
    faster than the size (for large = 4 * small: a ratio under 8)."""
    bound = GROWTH_BOUND * (large / small) / 4
    ratios = []
    for _ in range(attempts):
        ratios.append(growth(make, run, small=small, large=large))
        if ratios[-1] < bound:
            return
    raise AssertionError(
        f"cost grew {', '.join(f'{r:.1f}' for r in ratios)} times from {small:,} to "
        f"{large:,} bytes (linear: about {large / small:.0f}, bound {bound:.0f})"
    )
