"""The prior therapies with their outcome: what the disease progressed on and what the patient
stopped for intolerance, read from the structured history and, where it is silent, the text.

One reading (``prior_outcomes``) and two facts the rules test: ``derived.progressed_on`` and
``derived.intolerant_of``, each a list of the regimens (lower-case, as written) with that
outcome. The engine resolves the drugs a regimen names (``clinical/lexicon.py``) so a rule
can withhold exactly those drugs; rules of a drug class test the words ("palbociclib", "cdk4/6").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from clinical.calculators.course import oligoprogression, palliative_line
from clinical.calculators.patient import (
    _starts_a_line,
    most_recent_therapy,
    prior_regimens,
)
from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import negated_at, window_end, window_start

HISTORY_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[] (stop_reason; best response PD = progression; the "
    "most recent line of a case whose setting is 'progressive' = progression on it unless it "
    "is recorded as stopped for intolerance or completed, or the progression is limited to a "
    "few sites it otherwise controls (oligoprogression: the line continues)) and from the "
    "regimen text and the notes ('progressed on X', 'X-refractory', 'X stopped for grade 3 "
    "hand-foot skin reaction', 'intolerant of X'), negation read as in clinical/text/negation.py. "
    "Convention of NCCN/ESMO later-line recommendations: a drug the disease progressed on, or "
    "that was stopped for intolerance, is not re-offered in the same setting unless a "
    "guideline supports rechallenge."
)

OUTCOMES: Final = ("progression", "intolerance", "completed", "patient_choice", "other")
# FORMAT.md §4 (2026-11-27) names a stop for toxicity "toxicity"; older files say "intolerance".
_SAME_OUTCOME: Final = {"toxicity": "intolerance"}

# "progressed on letrozole-palbociclib", "progression during sorafenib", "relapsed on R2",
# "refractory to rituximab", "resistant to osimertinib".
_PROGRESSION_CUE = re.compile(
    r"\b(?:progress(?:ed|ion|ing|ive\s+disease)?|pd|relapsed|refractory|resistan(?:t|ce))\s+"
    r"(?:(?:on|during|under|while\s+on|whilst\s+on|through|to)\s+"
    # "progressed after 22 months of letrozole" is on it; "relapsed after R-CHOP" is not
    r"|after\s+\d+\s*(?:months?|cycles?|years?|weeks?)\s+(?:of\s+)?)"
    r"(?:(?:first|second|third|1st|2nd|3rd|prior|previous|the|a|an)[-\s]+)*"
    r"(?:(?:line|months?|cycles?|years?|weeks?)\s+(?:of\s+)?)?",
    re.IGNORECASE,
)
# "palbociclib-refractory", "osimertinib-resistant".
# A match starts only where a drug word starts: without the look-behind, a run of 10,000 word
# characters was scanned to its end from each of its positions (quadratic, issue 26).
_REFRACTORY_AFTER = re.compile(
    r"(?<![\w/+-])([\w/+-]+)[-\s](?:refractory|resistant)\b", re.IGNORECASE
)
# Cues that the patient stopped a drug for its side effects: the drug is named before the cue
# ("sorafenib stopped after 6 weeks for grade 3 hand-foot skin reaction") ...
_STOPPED = re.compile(
    r"\b(?:stopped|discontinued|withdrawn|ceased|interrupted\s+permanently|abandoned)\b"
    r"[^.;\n]{0,40}?\b(?:for|because\s+of|due\s+to|owing\s+to|after|following)\b"
    r"[^.;\n]{0,40}?\b(?P<harm>toxicit\w*|intoleran\w*|side[-\s]effects?|adverse|grade\s*[34]"
    r"|hand[-\s]foot|rash|colitis|hepatitis|pneumonitis|neuropathy|bleeding|haemorrhage"
    r"|hemorrhage|fatigue|diarrho?ea|hypertension|proteinuria|not\s+tolerated)",
    re.IGNORECASE,
)
# ... or after it ("intolerant of sorafenib", "did not tolerate capecitabine").
_INTOLERANT_OF = re.compile(
    r"\b(?:intoleran(?:t|ce)\s+(?:of|to)|(?:did|could)\s+not\s+tolerate|unable\s+to\s+tolerate"
    r"|poorly\s+tolerated)\s+",
    re.IGNORECASE,
)
# "X not tolerated", "X poorly tolerated".
_NOT_TOLERATED_AFTER = re.compile(r"\b(?:not|poorly)\s+tolerated\b", re.IGNORECASE)
_COMPLETED = re.compile(r"\bcompleted\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=\w\w)\.(?=\s|$)|[;\n]")
# Where a drug span after a cue ends: a clause break or the start of what came next.
_SPAN_END = re.compile(
    r"[,.;:()\n]|\b(?:after|for|then|and\s+then|now|with\s+(?:a|an)|because|due|since"
    r"|followed|switched|but|which|while|so)\b",
    re.IGNORECASE,
)


# "A, then B": a course of phases. Stopped for toxicity, it stopped in its last phase; the
# phases before it were given in full (chemoradiation, then durvalumab consolidation stopped
# for pneumonitis: the carboplatin-paclitaxel was tolerated).
_THEN = re.compile(r"[,;]?\s*\b(?:and\s+)?(?:then|followed\s+by)\b", re.IGNORECASE)


def _stopped_phase(regimen: str) -> str:
    """The phase of a course a stop for toxicity ended: its last one."""
    last = _THEN.split(regimen)[-1].strip(" ,;-")
    return last or regimen


@dataclass(frozen=True)
class PriorOutcome:
    regimen: str
    outcome: str
    how: str


def _sentences(text: str) -> list[str]:
    parts, start = [], 0
    for match in _SENTENCE.finditer(text):
        parts.append(text[start : match.start()])
        start = match.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _span_after(sentence: str, end: int) -> str:
    # A drug span lies within a few words of its cue: reading no further than SCOPE_CHARS keeps
    # the work per cue constant however long the sentence (issue 26).
    rest = sentence[end : window_end(sentence, end)]
    stop = _SPAN_END.search(rest)
    return (rest[: stop.start()] if stop else rest).strip(" -")


_QUOTE_CHARS: Final = 300
_BEFORE_BREAK = re.compile(r"[,(:]|\band\b")


def _quoted(sentence: str, start: int, end: int) -> str:
    """The sentence a finding was read from, as its evidence: whole when it is short, else the
    words around the mention (a 100 KB sentence quoted once per mention is quadratic)."""
    if len(sentence) <= _QUOTE_CHARS:
        return f"stated: '{sentence}'"
    half = _QUOTE_CHARS // 2
    begin, stop = window_start(sentence, start, chars=half), window_end(sentence, end, chars=half)
    return f"stated: '…{sentence[begin:stop].strip()}…'"


def _text_outcomes(text: str) -> list[PriorOutcome]:
    """The regimens a free text says the disease progressed on or the patient did not
    tolerate; a negated cue ("no progression on ...", "stopped without toxicity") says
    nothing."""
    found: list[PriorOutcome] = []
    for sentence in _sentences(text):
        for match in _PROGRESSION_CUE.finditer(sentence):
            if negated_at(sentence, match.start(), match.start() + 1):
                continue
            span = _span_after(sentence, match.end())
            if span:
                how = _quoted(sentence, match.start(), match.end())
                found.append(PriorOutcome(span.lower(), "progression", how))
        for match in _REFRACTORY_AFTER.finditer(sentence):
            if not negated_at(sentence, match.start(), match.end()):
                regimen = match.group(1).lower()
                how = _quoted(sentence, match.start(), match.end())
                found.append(PriorOutcome(regimen, "progression", how))
        for match in _INTOLERANT_OF.finditer(sentence):
            span = _span_after(sentence, match.end())
            if span:
                how = _quoted(sentence, match.start(), match.end())
                found.append(PriorOutcome(span.lower(), "intolerance", how))
        for match in [*_STOPPED.finditer(sentence), *_NOT_TOLERATED_AFTER.finditer(sentence)]:
            harm = match.groupdict().get("harm")
            if harm and negated_at(sentence, match.start("harm"), match.end("harm")):
                continue  # "stopped after six cycles without toxicity"
            begin = window_start(sentence, match.start())
            before = sentence[begin : match.start()].rstrip(" ,;-(")
            cut = max((m.end() for m in _BEFORE_BREAK.finditer(before)), default=0)
            span = before[cut:].strip(" -")
            if span:
                how = _quoted(sentence, match.start(), match.end())
                found.append(PriorOutcome(span.lower(), "intolerance", how))
    return found


def _stop_reason(therapy: Mapping[str, Any]) -> str | None:
    raw = therapy.get("stop_reason")
    if not isinstance(raw, str):
        return None
    reason = raw.strip().lower()
    reason = _SAME_OUTCOME.get(reason, reason)
    return reason if reason in OUTCOMES else None


def prior_outcomes(case: Mapping[str, Any]) -> tuple[list[PriorOutcome], bool]:
    """Every prior therapy with a known outcome, and whether a history was recorded at all."""
    raw = lookup(case, "diagnosis.prior_therapies")
    therapies = [t for t in raw if isinstance(t, Mapping)] if isinstance(raw, list) else None
    notes = lookup(case, "notes")
    recorded = therapies is not None or (isinstance(notes, str) and bool(notes.strip()))
    found: list[PriorOutcome] = []
    latest = most_recent_therapy(therapies) if therapies else None
    progressive = lookup(case, "diagnosis.setting") == "progressive"
    for therapy in therapies or []:
        regimen = therapy.get("regimen")
        if not isinstance(regimen, str) or not regimen.strip():
            continue
        text = regimen.strip()
        written = _text_outcomes(text)
        # The regimen's own words first ("sorafenib (stopped for hand-foot skin reaction)"):
        # the drug span is then the regimen before the cue.
        found.extend(written)
        reason = _stop_reason(therapy)
        response = therapy.get("best_response")
        said = {o.outcome for o in written}
        if reason == "intolerance" and _stopped_phase(text) != text:
            phase = _stopped_phase(text)
            how = f"recorded: stopped for intolerance during its last phase ('{phase}')"
            found.append(PriorOutcome(phase.lower(), reason, how))
        elif reason in ("progression", "intolerance"):
            found.append(PriorOutcome(text.lower(), reason, f"recorded: stopped for {reason}"))
        elif isinstance(response, str) and response.strip().upper() == "PD":
            found.append(PriorOutcome(text.lower(), "progression", "best response PD"))
        elif (
            therapy is latest
            and progressive
            and reason is None
            and not said
            and not _COMPLETED.search(text)
            # Oligoprogression: the line still controls all but a few sites and goes on
            # with local treatment of those (ESTRO-EORTC 2020; NCCN NSCLC 2025): not failed.
            and oligoprogression(case).value is not True
        ):
            found.append(
                PriorOutcome(text.lower(), "progression", "most recent line; disease progressive")
            )
    if isinstance(notes, str):
        found.extend(_text_outcomes(notes))
    return found, recorded


def _regimens(case: Mapping[str, Any], outcome: str, name: str) -> CalcResult:
    inputs = Inputs(case)
    found, recorded = prior_outcomes(case)
    if not recorded:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, HISTORY_SOURCE, "no treatment history recorded")
    chosen = [o for o in found if o.outcome == outcome]
    regimens = list(dict.fromkeys(o.regimen for o in chosen))
    detail = "; ".join(f"{o.regimen} ({o.how})" for o in chosen) or f"no {outcome} recorded"
    return inputs.result(name, regimens, HISTORY_SOURCE, detail)


def progressed_on(case: Mapping[str, Any]) -> CalcResult:
    """The prior regimens the disease progressed on ([] when none is recorded)."""
    return _regimens(case, "progression", "progressed_on")


def intolerant_of(case: Mapping[str, Any]) -> CalcResult:
    """The prior regimens stopped for intolerance ([] when none is recorded)."""
    return _regimens(case, "intolerance", "intolerant_of")


def _stated_only(case: Mapping[str, Any]) -> list[str]:
    """The systemic regimens the notes state (progressed on, not tolerated) when the structured
    history lists none."""
    raw = lookup(case, "diagnosis.prior_therapies")
    notes = lookup(case, "notes")
    if (isinstance(raw, list) and raw) or not isinstance(notes, str):
        return []
    stated = dict.fromkeys(o.regimen for o in _text_outcomes(notes))
    return [r for r in stated if _starts_a_line(r)]


def prior_regimens_with_history(case: Mapping[str, Any]) -> CalcResult:
    """``patient.prior_regimens``, with the regimens the notes state when the list is empty."""
    base = prior_regimens(case)
    stated = _stated_only(case)
    if not stated:
        return base
    return CalcResult(
        name=base.name,
        value=stated,
        inputs_used={**base.inputs_used, "notes": lookup(case, "notes")},
        inputs_missing=[],
        source=base.source,
        detail=f"stated in the notes: {'; '.join(stated)}",
    )


def treatment_line_with_history(case: Mapping[str, Any]) -> CalcResult:
    """The line of systemic therapy (``patient.treatment_line``), counting as well the regimens
    the notes say the disease progressed on or the patient did not tolerate when the structured
    history lists none: "progressed on letrozole-palbociclib" with an empty list is a second
    line, not a first."""
    base = palliative_line(case)
    stated = _stated_only(case)
    if not stated:
        return base
    detail = f"{len(stated)} prior systemic regimen(s) stated in the notes: {'; '.join(stated)}"
    return CalcResult(
        name=base.name,
        value=len(stated) + 1,
        inputs_used={**base.inputs_used, "notes": lookup(case, "notes")},
        inputs_missing=[],
        source=base.source,
        detail=detail,
    )
