"""Segment a guideline document (Markdown, HTML, PDF-extracted text) into candidate units."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from typing import Final, Literal

from clinical.rules import KEY_PATTERN
from knowledge.ingest._html import html_events
from knowledge.ingest._markdown import markdown_events
from knowledge.ingest._model import Block, Event, Heading, IngestError, normalise_ws
from knowledge.ingest._pages import split_lines
from knowledge.ingest._text import text_events
from knowledge.ingest.rules import (
    find_native_grade,
    is_grade_tail,
    split_statements,
    suggest_cancer_type,
    suggest_kind,
)

__all__ = [
    "MAX_INPUT_BYTES",
    "Candidate",
    "Format",
    "IngestError",
    "fingerprint",
    "segment_document",
]

Format = Literal["markdown", "html", "text"]
FORMATS: Final = ("markdown", "html", "text")
MAX_INPUT_BYTES: Final = 20 * 1024 * 1024
MAX_ANCHOR_CHARS: Final = 200  # UnitSpec.anchor's limit, so an anchor can be used as is

# Sections whose whole content is navigation or bibliography, never a recommendation.
_BOILERPLATE_TITLE: Final = re.compile(
    r"^(?:\d{1,2}(?:\.\d{1,2})*\.?\s+)?(?:references?|bibliography|literature cited|"
    r"works cited|reference list|(?:table of )?contents)\s*:?$",
    re.IGNORECASE,
)
_NUMBERED_TITLE: Final = re.compile(r"^\d{1,2}(?:\.\d{1,2})*\.?\s")
_LETTER: Final = re.compile(r"[^\W\d_]")
_PAGE_LINE: Final = re.compile(r"^(?:page|p\.)\s*\d+(?:\s*(?:of|/)\s*\d+)?$", re.IGNORECASE)
# "12. Smith J, Jones AB, et al. Title. J Clin Oncol 2021;39:1-10." outside a References
# section: an author list with initials and a journal citation (year;volume, doi or PMID).
_CITATION_START: Final = re.compile(
    r"^(?:\[\d{1,4}\]|\d{1,4}[.)])?\s*[A-Z][A-Za-z'\u2019-]+(?: [A-Z][A-Za-z'\u2019-]+)? "
    r"[A-Z]{1,3}(?:,|\.|\s+et al)"
)
_CITATION_SOURCE: Final = re.compile(
    r"\b(?:19|20)\d{2}\s*[;:]\s*\d|\bdoi\b|\bPMID\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A draft knowledge-base unit: one atomic statement of the source, with provenance.

    ``text`` is the statement exactly as written, whitespace-normalised (table rows read
    "Header: value | Header: value"). ``native_grade`` is a grade label copied verbatim.
    ``suggested_kind`` and ``suggested_cancer_type`` are keyword-rule guesses for the
    curator, values of :class:`~knowledge.bundle.UnitKind` and
    :class:`~clinical.vocab.UnitCancerType`. ``fingerprint`` depends on the text alone, so a
    re-import recognises an unchanged statement even when it moved.
    """

    anchor: str
    heading_path: tuple[str, ...]
    text: str
    native_grade: str | None
    suggested_kind: str | None
    suggested_cancer_type: str | None
    source_key: str
    fingerprint: str


def fingerprint(text: str) -> str:
    """SHA-256 of the NFKC, whitespace-normalised text (ligatures and odd spaces from PDF
    extraction do not change it; wording, case and punctuation do)."""
    normal = normalise_ws(unicodedata.normalize("NFKC", text))
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def segment_document(text: str, *, fmt: Format, source_key: str) -> list[Candidate]:
    """Split a guideline document into candidate statements, in document order.

    Deterministic (same input, same candidates, byte for byte) and offline: nothing is
    fetched, HTML is only tokenised. Raises :class:`IngestError` for input over
    ``MAX_INPUT_BYTES``, non-text input, an unknown format or a malformed source key.
    """
    if not isinstance(text, str):
        raise IngestError(f"document must be text (str), not {type(text).__name__}")
    if fmt not in FORMATS:
        raise IngestError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if not isinstance(source_key, str) or not re.match(KEY_PATTERN, source_key):
        raise IngestError(f"source key {source_key!r} does not match {KEY_PATTERN}")
    # Characters are at most 4 bytes in UTF-8: only a long text needs the exact count.
    if len(text) > MAX_INPUT_BYTES or (
        len(text) * 4 > MAX_INPUT_BYTES
        and len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES
    ):
        raise IngestError(
            f"document is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB; "
            "split it into chapters and import them separately"
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    events: list[Event]
    if fmt == "html":
        events = html_events(text)
    elif fmt == "markdown":
        events = markdown_events(split_lines(text))
    else:
        events = text_events(split_lines(text))
    return _Assembler(source_key).run(events)


@dataclass(slots=True)
class _Draft:
    anchor: str
    heading_path: tuple[str, ...]
    section: str
    text: str
    mergeable: bool  # a paragraph or list item a following grade line may attach to


def _section_label(path: tuple[str, ...]) -> str:
    # A numbered heading ("5.2 Treatment …") locates itself in the document; an unnumbered
    # one needs its ancestors to be found.
    if not path:
        return ""
    if _NUMBERED_TITLE.match(path[-1]):
        return path[-1]
    return " > ".join(path)


def _anchor(path: tuple[str, ...], locator: str, page: int | None) -> str:
    tail = locator + (f", p. {page}" if page is not None else "")
    label = _section_label(path)
    if not label:
        return tail
    anchor = f"§ {label} > {tail}"
    if len(anchor) <= MAX_ANCHOR_CHARS:
        return anchor
    # Too long for a unit's anchor: keep the deepest headings, eliding ancestors.
    room = MAX_ANCHOR_CHARS - len(tail) - len("§ … >  > ")
    kept: list[str] = []
    for heading in reversed(path):
        if sum(len(h) + 3 for h in kept) + len(heading) > room:
            break
        kept.insert(0, heading)
    if not kept:
        return f"§ {path[-1][: max(1, room)]}… > {tail}"[:MAX_ANCHOR_CHARS]
    return f"§ … > {' > '.join(kept)} > {tail}"


def _ends_with_toc_leader(text: str) -> bool:
    """True for a contents line: ". . . . 12" or "…… 12" (dot leaders, then a page number).

    Scanned from the end by hand: the regex it replaces, unanchored at the start, retried
    every dot of a long run of dots and took seconds on 30 KB of them.
    """
    end = len(text) - 1 if text.endswith("\n") else len(text)
    digits = end
    while digits > 0 and text[digits - 1].isdecimal():
        digits -= 1
    if not 1 <= end - digits <= 4:
        return False
    position = digits
    while position > 0 and text[position - 1].isspace():
        position -= 1
    if position > 0 and text[position - 1] == "\u2026":
        return True
    dots = 0  # each dot may be followed by one space: ". . . ." as well as "...."
    while position > 0 and dots < 4:
        if text[position - 1] == ".":
            position -= 1
        elif position > 1 and text[position - 1].isspace() and text[position - 2] == ".":
            position -= 2
        else:
            break
        dots += 1
    return dots >= 4


def _is_boilerplate(text: str) -> bool:
    if not _LETTER.search(text):
        return True  # page numbers, rules, stray punctuation
    if _PAGE_LINE.match(text) or _ends_with_toc_leader(text):
        return True
    return bool(_CITATION_START.match(text) and _CITATION_SOURCE.search(text))


class _Assembler:
    def __init__(self, source_key: str) -> None:
        self._source_key = source_key
        self._stack: list[tuple[int, str]] = []
        self._path: tuple[str, ...] = ()
        self._section = ""
        self._dropping = False  # inside a References / Table of contents section
        self._paragraphs: dict[str, int] = {}
        self._group_index: dict[tuple[str, int], int] = {}
        self._group_counts: dict[tuple[str, str], int] = {}
        self._drafts: list[_Draft] = []

    def run(self, events: list[Event]) -> list[Candidate]:
        for event in events:
            if isinstance(event, Heading):
                self._heading(event)
            else:
                self._block(event)
        return [self._candidate(draft) for draft in self._drafts]

    def _heading(self, heading: Heading) -> None:
        title = normalise_ws(heading.text)
        if not title:
            return
        while self._stack and self._stack[-1][0] >= heading.level:
            self._stack.pop()
        self._stack.append((heading.level, title))
        self._path = tuple(text for _, text in self._stack)
        self._section = _section_label(self._path)
        self._dropping = any(_BOILERPLATE_TITLE.match(text) for text in self._path)

    def _block(self, block: Block) -> None:
        text = normalise_ws(block.text)
        locator = self._locator(block)
        if self._dropping or not text:
            return
        if block.kind == "para" and _BOILERPLATE_TITLE.match(text):
            # "References" written as a bold line instead of a heading: drop what follows it
            # up to the next heading, as for a real one.
            self._dropping = True
            return
        if _is_boilerplate(text):
            return
        previous = self._drafts[-1] if self._drafts else None
        if (
            block.kind != "row"
            and previous is not None
            and previous.mergeable
            and previous.section == self._section
            and is_grade_tail(text)
        ):
            previous.text = f"{previous.text} {text}"  # the grade line right after a statement
            return
        pieces = split_statements(text) if block.kind != "row" else [text]
        for number, piece in enumerate(pieces, start=1):
            where = locator if len(pieces) == 1 else f"{locator} s{number}"
            self._drafts.append(
                _Draft(
                    anchor=_anchor(self._path, where, block.page),
                    heading_path=self._path,
                    section=self._section,
                    text=piece,
                    mergeable=block.kind != "row",
                )
            )

    def _locator(self, block: Block) -> str:
        # Counters are per displayed section label, so two anchors never coincide even when
        # a heading recurs (a "(continued)" heading repeats the same label).
        if block.kind == "para":
            count = self._paragraphs.get(self._section, 0) + 1
            self._paragraphs[self._section] = count
            return f"¶{count}"
        key = (self._section, block.group)
        index = self._group_index.get(key)
        if index is None:
            count_key = (self._section, block.kind)
            index = self._group_counts.get(count_key, 0) + 1
            self._group_counts[count_key] = index
            self._group_index[key] = index
        if block.kind == "item":
            return f"list {index} item {block.seq}"
        return f"table {index} row {block.seq}"

    def _candidate(self, draft: _Draft) -> Candidate:
        kind = suggest_kind(draft.text)
        return Candidate(
            anchor=draft.anchor,
            heading_path=draft.heading_path,
            text=draft.text,
            native_grade=find_native_grade(draft.text),
            suggested_kind=kind,
            suggested_cancer_type=suggest_cancer_type(draft.text, draft.heading_path, kind=kind),
            source_key=self._source_key,
            fingerprint=fingerprint(draft.text),
        )
