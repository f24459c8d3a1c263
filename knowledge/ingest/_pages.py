"""Page breaks and running headers/footers in PDF-extracted text, removed before parsing."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# "--- page 12 ---", "=== Page 3 of 40 ===": the markers PDF-to-text scripts write.
_PAGE_MARKER = re.compile(
    r"^[ \t]*[-=_*#]{2,}[ \t]*page[ \t]+(\d{1,6})(?:[ \t]*(?:of|/)[ \t]*\d{1,6})?[ \t]*"
    r"[-=_*#]{2,}[ \t]*$",
    re.IGNORECASE,
)
# Keys have digits folded to "#", so "Page 3 of 40" and "Page 4 of 40" are the same key.
_PAGE_NUMBER_KEY = re.compile(
    r"^(?:page|p\.)?\s*[-\u2013(]?\s*#\s*[-\u2013)]?(?:\s*(?:of|/)\s*#)?$"
)
_DIGITS = re.compile(r"\d+")

# Running headers and footers sit in the first and last few lines of a page; looking only
# there keeps a sentence that genuinely recurs in the body from being dropped.
EDGE_LINES = 3
# A line is a running header when it sits at a page edge on at least this share of pages.
RUNNING_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class Line:
    text: str
    page: int | None
    page_start: bool  # first kept line of a page after a break: a block may start here


def _key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.casefold().split()))


def split_lines(text: str) -> list[Line]:
    """Lines with their page number (None when the text has no page breaks), minus page
    markers and the running headers/footers repeated at the edges of most pages."""
    pages: list[tuple[int, list[str]]] = []
    current: list[str] = []
    number = 1
    paged = False
    for line in text.split("\n"):
        parts = line.split("\f")
        for index, part in enumerate(parts):
            if index > 0:  # a form feed: the next page starts here
                paged = True
                pages.append((number, current))
                current = []
                number += 1
            marker = _PAGE_MARKER.match(part)
            if marker is not None:
                paged = True
                if current or pages:
                    pages.append((number, current))
                    current = []
                number = int(marker.group(1))
                continue
            current.append(part)
    pages.append((number, current))

    if not paged:
        return [Line(text=line, page=None, page_start=False) for line in pages[0][1]]

    dropped = _running_lines(pages)
    out: list[Line] = []
    for page_index, (page_number, lines) in enumerate(pages):
        body = [i for i, line in enumerate(lines) if line.strip()]
        edges = set(body[:EDGE_LINES] + body[-EDGE_LINES:])
        first = page_index > 0
        for i, line in enumerate(lines):
            if i in edges:
                key = _key(line)
                if key in dropped or _PAGE_NUMBER_KEY.match(key):
                    continue
            out.append(Line(text=line, page=page_number, page_start=first))
            first = False
    return out


def _running_lines(pages: list[tuple[int, list[str]]]) -> set[str]:
    counts: dict[str, int] = {}
    non_empty = 0
    for _, lines in pages:
        body = [line for line in lines if line.strip()]
        if not body:
            continue
        non_empty += 1
        for key in {_key(line) for line in body[:EDGE_LINES] + body[-EDGE_LINES:]}:
            counts[key] = counts.get(key, 0) + 1
    if non_empty < 2:
        return set()
    threshold = max(2, math.ceil(RUNNING_SHARE * non_empty))
    return {key for key, count in counts.items() if count >= threshold}
