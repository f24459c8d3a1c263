"""Negation and scope in short clinical free text: whether a term is affirmed or denied.

Two readers share the primitives here. The patient-preferences reader asks whether a cue word is
negated by the few words before it ("does *not* want"). The knowledge base's ``contains_any``
conditions ask whether free text (notes, the lesion description, comorbidities, histology)
*affirms* a term: "no seizures", "non-bulky", "Helicobacter pylori negative", "seizure-free",
"varices ruled out" and "non-Hodgkin" mention a term without affirming it.

The rules are those of NegEx (Chapman WW et al., J Biomed Inform 2001;34:301-310), kept small:
a negation cue before the term (no, not, without, denies, negative for, free of, absence of,
non-, ...) within five words and the same clause, or after it (negative, absent, excluded, ruled
out, not seen, -free, stopped ...) within three words; a clause ends at sentence punctuation
and at contrastive or causal words (but, however, except, which, because ...), not at commas,
so a list stays negated ("no ascites, varices or encephalopathy"). Pseudo-negations that keep
the term possible ("cannot be excluded", "not ruled out", "no change in") negate nothing.
A term is matched at the start of a word ("symptomatic" is not found in "asymptomatic"), so a
stem ("infiltrat") still matches its endings.

Rule-based and conservative in one direction only: text it cannot read counts as affirmed, as a
substring match did before, so a rule never silently stops firing on unusual wording; it stops
firing only on an explicit negation.

Linear in the text (issue 26): every question about one mention looks at most SCOPE_CHARS
characters either side of it, never back to the start of the text or on to its end, so a
reader that asks about each of n mentions does O(n) work, not O(n squared). The windows are
far wider than the five (three) words NegEx looks at.
"""

from __future__ import annotations

import re
from typing import Final

# Words that negate what follows within a few words (the preferences reader's set: "no longer"
# keeps its meaning, "n't" covers "doesn't", "won't").
NEGATOR_RE: Final = re.compile(r"\b(?:not|never|no|nor)\b|n't\b|\bno\s+longer\b", re.IGNORECASE)


# How far either side of a mention the negation and scope readers look, in characters.
SCOPE_CHARS: Final = 240


def window_start(text: str, start: int, *, chars: int = SCOPE_CHARS) -> int:
    """Where a look-back of ``chars`` characters before ``start`` begins, moved on past a word
    it would cut ("pia|no" must not read as "no")."""
    begin = max(0, start - chars)
    if begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "_'"):
        while begin < start and (text[begin].isalnum() or text[begin] in "_'"):
            begin += 1
    return begin


def window_end(text: str, end: int, *, chars: int = SCOPE_CHARS) -> int:
    """Where a look-ahead of ``chars`` characters after ``end`` stops, before a word it would
    cut."""
    stop = min(len(text), end + chars)
    if stop < len(text) and (text[stop].isalnum() or text[stop] in "_'"):
        while stop > end and (text[stop - 1].isalnum() or text[stop - 1] in "_'"):
            stop -= 1
    return stop


def negated_before(
    text: str, start: int, *, words: int, breaks: re.Pattern[str], negators: re.Pattern[str]
) -> bool:
    """A negator among the ``words`` words before position ``start``, after the last scope
    break: the one primitive both readers use, each with its own window and breaks."""
    prefix = text[window_start(text, start) : start]
    found = list(breaks.finditer(prefix))
    if found:
        prefix = prefix[found[-1].end() :]
    tokens = re.findall(r"[\w']+", prefix)[-words:] if words else []
    return bool(negators.search(" ".join(tokens)))


# --- clinical free text ---------------------------------------------------------------------

# A sentence or clause boundary: ".", "!", "?", ";" or ":" (a period after a single letter is an
# abbreviation, "H. pylori"), a line break, or a word that starts a new assertion.
CLAUSE_BREAK_RE: Final = re.compile(
    r"(?<=\w\w)\.(?=\s|$)|[!?;\n]|:(?=\s)"
    r"|\b(?:but|however|although|though|except|apart\s+from|aside\s+from|whereas|yet|which"
    r"|who|while|because|due\s+to|owing\s+to|since|other\s+than)\b",
    re.IGNORECASE,
)
PRE_NEGATION_RE: Final = re.compile(
    r"\b(?:no|not|never|nor|neither|without|denies|denied|denying|absent|absence\s+of"
    r"|free\s+of|negative\s+for|ruled\s+out|excluded|non)\b|n't\b",
    re.IGNORECASE,
)
# "non-bulky", "non Hodgkin": the prefix negates the word it is attached to.
_NON_PREFIX_RE: Final = re.compile(r"\bnon[-\s]?$", re.IGNORECASE)
POST_NEGATION_RE: Final = re.compile(
    r"^(?:[\s,:()-]*)(?:[\w'/.-]+\s+){0,2}?"
    r"(?:negative|absent|excluded|ruled\s+out|not\s+(?:seen|detected|found|present|identified"
    r"|visuali[sz]ed|demonstrated)|none|stopped|discontinued|ceased)\b",
    re.IGNORECASE,
)
_FREE_SUFFIX_RE: Final = re.compile(r"^[\w]*[-\s]free\b", re.IGNORECASE)
# Phrases built from a negator that leave the term possible or present.
PSEUDO_NEGATION_RE: Final = re.compile(
    r"\b(?:not\s+ruled\s+out|cannot\s+be\s+(?:ruled\s+out|excluded)|can\s*not\s+be\s+"
    r"(?:ruled\s+out|excluded)|not\s+(?:be\s+)?excluded|no\s+(?:change|increase|decrease)"
    r"|not\s+only|without\s+(?:doubt|difficulty)|no\s+doubt)\b",
    re.IGNORECASE,
)
PRE_WINDOW_WORDS: Final = 5


def _scope_start(text: str, start: int) -> int:
    """Where the clause holding position ``start`` begins (at most SCOPE_CHARS back)."""
    begin = window_start(text, start)
    found = [m for m in CLAUSE_BREAK_RE.finditer(text, begin, start)]
    return found[-1].end() if found else begin


def _scope_end(text: str, end: int) -> int:
    stop = window_end(text, end)
    match = CLAUSE_BREAK_RE.search(text, end, stop)
    return match.start() if match else stop


def _pre_negated(text: str, start: int) -> bool:
    clause = text[_scope_start(text, start) : start]
    if _NON_PREFIX_RE.search(clause):
        return True
    for cue in PRE_NEGATION_RE.finditer(clause):
        if any(p.start() <= cue.start() < p.end() for p in PSEUDO_NEGATION_RE.finditer(clause)):
            continue
        between = re.findall(r"[\w'-]+", clause[cue.end() :])
        if len(between) <= PRE_WINDOW_WORDS:
            return True
    return False


_COLON_RE: Final = re.compile(r"[^\S\n]*:")


def _post_negated(text: str, end: int) -> bool:
    # "Varices: none": a colon right after the term introduces its value, not a new clause.
    colon = _COLON_RE.match(text, end, window_end(text, end))
    if colon:
        end = colon.end()
    after = text[end : _scope_end(text, end)]
    if _FREE_SUFFIX_RE.match(after):
        return True
    if PSEUDO_NEGATION_RE.search(after[:60]):
        return False
    return bool(POST_NEGATION_RE.match(after))


def _term_pattern(term: str) -> re.Pattern[str]:
    body = re.escape(term.strip())
    # A term that starts with a letter or digit must start a word.
    prefix = r"(?<![\w])" if term.strip()[:1].isalnum() else ""
    return re.compile(prefix + body, re.IGNORECASE)


def term_occurrences(text: str, term: str) -> list[tuple[int, int, bool]]:
    """Every occurrence of ``term`` in ``text`` at a word start: (start, end, negated)."""
    if not term.strip():
        return []
    return [
        (m.start(), m.end(), _pre_negated(text, m.start()) or _post_negated(text, m.end()))
        for m in _term_pattern(term).finditer(text)
    ]


def affirms(text: str, term: str) -> bool:
    """Whether ``text`` mentions ``term`` at least once without negating it."""
    return any(not negated for _, _, negated in term_occurrences(text, term))


def negated_at(text: str, start: int, end: int) -> bool:
    """Whether the mention at ``text[start:end]`` (found by any pattern) is negated."""
    return _pre_negated(text, start) or _post_negated(text, end)


def clause_at(text: str, start: int, end: int) -> str:
    """The clause that holds ``text[start:end]``, as the reader scoped it."""
    return text[_scope_start(text, start) : _scope_end(text, end)].strip(" ,")
