"""What a reader sees of a rendered page: its text without markup, scripts or styles, and
the internal names that must never be part of it."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Knowledge-base unit ids ("hcc.ci.bevacizumab-untreated-varices"), case-file paths
# ("organ_function.lvef_pct"), and the engine's keys ("acute_0_3m", "albi_grade",
# "needs_data", "waits_for"): none of them is a word a clinician reads.
UNIT_ID = re.compile(r"\b(?:hcc|lung|breast|lymph|common)\.[a-z]+\.[a-z0-9-]+")
FIELD_PATH = re.compile(
    r"\b(?:derived|patient|diagnosis|index_lesion|staging|biomarkers|labs|organ_function)"
    r"\.[a-z0-9_]+\b"
)
SNAKE_KEY = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def page_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return re.sub(r"\s+", " ", "".join(parser.parts)).strip()


def internal_names(text: str) -> list[str]:
    """Every internal name in ``text`` (empty when it reads clinically)."""
    return sorted(
        {m.group(0) for pattern in (UNIT_ID, FIELD_PATH, SNAKE_KEY) for m in pattern.finditer(text)}
    )
