"""Markdown reader: headings, paragraphs, list items and pipe tables as segmenter events."""

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

_ATX: Final = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
_SETEXT: Final = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC: Final = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_QUOTES: Final = re.compile(r"^(?: {0,3}>[ \t]?)+")
_LIST_ITEM: Final = re.compile(r"^([ \t]*)(?:[-*+\u2022]|\d{1,9}[.)])[ \t]+(\S.*)$")
_LINK_DEFINITION: Final = re.compile(r"^ {0,3}\[[^\]^]{1,200}\]:[ \t]*\S+(?:[ \t]+\S.*)?$")
# One cell of a table's delimiter row ("---", ":--", "-:", ":-:"), spaces already stripped.
_DELIMITER_CELL: Final = re.compile(r":?-+:?")
_CELL_SPLIT: Final = re.compile(r"(?<!\\)\|")

# Inline markup. Quantifiers are bounded so that an unclosed marker in a huge paragraph cannot
# make a pattern rescan the rest of the text from every position.
_IMAGE: Final = re.compile(r"!\[([^\[\]]{0,500})\]\([^()\s]{0,2000}(?:\s+\"[^\"]{0,500}\")?\)")
_LINK: Final = re.compile(r"\[([^\[\]]{1,500})\]\([^()\s]{0,2000}(?:\s+\"[^\"]{0,500}\")?\)")
_REF_LINK: Final = re.compile(r"\[([^\[\]]{1,500})\]\[[^\[\]]{0,200}\]")
_FOOTNOTE_REF: Final = re.compile(r"\[\^[^\[\]\s]{1,50}\]")
_AUTOLINK: Final = re.compile(r"<((?:https?|mailto):[^<>\s]{1,2000})>")
_STRONG: Final = re.compile(r"(?<!\\)(\*\*|__)(?=\S)([^*_]{1,2000}?)(?<=\S)\1")
_EMPHASIS_STAR: Final = re.compile(r"(?<![\\\w*])\*(?=\S)([^*]{1,2000}?)(?<=\S)\*(?![\w*])")
_EMPHASIS_UNDERSCORE: Final = re.compile(r"(?<![\\\w])_(?=\S)([^_]{1,2000}?)(?<=\S)_(?!\w)")
_STRIKE: Final = re.compile(r"~~([^~]{1,2000})~~")
_CODE: Final = re.compile(r"(?<!\\)`+")
# Only real tag names: clinical text is full of "<ULN" and "<50%" that must survive.
# A comment is found by _strip_inline_html: as "<!--.{0,2000}?-->" it rescanned 2,000
# characters from every "<!--" of a text with no "-->", 15 s for a megabyte of them.
_INLINE_TAG_OR_COMMENT: Final = re.compile(
    r"</?(?:a|abbr|b|br|code|del|div|em|i|img|ins|kbd|mark|p|s|small|span|strong|sub|sup|u)"
    r"(?:\s[^<>]{0,500})?/?>|<!--",
    re.IGNORECASE,
)
MAX_COMMENT_CHARS: Final = 2000
_ESCAPE: Final = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")
# Most lines carry no markup at all; they skip the dozen substitutions below.
_MARKUP: Final = re.compile(r"[*_\[<`\\~]")


def _strip_inline_html(text: str) -> str:
    """Each inline tag, and each one-line comment of at most 2,000 characters, replaced by a
    space; in linear time (the next "-->" and line break are looked up once, not per "<!--")."""
    out: list[str] = []
    position = 0
    search_from = 0
    close = newline = -1  # the next "-->" and "\n" at or after the last place looked
    while (match := _INLINE_TAG_OR_COMMENT.search(text, search_from)) is not None:
        start, end = match.span()
        if match.group() == "<!--":
            if close < end:
                close = text.find("-->", end)
                if close < 0:  # none left: every later "<!--" is too long
                    close = len(text) + MAX_COMMENT_CHARS + 1
            if newline < end:
                newline = text.find("\n", end)
                newline = len(text) if newline < 0 else newline
            if close - end > MAX_COMMENT_CHARS or newline < close:
                search_from = start + 1
                continue
            end = close + 3
        out.append(text[position:start])
        out.append(" ")
        position = search_from = end
    out.append(text[position:])
    return "".join(out)


def clean_inline(text: str) -> str:
    """Markdown inline markup removed; the words the reader sees are kept in order."""
    if _MARKUP.search(text) is None:
        return normalise_ws(text)
    text = _strip_inline_html(text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _REF_LINK.sub(r"\1", text)
    text = _FOOTNOTE_REF.sub("", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPHASIS_STAR.sub(r"\1", text)
    text = _EMPHASIS_UNDERSCORE.sub(r"\1", text)
    text = _STRIKE.sub(r"\1", text)
    text = _CODE.sub("", text)
    text = _ESCAPE.sub(r"\1", text)
    return normalise_ws(text)


# The closing sequence of an ATX heading and the delimiter row of a table are recognised by
# hand: as regexes anchored at the end of the line ("[ \t]+#+[ \t]*$") they retried every
# position of a long run of spaces, and 30 KB of them stalled the worker for seconds.


def _strip_atx_close(title: str) -> str:
    """``title`` without a closing "  ##" (CommonMark: spaces, then #s, then spaces)."""
    body = title.rstrip(" \t")
    hashes = body.rstrip("#")
    if hashes == body or not hashes.endswith((" ", "\t")):
        return title
    return hashes.rstrip(" \t")


def _is_table_delimiter(line: str) -> bool:
    """True for a delimiter row such as "| --- | :-: |" (the outer pipes are optional)."""
    body = line.strip(" \t")
    body = body.removeprefix("|")
    if body.endswith("|"):
        body = body[:-1]
    return all(_DELIMITER_CELL.fullmatch(cell.strip(" \t")) for cell in body.split("|"))


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [clean_inline(cell) for cell in _CELL_SPLIT.split(body)]


class _Reader:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self._para: list[str] = []
        self._para_page: int | None = None
        self._item: list[str] | None = None
        self._item_page: int | None = None
        self._blank_in_item = False
        self._groups = 0
        self._list_group = 0  # 0: not inside a list
        self._list_seq = 0
        self._fence: str | None = None
        self._fence_lines: list[str] = []
        self._fence_page: int | None = None
        self._quoted = False

    def run(self, lines: Sequence[Line]) -> list[Event]:
        index = 0
        while index < len(lines):
            index = self._line(lines, index)
        if self._fence is not None:
            self._end_fence()
        self._end_all()
        return self.events

    def _line(self, lines: Sequence[Line], index: int) -> int:
        line = lines[index]
        text = line.text
        quote = _QUOTES.match(text)  # "> > text": nested quote markers all go at once
        quoted = quote is not None
        if quote is not None:
            text = text[quote.end() :]
        if self._fence is not None:
            if text.strip().startswith(self._fence):
                self._end_fence()
            else:
                self._fence_lines.append(text)
            return index + 1
        if quoted != self._quoted:  # entering or leaving a quote box separates blocks
            self._end_all()
            self._quoted = quoted
        stripped = text.strip()
        if line.page_start:
            if self._para and ends_sentence(self._para[-1]):
                self._end_para()
            if self._item is not None and ends_sentence(self._item[-1]):
                self._end_item()
        if not stripped:
            self._end_para()
            if self._item is not None:
                self._blank_in_item = True
            return index + 1
        fence = _FENCE.match(text)
        if fence is not None:
            self._end_all()
            self._fence = fence.group(1)[:3]
            self._fence_page = line.page
            return index + 1
        atx = _ATX.match(text)
        if atx is not None:
            self._end_all()
            title = _strip_atx_close(text[atx.end() :])
            if title.strip() == "#" * len(title.strip()):
                title = ""  # "## ##": an empty heading
            self._heading(len(atx.group(1)), title, line.page)
            return index + 1
        setext = _SETEXT.match(text)
        if setext is not None and len(self._para) == 1 and self._item is None:
            title = self._para[0]
            self._para = []
            self._heading(1 if setext.group(1)[0] == "=" else 2, title, self._para_page)
            return index + 1
        if _THEMATIC.match(text):
            self._end_all()
            return index + 1
        if (
            "|" in stripped
            and index + 1 < len(lines)
            and _is_table_delimiter(lines[index + 1].text)
            and "|" in lines[index + 1].text
        ):
            header = _cells(text)
            if len(header) == len(_cells(lines[index + 1].text)):
                self._end_all()
                return self._table(lines, index, header)
        if _LINK_DEFINITION.match(text):
            return index + 1  # "[1]: https://…" is a link target, not prose
        item = _LIST_ITEM.match(text)
        if item is not None:
            self._end_para()
            self._end_item()
            if not self._list_group:
                self._groups += 1
                self._list_group = self._groups
                self._list_seq = 0
            self._item = [item.group(2)]
            self._item_page = line.page
            self._blank_in_item = False
            return index + 1
        if self._item is not None:
            indent = len(text) - len(text.lstrip(" \t"))
            if not self._blank_in_item or indent >= 2:
                self._item.append(stripped)  # a wrapped line or a continuation paragraph
                self._blank_in_item = False
                return index + 1
            self._end_item()
            self._list_group = 0
        elif self._list_group and not self._para:
            self._list_group = 0
        if not self._para:
            self._para_page = line.page
        self._para.append(stripped)
        return index + 1

    def _table(self, lines: Sequence[Line], index: int, header: list[str]) -> int:
        self._groups += 1
        group = self._groups
        index += 2
        seq = 0
        while index < len(lines):
            row_line = lines[index].text
            if not row_line.strip() or "|" not in row_line:
                break
            seq += 1
            cells = _cells(row_line)
            text = format_row(
                (header[i] if i < len(header) else "", cell) for i, cell in enumerate(cells)
            )
            self._emit(Block("row", text, lines[index].page, group, seq))
            index += 1
        return index

    def _heading(self, level: int, title: str, page: int | None) -> None:
        text = clean_inline(title)
        if text:
            self.events.append(Heading(level, text, page))

    def _emit(self, block: Block) -> None:
        if block.text:
            self.events.append(block)

    def _end_para(self) -> None:
        if self._para:
            self._emit(Block("para", clean_inline(join_lines(self._para)), self._para_page))
            self._para = []

    def _end_item(self) -> None:
        if self._item is not None:
            self._list_seq += 1
            text = clean_inline(join_lines(self._item))
            self._emit(Block("item", text, self._item_page, self._list_group, self._list_seq))
            self._item = None
            self._blank_in_item = False

    def _end_all(self) -> None:
        self._end_para()
        self._end_item()
        self._list_group = 0

    def _end_fence(self) -> None:
        self._fence = None
        lines, self._fence_lines = self._fence_lines, []
        self._emit(Block("para", normalise_ws(" ".join(lines)), self._fence_page))


def markdown_events(lines: Sequence[Line]) -> list[Event]:
    return _Reader().run(lines)
