"""A plan item never names a drug that is excluded for this patient: not in its description,
its rationale or its dose notes (applied by the safety gate, ``gate._without_excluded_names``).

The safety gate removes an excluded drug from what an item *gives*; an item that keeps another
drug can still *name* the excluded one ("lenvatinib or sorafenib, whichever was not given
before" after sorafenib was not tolerated), and a clinician reading it sees the drug offered.
This last pass over the finished plan takes the excluded names out: the alternative of the
description that names the drug is dropped ("lenvatinib ..."), lines of the rationale and dose
notes that name it are dropped (the gate's own "Without X: ..." withdrawal note stays: it is the
reason, and it keeps a regimen acronym from giving X again), and an item whose description
cannot be cleaned leaves the plan for the rejected options, with the reason. An alternative
held for when the contraindication has passed ("after delivery") keeps its words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from clinical import lexicon

# Where a description lists alternatives: "A or B", "A, B", "A; B" (outside brackets).
SEPARATORS = ("; ", " or ", ", ")
WITHDRAWN_NOTE = "Without "
# Words that name an option only to set it aside ("unsuited to TACE", "cisplatin-ineligible").
EXCLUDING = re.compile(
    r"\b(?:unsuited|unsuitable|ineligible|not\s+(?:a\s+)?candidates?|instead\s+of|in\s+place\s+of"
    r"|rather\s+than|contraindicat\w*|unfit\s+for|not\s+(?:fit|suitable|eligible)\s+for)\b",
    re.IGNORECASE,
)
# How a plan names a procedure whose modality a rule removed ("unsuited to TACE").
PROCEDURE_WORDS = {
    "locoregional": ("tace", "chemoemboli", "transarterial", "radioemboli", "sirt", "tare"),
    "transplant": ("transplant",),
    "surgery": ("resection", "resect", "hepatectomy", "mastectomy", "lobectomy", "surgery"),
    "radiotherapy": ("radiotherapy", "irradiation", "radiation"),
    "ablation": ("ablation",),
}


@dataclass(frozen=True)
class Excluded:
    """The drugs (canonical generics) and classes excluded for this patient."""

    drugs: frozenset[str] = frozenset()
    classes: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, names: Iterable[str], modalities: Iterable[str] = ()) -> Excluded:
        drugs: set[str] = set()
        classes: set[str] = set()
        for name in names:
            found = lexicon.resolve(name)
            if found is None:
                continue
            drugs |= found[0]
            classes |= found[1]
            for member_class in found[1]:
                drugs |= lexicon.members(member_class)
        words = {w for m in modalities for w in PROCEDURE_WORDS.get(m, ())}
        return cls(frozenset(drugs), frozenset(classes), frozenset(words))

    def __bool__(self) -> bool:
        return bool(self.drugs or self.classes or self.words)

    def named_in(self, text: str) -> list[str]:
        """The excluded drugs a text names by name or brand (a regimen acronym is not a name:
        the gate's dose note withdraws the drug from it), or a class phrase it names whose
        every member is excluded."""
        found: list[str] = []
        for mention in lexicon.mentions(text):
            if mention.regimen:
                continue
            if mention.cls:
                members = lexicon.members(mention.cls)
                if mention.cls in self.classes or (members and members <= self.drugs):
                    found.append(text[mention.start : mention.end])
                continue
            if mention.drugs & self.drugs:
                found.append(text[mention.start : mention.end])
        for word in self.words:
            for match in re.finditer(rf"(?<![\w-]){word}\w*", text, re.IGNORECASE):
                # A procedure is named as an option ("unsuited to TACE"), not as a step of the
                # sequence ("then adjuvant radiotherapy as indicated"), which stays.
                if EXCLUDING.search(text[max(0, match.start() - 40) : match.start()]):
                    found.append(match.group())
        return found


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets."""
    parts: list[str] = []
    depth, start, index = 0, 0, 0
    while index < len(text):
        char = text[index]
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(separator, index):
            parts.append(text[start:index])
            start = index + len(separator)
            index = start
            continue
        index += 1
    parts.append(text[start:])
    return parts


def _drop_brackets(text: str, excluded: Excluded) -> str:
    """A bracketed aside that names an excluded drug ("(tamoxifen if AI not tolerated)")
    goes whole."""
    out, depth, start = [], 0, -1
    last = 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = index
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0 and excluded.named_in(text[start : index + 1]):
                out.append(text[last:start].rstrip())
                last = index + 1
    out.append(text[last:])
    return "".join(out)


# "... with rituximab 375 mg/m2 (R2)": a partner drug joined to the regimen's head, its dose and
# an acronym in brackets, up to the next comma, semicolon or end.
_JOINED = re.compile(r"\s+(?:with|plus|and|\+)\s+$", re.IGNORECASE)
_PARTNER_TAIL = re.compile(r"[^,;()]*(?:\s*\([^()]{1,12}\))?")
# How far before a partner drug its joining word is looked for ("... with", "... plus").
_JOIN_CHARS = 120


def without_partners(text: str, excluded: Excluded) -> str | None:
    """For an item the safety gate has withdrawn a drug from (its "Without X" note): the
    partner drug the regimen was given *with* goes with its dose ("lenalidomide 20 mg days
    1-21 with rituximab 375 mg/m2 (R2), 28-day cycles" -> "lenalidomide 20 mg days 1-21,
    28-day cycles"), so the item no longer reads as giving it; None when that is not possible
    (the head of the item names the drug). Only for withdrawn drugs: the knowledge base decided
    that the regimen goes on without it, which is never assumed for a drug merely excluded."""
    # Cuts are found right to left on the text as written and made in one pass (issue 26:
    # splicing the text, and reading back to its start, at every mention was quadratic). A
    # partner's tail that runs into the cut after it joins that cut, as it would have run on
    # into the text once that cut was made.
    cuts: list[tuple[int, int]] = []
    for mention in reversed(list(lexicon.mentions(text))):
        if mention.regimen or not (mention.drugs & excluded.drugs) or mention.start == 0:
            continue
        joined = _JOINED.search(text, max(0, mention.start - _JOIN_CHARS), mention.start)
        if joined is None:
            continue
        limit = cuts[-1][0] if cuts else len(text)
        tail = _PARTNER_TAIL.match(text, mention.end, limit)
        end = tail.end() if tail else mention.end
        if cuts and end >= limit:
            end = cuts.pop()[1]
        cuts.append((joined.start(), end))
    if cuts:
        kept, last = [], 0
        for start, end in reversed(cuts):
            kept.append(text[last:start])
            last = end
        kept.append(text[last:])
        text = "".join(kept)
    text = text.strip()
    return None if excluded.named_in(text) else text


def clean_text(text: str, excluded: Excluded) -> str | None:
    """The text without the alternatives that name an excluded drug; None when every reading
    of it names one (nothing sensible is left)."""
    if not excluded.named_in(text):
        return text
    text = _drop_brackets(text, excluded).strip()
    if not excluded.named_in(text):
        return text
    cleaned = _clean(text, excluded, SEPARATORS)
    if not cleaned:
        return None
    return cleaned[:1].upper() + cleaned[1:]


def _clean(text: str, excluded: Excluded, separators: tuple[str, ...]) -> str | None:
    """Drop the alternatives (at the first separator that splits the text) that name an
    excluded drug; an alternative whose own head names it goes whole ("sorafenib 400 mg
    twice daily, orally" is one alternative, not three)."""
    for index, separator in enumerate(separators):
        parts = [p.strip() for p in _split(text, separator)]
        if len(parts) < 2:
            continue
        rest = separators[index + 1 :]
        kept = []
        for part in parts:
            if not excluded.named_in(part):
                kept.append(part)
                continue
            pieces = _split(part, ", ")
            if excluded.named_in(pieces[0]) and separator != ", ":
                # the alternative goes; what the last one adds for all ("..., with calcium and
                # vitamin D", "..., then surgery") stays
                if part is parts[-1] and kept:
                    shared = [
                        p.strip()
                        for p in pieces[1:]
                        if p.strip().startswith(("with ", "then ")) and not excluded.named_in(p)
                    ]
                    if shared:
                        kept[-1] = ", ".join([kept[-1], *shared])
                continue
            if separator == ", ":
                continue
            cleaned = _clean(part, excluded, rest)
            if cleaned:
                kept.append(cleaned)
        if not kept or (kept[0] != parts[0] and separator == ", "):
            return None  # the head of the item named it: nothing sensible is left
        joined = separator.join(kept)
        return None if excluded.named_in(joined) else joined
    return None
