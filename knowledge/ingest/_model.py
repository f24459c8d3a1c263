"""Format-neutral events that the document readers emit and the segmenter consumes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal


class IngestError(ValueError):
    """The document cannot be segmented: too large, not text, or an unknown format."""


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    page: int | None


BlockKind = Literal["para", "item", "row"]


@dataclass(frozen=True, slots=True)
class Block:
    """One atomic piece of body text in reading order.

    ``group`` numbers the list or table the block belongs to (document-wide, 0 for a
    paragraph) and ``seq`` is its 1-based item or row number inside that group, so anchors
    point at the position in the source even when neighbouring rows are dropped.
    """

    kind: BlockKind
    text: str
    page: int | None
    group: int = 0
    seq: int = 0


Event = Heading | Block

# Soft hyphens and zero-width characters are invisible in the source, so removing them is
# whitespace normalisation, not rewording; PDF extraction sprinkles them inside words.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")


def normalise_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(_INVISIBLE.sub("", text).split())


def join_lines(lines: Sequence[str]) -> str:
    """Join wrapped lines; a word broken at a line-end hyphen is rejoined keeping the hyphen."""
    parts: list[str] = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        # "recom-" + "mended": drop only the line break. Keeping the hyphen never invents a
        # word, and it stays right for "well-" + "differentiated".
        previous = parts[-1] if parts else ""
        if (
            len(previous) > 1
            and previous[-1] == "-"
            and previous[-2].isalpha()
            and line[0].islower()
        ):
            parts[-1] += line
            continue
        parts.append(line)
    return normalise_ws(" ".join(parts))


_SENTENCE_END = re.compile(r"[.!?:][\"'\u201d\u2019)\]]*$")


def ends_sentence(line: str) -> bool:
    """Whether a line ends a sentence: at a page break, that ends the paragraph too, whereas
    a paragraph cut mid-sentence by the break continues on the next page."""
    return _SENTENCE_END.search(line.rstrip()) is not None


def format_row(pairs: Iterable[tuple[str, str]]) -> str:
    """A table row as "Header: value | Header: value"; empty cells are left out."""
    out: list[str] = []
    for header, value in pairs:
        if not value:
            continue
        label = header.rstrip(":").strip()
        out.append(f"{label}: {value}" if label and label != value else value)
    return " | ".join(out)
