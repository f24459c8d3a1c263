"""HTML reader on the standard library's ``html.parser``: no fetching, no script execution."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Final

from knowledge.ingest._model import Block, Event, Heading, format_row, normalise_ws

# Content that is never guideline prose. "head" holds the <title>, which repeats the h1.
_SKIP: Final = frozenset(
    {"script", "style", "nav", "noscript", "template", "head", "title", "svg", "iframe", "object"}
)
_VOID: Final = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr",
    }
)  # fmt: skip
_HEADINGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS: Final = frozenset({"ul", "ol", "menu"})
_BLOCKS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hgroup", "html", "li", "main", "p", "pre", "section", "summary",
    }
)  # fmt: skip
# Spans beyond these are clamped: they only align cells with headers, and a hostile
# colspan="100000" must not make one row cost a hundred thousand steps.
MAX_SPAN: Final = 50
MAX_COLUMNS: Final = 500


@dataclass(slots=True)
class _Cell:
    header: bool
    colspan: int
    rowspan: int
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Row:
    in_thead: bool
    cells: list[_Cell] = field(default_factory=list)


@dataclass(slots=True)
class _Table:
    group: int
    rows: list[_Row] = field(default_factory=list)
    row: _Row | None = None
    cell: _Cell | None = None
    in_thead: bool = False
    caption: list[str] | None = None


def _span(attrs: list[tuple[str, str | None]], name: str) -> int:
    """A colspan/rowspan: 1 unless it is a plain ASCII number, at most MAX_SPAN. ``isdigit``
    alone would let "²" through to ``int``, and a number thousands of digits long is only
    capped, never converted."""
    for key, value in attrs:
        if key == name and value is not None:
            digits = value.strip()
            if digits.isascii() and digits.isdigit():
                significant = digits.lstrip("0") or "0"
                if len(significant) > len(str(MAX_SPAN)):
                    return MAX_SPAN
                return max(1, min(int(significant), MAX_SPAN))
    return 1


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[Event] = []
        self._skip: dict[str, int] = {}
        self._skipping = 0
        self._buf: list[str] = []
        self._heading = 0  # level of the open heading, 0 when none
        self._groups = 0
        self._list_depth = 0
        self._list_group = 0
        self._list_seq = 0
        self._table: _Table | None = None
        self._table_depth = 0

    # --- skipped subtrees -----------------------------------------------------------------
    def _open_skip(self, tag: str) -> None:
        self._skip[tag] = self._skip.get(tag, 0) + 1
        self._skipping += 1

    def _close_skip(self, tag: str, *, all_open: bool = False) -> None:
        open_count = self._skip.get(tag, 0)
        closing = open_count if all_open else min(open_count, 1)
        self._skip[tag] = open_count - closing
        self._skipping -= closing

    # --- tags -----------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._open_skip(tag)
            return
        if tag == "body":
            self._close_skip("head", all_open=True)  # </head> is optional in HTML
        if self._skipping or tag in _VOID:
            if not self._skipping and tag == "br":
                self._text(" ")
            elif not self._skipping and tag == "hr" and not self._table_depth:
                self._boundary()
            return
        if self._table_depth:
            self._table_start(tag, attrs)
            return
        if tag == "table":
            self._boundary()
            self._groups += 1
            self._table = _Table(group=self._groups)
            self._table_depth = 1
        elif tag in _HEADINGS:
            self._boundary()
            self._heading = int(tag[1])
        elif tag in _LISTS:
            self._boundary()
            if not self._list_depth:  # nested lists are numbered as part of the outer one
                self._groups += 1
                self._list_group = self._groups
                self._list_seq = 0
            self._list_depth += 1
        elif tag in _BLOCKS:
            self._block_edge(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._close_skip(tag)
            return
        if self._skipping or tag in _VOID:
            return
        if self._table_depth:
            self._table_end(tag)
        elif tag in _HEADINGS:
            self._boundary()
        elif tag in _LISTS:
            self._boundary()
            self._list_depth = max(0, self._list_depth - 1)
        elif tag in _BLOCKS:
            self._block_edge(tag)

    def _block_edge(self, tag: str) -> None:
        # Inside a list only <li> separates items: the paragraphs of one item stay one item,
        # so "item 3" is still the third item of the source.
        if self._list_depth and tag != "li" and not self._heading:
            self._text(" ")
        else:
            self._boundary()

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self._text(data)

    # --- text -----------------------------------------------------------------------------
    def _text(self, data: str) -> None:
        table = self._table
        if table is None:
            self._buf.append(data)
        elif table.caption is not None:
            table.caption.append(data)
        elif table.cell is not None:
            table.cell.parts.append(data)
        # Whitespace between <tr> and <td> belongs to no cell and is dropped.

    def _boundary(self) -> None:
        text = normalise_ws("".join(self._buf))
        self._buf = []
        if self._heading:
            level, self._heading = self._heading, 0
            if text:
                self.events.append(Heading(level, text, None))
        elif text and self._list_depth:
            self._list_seq += 1
            self.events.append(Block("item", text, None, self._list_group, self._list_seq))
        elif text:
            self.events.append(Block("para", text, None))

    # --- tables ---------------------------------------------------------------------------
    def _table_start(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        table = self._table
        if table is None:  # cannot happen while _table_depth > 0; keeps mypy informed
            return
        if tag == "table":  # a nested table is read as text of the enclosing cell
            self._table_depth += 1
            self._text(" ")
            return
        if self._table_depth > 1:
            self._text(" ")
            return
        if tag == "caption":
            table.caption = []
        elif tag in ("thead", "tbody", "tfoot"):
            self._end_row(table)
            table.in_thead = tag == "thead"
        elif tag == "tr":
            self._end_row(table)
            table.row = _Row(in_thead=table.in_thead)
        elif tag in ("td", "th"):
            self._end_cell(table)
            if table.row is None:
                table.row = _Row(in_thead=table.in_thead)
            table.cell = _Cell(
                header=tag == "th",
                colspan=_span(attrs, "colspan"),
                rowspan=_span(attrs, "rowspan"),
            )
        else:
            self._text(" ")  # <p>, <li>, <div> inside a cell separate words

    def _table_end(self, tag: str) -> None:
        table = self._table
        if table is None:
            return
        if tag == "table":
            self._table_depth -= 1
            if self._table_depth == 0:
                self._end_row(table)
                self._emit_table(table)
                self._table = None
            else:
                self._text(" ")
            return
        if self._table_depth > 1:
            self._text(" ")
            return
        if tag == "caption" and table.caption is not None:
            text = normalise_ws("".join(table.caption))
            table.caption = None
            if text:
                self.events.append(Block("para", text, None))
        elif tag in ("td", "th"):
            self._end_cell(table)
        elif tag in ("tr", "thead", "tbody", "tfoot"):
            self._end_row(table)
            if tag == "thead":
                table.in_thead = False
        else:
            self._text(" ")

    @staticmethod
    def _end_cell(table: _Table) -> None:
        if table.cell is not None and table.row is not None:
            table.row.cells.append(table.cell)
        table.cell = None

    def _end_row(self, table: _Table) -> None:
        self._end_cell(table)
        if table.row is not None and table.row.cells:
            table.rows.append(table.row)
        table.row = None

    def _emit_table(self, table: _Table) -> None:
        grid = _place(table.rows)
        header_count = 0
        if any(row.in_thead for row in table.rows):
            while header_count < len(table.rows) and table.rows[header_count].in_thead:
                header_count += 1
        else:
            while header_count < len(table.rows) and all(
                cell.header for cell in table.rows[header_count].cells
            ):
                header_count += 1
        if header_count == len(table.rows):
            header_count = 0  # a table of header cells only: read its rows without context
        labels: dict[int, list[str]] = {}
        for placed in grid[:header_count]:
            for column, span, text in placed:
                for col in range(column, column + span):
                    column_labels = labels.setdefault(col, [])
                    if text and text not in column_labels:
                        column_labels.append(text)
        for seq, placed in enumerate(grid[header_count:], start=1):
            pairs: list[tuple[str, str]] = []
            for column, span, text in placed:
                names: list[str] = []
                for col in range(column, column + span):
                    for name in labels.get(col, ()):
                        if name not in names:
                            names.append(name)
                pairs.append((" / ".join(names), text))
            row_text = format_row(pairs)
            if row_text:
                self.events.append(Block("row", row_text, None, table.group, seq))

    def finish(self) -> list[Event]:
        self.close()
        if self._table is not None:  # an unclosed <table> at the end of the document
            self._end_row(self._table)
            self._emit_table(self._table)
            self._table = None
        self._boundary()
        return self.events


def _place(rows: list[_Row]) -> list[list[tuple[int, int, str]]]:
    """Each row's cells as (first column, span, text), honouring colspan and rowspan."""
    carried: dict[int, int] = {}  # column -> rows still covered by a rowspan from above
    grid: list[list[tuple[int, int, str]]] = []
    for row in rows:
        placed: list[tuple[int, int, str]] = []
        column = 0
        for cell in row.cells:
            while carried.get(column, 0) > 0 and column < MAX_COLUMNS:
                column += 1
            span = max(1, min(cell.colspan, MAX_COLUMNS - column))
            placed.append((column, span, normalise_ws("".join(cell.parts))))
            if cell.rowspan > 1:
                for col in range(column, column + span):
                    carried[col] = max(carried.get(col, 0), cell.rowspan)
            column = min(column + span, MAX_COLUMNS)
        grid.append(placed)
        # The rows below this one are covered for one row fewer; cells of this row that
        # started a rowspan were counted with their own row included.
        carried = {col: left - 1 for col, left in carried.items() if left > 1}
    return grid


def html_events(text: str) -> list[Event]:
    reader = _Reader()
    reader.feed(text)
    return reader.finish()
