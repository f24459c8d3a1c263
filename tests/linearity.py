"""A check that a parser's cost grows linearly with its input, without a wall-clock bound.

A fixed time limit fails on a loaded two-core machine (or passes a quadratic parser on a fast
one). Instead: the CPU time of this thread at ``large`` bytes against ``small`` bytes. With
``large = 4 * small`` a linear parser costs about 4 times as much, a quadratic one 16 times;
the bound of 8 sits between them. The readers of free text (below) go from 10 KB to 100 KB:
about 10 times the cost when linear, 100 when quadratic, bound 30. CPU time of this thread is
not inflated by other processes, the least of a few runs drops the odd interrupt or
collection, and a measurement over the bound is retried a couple of times: a quadratic parser
exceeds it every time, a linear one practically never twice. The figure in seconds at 1 MiB
is `make bench`'s (benchmarks/parsers.py); the worst text reader's ratio is too
(benchmarks/textreaders.py).

Why CPU time and not a count of operations: the cost that goes quadratic is inside the
pattern engine, in C, where Python's tracing sees one call however much it scans. CPU time of
this thread is the count the machine keeps for us, and other processes do not inflate it.
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
    make: Callable[[int], object],
    run: Callable[[object], object],
    *,
    small: int,
    large: int,
    small_repeat: int = 5,
    large_repeat: int = 3,
) -> float:
    """How many times more CPU time ``run`` takes on ``make(large)`` than on ``make(small)``."""
    small_input, large_input = make(small), make(large)
    small_s = cpu_seconds(lambda: run(small_input), repeat=small_repeat)
    large_s = cpu_seconds(lambda: run(large_input), repeat=large_repeat)
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


# --- readers of untrusted free text (issue 26) --------------------------------------------------
# Twenty shapes of hostile text: one token repeated to the size, no sentence break unless the
# token has one. Each was chosen to make some pattern or loop re-scan what it has read: a run
# of word characters for patterns with an unanchored leading class ("1", "é", "a", "22/"),
# punctuation that patterns stop at ("-", ".", "(", ", "), cue words that start a look-back or a
# look-ahead at every occurrence ("resistant to ", "no ", "declines "), mentions that each add a
# finding ("BRCA ", "grade 3 "), and white space for patterns that begin with \s*.
HOSTILE_SHAPES: dict[str, str] = {
    "digits": "1",
    "gene": "BRCA",
    "gene-words": "BRCA ",
    "accented": "é",
    "fraction": "22/",
    "hyphens": "-",
    "spaces": " ",
    "newlines": "\n",
    "periods": ".",
    "letters": "a",
    "open-brackets": "(",
    "commas": ", ",
    "decimal": "1.2",
    "negation": "no ",
    "resistant": "resistant to ",
    "refractory": "palbociclib-refractory ",
    "declines": "declines chemotherapy and ",
    "grade": "grade 3 ",
    "dose": "AUC 5 mg/m2 ",
    "with-drug": "with rituximab ",
}
# Tokens the Hypothesis test combines into further shapes.
HOSTILE_TOKENS: tuple[str, ...] = (*HOSTILE_SHAPES.values(), "ascites", ":", ";", "not ", "x")
TEXT_SMALL = 10_000
TEXT_LARGE = 100_000
# Ten times the text: linear costs about 10 times as much, quadratic 100 times. A bound of 30
# leaves a wide margin for a busy machine and still fails anything quadratic.
TEXT_GROWTH_BOUND = 30.0


def hostile_text(token: str, size: int) -> str:
    """``token`` repeated to exactly ``size`` characters."""
    return (token * (size // len(token) + 1))[:size]


def text_growth(reader: Callable[[str], object], token: str) -> float:
    """How many times more CPU time ``reader`` takes on TEXT_LARGE characters of the token
    than on TEXT_SMALL. The large input runs once (one run already costs ten small ones); the
    small input's lesser time of two is the yardstick."""
    return growth(
        lambda size: hostile_text(token, size),
        reader,  # type: ignore[arg-type]
        small=TEXT_SMALL,
        large=TEXT_LARGE,
        small_repeat=2,
        large_repeat=1,
    )


def assert_reader_linear(reader: Callable[[str], object], token: str, *, attempts: int = 3) -> None:
    """Fail unless ``reader``'s cost from 10 KB to 100 KB of ``token`` grows under
    TEXT_GROWTH_BOUND times (retried: a quadratic reader exceeds it every time)."""
    ratios = []
    for _ in range(attempts):
        ratios.append(text_growth(reader, token))
        if ratios[-1] < TEXT_GROWTH_BOUND:
            return
    raise AssertionError(
        f"{getattr(reader, '__name__', reader)} on {token!r}: cost grew "
        f"{', '.join(f'{r:.0f}' for r in ratios)} times from {TEXT_SMALL:,} to "
        f"{TEXT_LARGE:,} characters (linear: about 10, bound {TEXT_GROWTH_BOUND:.0f})"
    )
