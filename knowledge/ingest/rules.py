"""Deterministic keyword rules: native grade labels, statement splitting, kind and cancer type."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Final

from clinical.vocab import UnitCancerType, UnitKind

# --- grade labels ---------------------------------------------------------------------------
# Each pattern matches a label verbatim; the earliest match in a statement wins (ties go to
# the earlier pattern), so the same text always yields the same label.
_ROMAN: Final = r"(?:IV|V|I{1,3})"
# Each pattern comes with a lower-case word it cannot match without: a substring test is far
# cheaper than a case-insensitive regex scan, and most statements carry no grade at all.
_GRADE_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    # ESMO "[I, A]" (optionally with an MCBS/ESCAT suffix inside the brackets). Case matters:
    # "(i, a)" in prose is an enumeration, not a grade.
    ("", re.compile(r"[\[(]\s*" + _ROMAN + r"\s*,\s*[A-E]\s*(?:[;,][^\[\]()]{0,60})?[\])]")),
    # NCCN "category 1/2A/2B/3".
    ("category", re.compile(r"\bcategory\s+(?:1|2A|2B|3)(?!\w)", re.IGNORECASE)),
    # "(LoE 2, strong)", "LoE 1b, GoR A".
    (
        "loe",
        re.compile(
            r"(?:\(\s*)?\bLoE\s*:?\s*(?:[1-5][a-c]?|" + _ROMAN + r")\s*[,;]\s*"
            r"(?:(?:GoR|SoR|strength)\s*:?\s*)?(?:strong|weak|moderate|conditional|(?-i:[A-D]))\b"
            r"(?:\s*\))?",
            re.IGNORECASE,
        ),
    ),
    # "Level of evidence: 2, strength of recommendation: strong".
    (
        "of evidence",
        re.compile(
            r"\b(?:Level|Quality|Certainty) of evidence\s*[:=]?\s*"
            r"(?:very low|high|moderate|low|[1-5][a-c]?|(?-i:" + _ROMAN + r"|[A-D]))\b"
            r"[\s.,;]{0,4}(?:and\s+)?(?:Strength|Grade)(?: of recommendation)?\s*[:=]?\s*"
            r"(?:strong|weak|moderate|conditional|[12]|(?-i:[A-D]))\b",
            re.IGNORECASE,
        ),
    ),
    # GRADE "strong recommendation, moderate-quality evidence".
    (
        "recommendation",
        re.compile(
            r"\b(?:strong|weak|conditional)\s+recommendation\s*[,;]?\s*(?:and\s+|based on\s+)?"
            r"(?:high|moderate|low|very[ -]low)(?:[ -](?:quality|certainty))?(?:\s+of)?\s+"
            r"evidence\b",
            re.IGNORECASE,
        ),
    ),
    # ASCO "Evidence quality: high; Strength of recommendation: strong".
    (
        "evidence quality",
        re.compile(
            r"\bEvidence quality\s*:\s*(?:high|intermediate|moderate|low|insufficient)\b"
            r"[\s.,;]{0,4}Strength of recommendation\s*:\s*(?:strong|moderate|weak)\b",
            re.IGNORECASE,
        ),
    ),
)

# A sentence or block that opens with a grade label (or the words that introduce one) is the
# grade of the statement before it, not a statement of its own.
_GRADE_TAIL: Final = re.compile(
    r"^\W{0,3}(?:category\s+(?:1|2A|2B|3)(?!\w)|LoE\b|GoR\b|"
    r"(?:Level|Quality|Certainty) of evidence\b|Evidence quality\b|"
    r"(?:Strength|Grade) of recommendation\b|Type\s*:|"
    r"(?:strong|weak|conditional)\s+recommendation\b|"
    r"(?-i:" + _ROMAN + r")\s*,\s*(?-i:[A-E])\b)",
    re.IGNORECASE,
)

# Words that make a sentence a recommendation. "recommendation" (the noun) is deliberately
# absent: "Strength of recommendation: strong" grades a statement, it does not make one.
# Matched against lower-cased text (see the kind rules below for why).
_REC_VERB: Final = re.compile(
    r"\b(?:recommend(?:s|ed)?|suggest(?:s|ed)?|should|must|"
    r"(?:is|are) (?:preferred|indicated|contraindicated|suggested|an option|the standard)|"
    r"(?:may|can|could) be (?:considered|offered|used|given)|contraindicated|avoid(?:ed)?)\b"
)


def find_native_grade(text: str) -> str | None:
    """The first grade label in ``text``, exactly as written, or None."""
    low = text.lower()
    best: tuple[int, int] | None = None
    best_text: str | None = None
    for order, (needle, pattern) in enumerate(_GRADE_PATTERNS):
        if needle not in low:
            continue
        match = pattern.search(text)
        if match is not None and (best is None or (match.start(), order) < best):
            best = (match.start(), order)
            best_text = match.group(0).strip()
    return best_text


def has_recommendation_verb(text: str) -> bool:
    return _REC_VERB.search(text.lower()) is not None


def is_grade_tail(text: str) -> bool:
    """True when ``text`` only grades the statement before it ("[I, A]", "Evidence quality: …")."""
    return _GRADE_TAIL.match(text) is not None and not has_recommendation_verb(text)


# --- statements -----------------------------------------------------------------------------
# Text reaching the splitter is whitespace-normalised, so a sentence break is end punctuation,
# optional closing quotes/brackets, one space, and a capital, digit or opening bracket.
_SENTENCE_END: Final = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?= [\"'\u201c\u2018(\[]?[A-Z0-9])")
_ABBREVIATIONS: Final = frozenset(
    {
        "al.", "approx.", "ca.", "cf.", "dr.", "e.g.", "eg.", "eq.", "etc.", "fig.", "figs.",
        "i.e.", "ie.", "incl.", "max.", "min.", "no.", "nos.", "p.", "pp.", "prof.", "ref.",
        "refs.", "resp.", "sec.", "sect.", "st.", "tab.", "vol.", "vs.", "viz.",
    }
)  # fmt: skip


def split_sentences(text: str) -> list[str]:
    """Sentences of a whitespace-normalised text; joining them with spaces gives it back."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        token_start = text.rfind(" ", start, match.start()) + 1
        token = text[max(token_start, start) : match.start() + 1].lstrip("([").casefold()
        if token in _ABBREVIATIONS:
            continue
        sentences.append(text[start:end])
        start = end + 1  # skip the single space the lookahead saw
    if start < len(text):
        sentences.append(text[start:])
    return sentences


def _may_hold_several(text: str) -> bool:
    # Two statements need two recommendation verbs or grade labels somewhere in the text;
    # counting them first spares nearly every paragraph the sentence-by-sentence pass.
    low = text.lower()
    markers = 0
    for needle, pattern in ((" ", _REC_VERB), *_GRADE_PATTERNS):
        if needle not in low:
            continue
        for _ in pattern.finditer(low if pattern is _REC_VERB else text):
            markers += 1
            if markers >= 2:
                return True
    return False


def split_statements(text: str) -> list[str]:
    """``text`` as one statement, or as several when it holds several recommendations.

    A sentence with a recommendation verb opens a new statement; a sentence that only
    carries a grade joins the statement before it when that one has no grade yet; any other
    sentence (rationale, context) joins the statement before it, or the first one when it
    leads the paragraph. Each statement is a run of consecutive sentences of ``text``.
    """
    if not _may_hold_several(text):
        return [text]
    sentences = split_sentences(text)
    if len(sentences) < 2:
        return [text]
    groups: list[list[str]] = []
    graded: list[bool] = []
    lead: list[str] = []
    for sentence in sentences:
        has_verb = has_recommendation_verb(sentence)
        has_grade = find_native_grade(sentence) is not None
        opens = has_verb or (has_grade and not is_grade_tail(sentence))
        if opens and not has_verb and groups and not graded[-1]:
            opens = False  # "This is a category 2A recommendation." grades the one before
        if opens:
            groups.append([*lead, sentence])
            graded.append(has_grade)
            lead = []
        elif groups:
            groups[-1].append(sentence)
            graded[-1] = graded[-1] or has_grade
        else:
            lead.append(sentence)
    if len(groups) < 2:
        return [text]
    return [" ".join(group) for group in groups]


# --- unit kind --------------------------------------------------------------------------------
# Kind and cancer-type rules only answer yes or no, so they run on the lower-cased text with
# case-sensitive patterns: the regex engine searches those several times faster.
_INTERACTION: Final = re.compile(
    r"\binteract\w*|\bcyp\w*|\b(?:inhibitor|inducer|substrate)s? of\b|\bp-gp\b|"
    r"\bp-glycoprotein\b|\bco-?administration\b|\bconcomitant (?:use|administration)\b"
)
_GATE: Final = re.compile(
    r"\b(?:lvef|(?:left ventricular )?ejection fraction|creatinine clearance|crcl|egfr|"
    r"bilirubin)\b[^.;]{0,40}?(?:[<>\u2264\u2265]|\d|\b(?:below|above|less than|greater than|"
    r"lower than|higher than|under|over|at least|at most|exceed\w*)\b)|"
    r"\bchild[-\u2013\u2011 ]?pugh(?:(?: class| score| grade)? ?[abc]\b|[^.;]{0,20}?"
    r"(?:[<>\u2264\u2265]|\d))"
)
_RESTRICTIVE: Final = re.compile(
    r"\bcontraindicat\w*|\b(?:should|must) not\b|\bnot (?:be )?(?:recommended|used|given|"
    r"administered|indicated)\b|\bavoid\w*|\bdo not\b|\bwithh[eo]ld\w*|\bdiscontinu\w*|"
    r"\bdose (?:reduction|adjustment)|\breduce the dose\b|\bonly (?:if|when|in)\b"
)
_CONTRAINDICATION: Final = re.compile(
    r"\bcontraindicat\w*|\b(?:should|must) not\b|\bnot (?:be )?(?:recommended|indicated)\b|"
    r"\bavoid\w*|\bdo not\b"
)
_SURVEILLANCE: Final = re.compile(
    r"\bevery\s+\d+(?:\s*(?:[-\u2013]|to)\s*\d+)?\s*(?:days?|weeks?|months?|years?)\b|"
    r"\bsurveillance\b|\bfollow[- ]?ups?\b|\b\d+[- ]?(?:week|month|year)(?:ly)? intervals?\b"
)
_THERAPY: Final = re.compile(
    r"\brecommended\b|\bshould be offered\b|\b(?:is|are) (?:the )?preferred\b|"
    r"\bpreferred (?:option|regimen|treatment|therapy)\b|\b(?:is|are) indicated\b|"
    r"\bshould (?:receive|be treated|be considered|undergo)\b|\bmay be considered\b"
)
_STAGING: Final = re.compile(r"\bstag(?:e|es|ed|ing)\b|\b(?:classified|categori[sz]ed) as\b")


def suggest_kind(text: str) -> str | None:
    """A :class:`~knowledge.bundle.UnitKind` value for ``text``, or None.

    The most specific rule wins: an interaction, then an organ-function threshold that
    restricts treatment (or states no treatment), a contraindication, a surveillance
    interval, a therapy step, and last a staging rule ("stage" also appears in most therapy
    statements, so it must not outrank them).
    """
    low = text.lower()
    if _INTERACTION.search(low):
        return UnitKind.INTERACTION.value
    if _GATE.search(low) and (_RESTRICTIVE.search(low) or not _THERAPY.search(low)):
        return UnitKind.ORGAN_FUNCTION_GATE.value
    if _CONTRAINDICATION.search(low):
        return UnitKind.CONTRAINDICATION.value
    if _SURVEILLANCE.search(low):
        return UnitKind.SURVEILLANCE_INTERVAL.value
    if _THERAPY.search(low):
        return UnitKind.THERAPY_STEP.value
    if _STAGING.search(low):
        return UnitKind.STAGING_RULE.value
    return None


# --- cancer type ------------------------------------------------------------------------------
_CANCER: Final = re.compile(
    r"\b(?:(?P<hcc>hepatocellular|hcc|hepatoma|liver cancer|bclc)|"
    r"(?P<lung>nsclc|non[- ]small[- ]cell lung|lung (?:adeno)?carcinoma|lung cancer|"
    r"adenocarcinoma of the lung|pulmonary adenocarcinoma)|"
    r"(?P<breast>breast|dcis|mastectomy|lumpectomy)|"
    r"(?P<lymphoma>lymphomas?|dlbcl|hodgkin|r-chop))\b"
)
_CANCER_VALUE: Final = {
    "hcc": UnitCancerType.HCC.value,
    "lung": UnitCancerType.LUNG_ADENOCARCINOMA.value,
    "breast": UnitCancerType.BREAST.value,
    "lymphoma": UnitCancerType.LYMPHOMA.value,
}


@functools.lru_cache(maxsize=4096)  # headings recur for every statement of their section
def _cancer_in(text: str) -> tuple[str | None, bool]:
    """(the one cancer type named in ``text`` or None, whether any was named)."""
    found: str | None = None
    for match in _CANCER.finditer(text.lower()):
        value = _CANCER_VALUE[match.lastgroup or ""]
        if found is not None and value != found:
            return None, True  # two cancer types: ambiguous
        found = value
    return found, found is not None


def suggest_cancer_type(
    text: str, heading_path: Sequence[str] = (), *, kind: str | None = None
) -> str | None:
    """A :class:`~knowledge.bundle.CancerType` value, or None.

    The statement speaks first, then its headings from the deepest up. Text naming two
    cancer types is ambiguous, so the rule gives up rather than guess. An interaction that
    names no cancer holds for any cancer.
    """
    for scope in (text, *reversed(heading_path)):
        value, named = _cancer_in(scope)
        if named:
            return value
    if kind == UnitKind.INTERACTION.value:
        return UnitCancerType.ANY.value
    return None
