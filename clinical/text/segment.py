"""Sentences of clinical free text, each of bounded length: the unit the reader works on.

ConText compares every modifier with every other and with every target of a document, so its
cost grows with the square of what one document holds. The reader therefore never hands it
more than one sentence, and a sentence never longer than MAX_SENTENCE_CHARS: a note without
any full stop (a pasted list, a hostile 100 KB of one token) is cut at a comma or a space near
the limit, or hard at the limit. Both passes are single scans, so the whole reading stays
linear in the length of the text.
"""

from __future__ import annotations

import re
from typing import Final

MAX_SENTENCE_CHARS: Final = 400

# A sentence ends at a line break, a semicolon, or ".", "!" or "?" followed by white space or
# the end, unless the full stop closes an abbreviation ("Dr.", "e.g.", "vs.", a single letter
# as in "H. pylori") or sits inside a number ("1.5").
_BREAK: Final = re.compile(r"\n|;|[.!?](?=\s|$)")
_ABBREVIATION: Final = re.compile(
    r"(?:\b[A-Za-z]|\b(?:Dr|Mr|Mrs|Ms|Prof|vs|approx|e\.g|i\.e|cf|etc|no|Fig|St|wk|wks|mo|yr)"
    r")$",
    re.IGNORECASE,
)
_SOFT_BREAK: Final = re.compile(r"[,\s]")


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` in pieces of at most MAX_SENTENCE_CHARS, cut at a comma or a space
    in the last quarter of each piece when there is one."""
    pieces = []
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        floor = limit - MAX_SENTENCE_CHARS // 4
        cut = limit
        # Look back from the limit for a soft break (bounded: a quarter of the limit).
        for i in range(limit - 1, floor - 1, -1):
            if _SOFT_BREAK.match(text, i):
                cut = i + 1
                break
        pieces.append((start, cut))
        start = cut
    pieces.append((start, end))
    return pieces


def sentences(text: str) -> list[tuple[int, int]]:
    """The (start, end) character offsets of the sentences of ``text``, white space trimmed,
    none empty and none longer than MAX_SENTENCE_CHARS."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _BREAK.finditer(text):
        if match.group() == "." and _ABBREVIATION.search(
            text, max(start, match.start() - 8), match.start()
        ):
            continue
        spans.extend(_cut(text, start, match.end()))
        start = match.end()
    spans.extend(_cut(text, start, len(text)))
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            trimmed.append((s, e))
    return trimmed
