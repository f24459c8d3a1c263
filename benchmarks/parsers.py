"""Parser worst cases: the hostile inputs that once froze the server, at the 1 MiB upload cap.

The same inputs drive the linearity tests (tests/consult/unit/test_casefile_validate.py,
tests/knowledge/unit/test_ingest_segment.py), which compare the cost at a quarter of the size
with the cost at the full size; here the full-size time is printed against the issue's bound
of one second, which a test on a shared, loaded machine cannot assert without flaking.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

from benchmarks.common import emit

if TYPE_CHECKING:
    from knowledge.ingest import Format

MIB = 1024 * 1024

# Case files (consult/casefile/validate.py, the depth pre-scan before json.loads): each is a
# function of the size in bytes. 30 KB of escaped quotes used to hold every request for 9.5 s.
CASEFILE_WORST: dict[str, Callable[[int], bytes]] = {
    "unterminated-escaped-quotes": lambda size: b'"' + b'\\"' * (size // 2 - 1),
    "escaped-quotes": lambda size: b'\\"' * (size // 2),
    "bare-quotes": lambda size: b'"' * size,
    "quote-backslash": lambda size: b'"\\' * (size // 2),
}

# Guideline documents (knowledge/ingest, the whole segmenter): (text of about ``size``
# characters, format). End-anchored patterns retried at every position, hours for a megabyte.
MARKUP_WORST: dict[str, tuple[Callable[[int], str], Format]] = {
    "atx-heading-spaces": (lambda size: "# Title" + " " * size + "x\n", "markdown"),
    "atx-heading-tabs": (lambda size: "# Title" + " \t" * (size // 2) + "#x\n", "markdown"),
    "table-delimiter-indent": (lambda size: "a | b\n" + " " * size + "| x\n", "markdown"),
    "table-delimiter-cell": (lambda size: "a | b\n|-" + " " * size + "x\n", "markdown"),
    "toc-dots": (lambda size: "Contents " + "." * size + "x\n", "markdown"),
    "toc-spaced-dots": (lambda size: "Contents " + ". " * (size // 2) + "x\n", "text"),
    "toc-ellipsis": (lambda size: "Contents " + "\u2026" * size + "x\n", "text"),
    "unclosed-comments": (lambda size: "<!--" * (size // 4) + "\n", "markdown"),
    "comments-closed-too-late": (lambda size: "<!-- " * (size // 5) + "-->\n", "markdown"),
}


def parse_casefile(raw: bytes) -> None:
    from consult.casefile.validate import parse_case_bytes

    parse_case_bytes(raw, filename="hostile.json", today=date(2026, 1, 1))


def segment_markup(text: str, fmt: Format) -> None:
    from knowledge.ingest import segment_document

    segment_document(text, fmt=fmt, source_key="hostile-1")


def _seconds(fn: Callable[[], None]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def run() -> None:
    # The slowest input of each kind, input built beforehand (only the parsing is timed).
    casefile_s = []
    for make in CASEFILE_WORST.values():
        raw = make(MIB)
        casefile_s.append(_seconds(lambda raw=raw: parse_casefile(raw)))
    emit("casefile_hostile_1mib_worst", max(casefile_s) * 1000, "ms", "< 1000 ms")
    markup_s = []
    for make_text, fmt in MARKUP_WORST.values():
        text = make_text(MIB)
        markup_s.append(_seconds(lambda text=text, fmt=fmt: segment_markup(text, fmt)))
    emit("ingest_hostile_1mib_worst", max(markup_s) * 1000, "ms", "< 1000 ms")
