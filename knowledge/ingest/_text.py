"""Plain-text reader for PDF-extracted guidelines: numbered headings, bullets, aligned tables."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from knowledge.ingest._model import (
    Block,
    Event,
    Heading,
    ends_sentence,
    format_row,
    join_lines,
    normalise_ws,
)
from knowledge.ingest._pages import Line
from knowledge.ingest.rules import has_recommendation_verb

_NUMBERED_HEADING: Final = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,5})\.?[ \t]+(\S.*)$")
_SPECIAL_HEADING: Final = re.compile(
    r"^(?:(\d{1,2}(?:\.\d{1,2}){0,5})\.?[ \t]+)?"
    r"(references?|bibliography|literature cited|works cited|reference list|"
    r"(?:table of )?contents)[ \t]*:?$",
    re.IGNORECASE,
)
# "5.2 Treatment of early-stage disease ........ 12" (leaders optional) in a table of contents.
_TOC_ENTRY: Final = re.compile(
    r"^\S.{0,200}?(?:[ \t]*(?:\.[ \t]?){2,}|[ \t]*\u2026+|[ \t])[ \t]*\d{1,4}$"
)
_BULLET: Final = re.compile(
    r"^[\u2022\u25cf\u25aa\u25e6\u2023\u2043\u2219\u00b7\u2013*o-][ \t]+(\S.*)$"
)
_NUMBERED_ITEM: Final = re.compile(r"^(?:\(?\d{1,3}[.)]|\(?[a-z][.)]|\([ivx]{1,5}\))[ \t]+(\S.*)$")
_COLUMN_GAP: Final = re.compile(r"\t|[ \t]{2,}")
MAX_HEADING_CHARS: Final = 120
MAX_HEADING_WORDS: Final = 14


def _plausible(previous: tuple[int, ...] | None, number: tuple[int, ...]) -> bool:
    """Whether ``number`` can follow the previous numbered heading.

    PDF text is full of lines that start with a number ("2 cycles of …"); a heading must
    continue the outline (a first child, or a next sibling at some level, allowing a couple
    of sections the extraction lost), which such lines almost never do.
    """
    if previous is None:
        return True
    if len(number) == len(previous) + 1 and number[:-1] == previous:
        return 1 <= number[-1] <= 3
    depth = len(number) - 1
    return (
        depth < len(previous)
        and number[:depth] == previous[:depth]
        and 1 <= number[depth] - previous[depth] <= 3
    )


def _is_caps_heading(line: str) -> bool:
    letters = sum(1 for char in line if char.isalpha())
    return (
        letters >= 4
        and line.isupper()
        and len(line.split()) <= 10
        and not line.endswith((".", ",", ";"))
    )


class _Reader:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._para: list[str] = []
        self._para_page: int | None = None
        self._item: list[str] | None = None
        self._item_page: int | None = None
        self._groups = 0
        self._list_group = 0
        self._list_seq = 0
        self._number: tuple[int, ...] | None = None  # the last numbered heading
        self._level = 0
        self._in_toc = False
        self._headings = 0

    def run(self, lines: Sequence[Line]) -> list[Event]:
        block_start = True
        for line in lines:
            stripped = line.text.strip()
            if not stripped:
                self._end_block()
                block_start = True
                continue
            if line.page_start and self._open_block_ends_sentence():
                self._end_block()
            starts = block_start or line.page_start
            block_start = False
            if self._in_toc:
                if _TOC_ENTRY.match(stripped):
                    continue  # entries repeat the headings; reading them would fake an outline
                self._in_toc = False
            if starts:
                heading = self._heading(stripped, line.page)
                if heading is not None:
                    self._headings += 1
                    self._end_block()
                    self._list_group = 0
                    self.events.append(heading)
                    block_start = True  # a heading may be followed by text on the next line
                    continue
            item = _BULLET.match(stripped) or _NUMBERED_ITEM.match(stripped)
            if item is not None:
                self._end_block()
                if not self._list_group:
                    self._groups += 1
                    self._list_group = self._groups
                    self._list_seq = 0
                self._item = [item.group(1)]
                self._item_page = line.page
                continue
            if self._item is not None:
                self._item.append(stripped)  # a wrapped line of the item
                continue
            if not self._para:
                self._list_group = 0  # prose after a list ends it
                self._para_page = line.page
            self._para.append(line.text)
        self._end_block()
        return self.events

    def _open_block_ends_sentence(self) -> bool:
        open_lines = self._item if self._item is not None else self._para
        return bool(open_lines) and ends_sentence(open_lines[-1])

    def _heading(self, line: str, page: int | None) -> Heading | None:
        if len(line) > MAX_HEADING_CHARS:
            return None
        special = _SPECIAL_HEADING.match(line)
        if special is not None:
            if special.group(2).casefold().endswith("contents"):
                self._in_toc = True
            if special.group(1):
                return self._numbered(special.group(1), line, page, check=False)
            return Heading(self._level + 1, line, page)
        numbered = _NUMBERED_HEADING.match(line)
        if numbered is not None:
            title = numbered.group(2)
            if (
                title[0].isupper()
                and not title.endswith((".", ",", ";", ":"))
                and len(title.split()) <= MAX_HEADING_WORDS
                and not has_recommendation_verb(title)
            ):
                return self._numbered(numbered.group(1), line, page, check=True)
            return None
        if _is_caps_heading(line):
            if not self._headings:
                # The first heading, in capitals and before any numbered one, is the document
                # title: level 0 keeps it above "1 …", so its words (often the cancer type)
                # stay in every heading path.
                return Heading(0, line, page)
            return Heading(self._level + 1, line, page)
        return None

    def _numbered(self, digits: str, line: str, page: int | None, *, check: bool) -> Heading | None:
        number = tuple(int(part) for part in digits.split("."))
        if check and not _plausible(self._number, number):
            return None
        self._number = number
        self._level = len(number)
        return Heading(len(number), line, page)

    def _end_block(self) -> None:
        if self._para:
            self._emit_para(self._para, self._para_page)
            self._para = []
        if self._item is not None:
            self._list_seq += 1
            text = join_lines(self._item)
            if text:
                self.events.append(
                    Block("item", text, self._item_page, self._list_group, self._list_seq)
                )
            self._item = None

    def _emit_para(self, lines: list[str], page: int | None) -> None:
        rows = [[normalise_ws(cell) for cell in _COLUMN_GAP.split(line.strip())] for line in lines]
        width = len(rows[0])
        # Column-aligned lines (pdftotext -layout) are a table: a header line and at least two
        # rows with the same number of cells. Justified prose rarely keeps the same count of
        # wide gaps on three lines, and its first line is not a row of short labels.
        if (
            len(rows) >= 3
            and 2 <= width <= 20
            and all(len(row) == width for row in rows)
            and all(len(cell) <= 40 and not cell.endswith(".") for cell in rows[0])
            and not has_recommendation_verb(lines[0])
        ):
            self._groups += 1
            header = rows[0]
            for seq, cells in enumerate(rows[1:], start=1):
                text = format_row(zip(header, cells, strict=True))
                if text:
                    self.events.append(Block("row", text, page, self._groups, seq))
            return
        text = join_lines(lines)
        if text:
            self.events.append(Block("para", text, page))


def text_events(lines: Sequence[Line]) -> list[Event]:
    return _Reader().run(lines)
