"""Read the patient's stated preferences (free text) into declined and wanted topics.

The text is split into clauses (sentences, ";", and contrastive words such as "but"). In each
clause every topic mention (e.g. "chemo", "an operation", "keep her breast") takes its
polarity from the nearest cue before it ("declines", "does not want", "would accept", "no",
"prefers" ...) or, if none, from the first cue after it ("chemotherapy declined"). A cue is
negated by "not", "n't", "never", "no" or "nor" in the three words before it, so "does not
want" declines and "is not opposed to" accepts. Only a decline cue puts a topic in
``declines``; only a wish cue (or a phrase that is itself a wish, like "keep her breast") puts
one in ``wants``. Anything not understood is left out: a missing topic means "not stated",
never "accepted".

This is a rule-based reader for short clinical notes, not a language model; it is meant to be
conservative (a clause it cannot read yields nothing) and its output is shown with the text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from clinical.results import CalcResult, Inputs
from clinical.text.negation import NEGATOR_RE, negated_before

PREFERENCES_SOURCE: Final = (
    "Rule-based reading of patient.preferences (clause split, cue words, negation scope of "
    "three words); vocabulary fixed by the mdtboard knowledge-base contract."
)

DECLINE_TOPICS: Final = (
    # every treatment aimed at the cancer (a patient with capacity who chooses supportive care)
    "anticancer_treatment",
    "surgery",
    "mastectomy",
    "chemotherapy",
    "radiotherapy",
    "immunotherapy",
    "endocrine_therapy",
    "transplant",
    "cellular_therapy",
    "transfusion",
    "intravenous_therapy",
    "hospitalisation",
)
WANT_TOPICS: Final = (
    "fertility_preservation",
    "breast_conservation",
    "oral_therapy",
    "fewer_hospital_visits",
    "future_pregnancy",
)

Polarity = Literal["decline", "want", "accept", "neutral"]
Kind = Literal["decline", "want", "avoid_means_want", "inherent_want", "inherent_decline"]


@dataclass(frozen=True)
class _Topic:
    """A way of mentioning topics: the regex, what it names, and how a cue maps onto it."""

    pattern: re.Pattern[str]
    topics: tuple[str, ...]
    kind: Kind


def _t(regex: str, topics: tuple[str, ...], kind: Kind) -> _Topic:
    return _Topic(re.compile(regex, re.IGNORECASE), topics, kind)


_FERTILITY_AND_PREGNANCY = ("fertility_preservation", "future_pregnancy")

# Every treatment aimed at the cancer, in the words a letter uses: "any treatment aimed at the
# cancer", "all active treatment", "anticancer therapy", "cancer-directed treatment".
_TREATMENT: Final = r"(?:treatments?|therap(?:y|ies)|interventions?)"
_ANTICANCER: Final = (
    r"(?:active|anti-?cancer|anti-?tumou?r|cancer[-\s](?:directed|specific)|"
    r"disease[-\s](?:directed|modifying)|oncologic(?:al)?|life[-\s]prolonging)"
)
_ALL_TREATMENT: Final = (
    rf"\b(?:any|all)\s+(?:further\s+|more\s+|other\s+)?(?:{_ANTICANCER}\s+)?{_TREATMENT}"
    r"(?:\s+(?:aimed|directed)\s+at\s+(?:the|his|her|their)\s+(?:cancer|tumou?r|disease)"
    # "any treatment that causes hair loss" is one kind of treatment, not every treatment
    r"|(?!\s+(?:that|which|with|causing|involving|requiring|needing|by|in|of|where|using)\b))"
    rf"|\b{_ANTICANCER}\s+{_TREATMENT}\b"
    rf"|\b{_TREATMENT}\s+(?:aimed|directed)\s+at\s+(?:the|his|her|their)\s+"
    r"(?:cancer|tumou?r|disease)\b"
)
_CARE_ONLY: Final = (
    r"\b(?:comfort|supportive|palliative|symptomatic)\s+(?:care|treatment)\s+only\b"
    r"|\bonly\s+(?:comfort|supportive|palliative|symptom(?:atic)?)\s+(?:care|control|treatment)\b"
)

# Order matters: an earlier, more specific mention claims its span first ("breast-conserving
# surgery" is breast conservation, not surgery in general).
_TOPICS: Final[tuple[_Topic, ...]] = (
    _t(_ALL_TREATMENT, ("anticancer_treatment",), "decline"),
    _t(_CARE_ONLY, ("anticancer_treatment",), "inherent_decline"),
    _t(
        r"\b(?:keep(?:ing)?|preserv(?:e|ing)|sav(?:e|ing)|conserv(?:e|ing)|retain(?:ing)?)"
        r"\s+(?:her\s+|his\s+|the\s+|their\s+)?breasts?\b",
        ("breast_conservation",),
        "inherent_want",
    ),
    _t(
        r"\bbreast[-\s]?conserv\w*(?:\s+(?:surgery|therapy|treatment))?"
        r"|\blumpectomy\b|\bwide\s+local\s+excision\b",
        ("breast_conservation",),
        "want",
    ),
    _t(
        r"\b(?:preserv(?:e|ing)|protect(?:ing)?|sav(?:e|ing))\s+(?:her\s+|his\s+|their\s+)?"
        r"fertility\b",
        ("fertility_preservation",),
        "inherent_want",
    ),
    _t(
        r"\b(?:fewer|less\s+frequent|as\s+few|few|minimi[sz]e|reduc(?:e|ing)|limit(?:ing)?)\b"
        r"(?:\s+\w+){0,3}?\s+(?:hospital\s+|clinic\s+)?(?:visits|appointments|trips|travel)\b",
        ("fewer_hospital_visits",),
        "inherent_want",
    ),
    _t(
        r"\b(?:frequent\s+)?(?:hospital|clinic)\s+(?:visits|appointments|trips)\b"
        r"|\btravel(?:l?ing)?\s+(?:to|into)\s+(?:the\s+)?(?:hospital|clinic)\b"
        r"|\bfrequent\s+visits\b|\blong\s+journeys\b",
        ("fewer_hospital_visits",),
        "avoid_means_want",
    ),
    _t(r"\bmastectom\w*", ("mastectomy",), "decline"),
    _t(
        r"\bsurg\w*|\boperat(?:e|ion|ions|ive|ing)\b|\ban\s+op\b|\bresection\b|\bresect\b"
        r"|\bhepatectomy\b|\blobectomy\b|\bexcision\b",
        ("surgery",),
        "decline",
    ),
    _t(r"\bchemo-?radi\w*", ("chemotherapy", "radiotherapy"), "decline"),
    _t(r"\bchemo\w*|\bcytotoxic\w*", ("chemotherapy",), "decline"),
    _t(
        r"\bradio\s?therap\w*|\bradiation\b|\birradiation\b|\bradiotherapy\b|\bsbrt\b|\bsabr\b"
        r"|\bbrachytherapy\b",
        ("radiotherapy",),
        "decline",
    ),
    _t(
        r"\bimmuno\s?therap\w*|\bcheckpoint\s+inhibitors?\b|\bimmune\s+checkpoint\w*",
        ("immunotherapy",),
        "decline",
    ),
    _t(
        r"\b(?:endocrine|hormon(?:e|al)|anti-?hormonal)\s+(?:therapy|therapies|treatment|"
        r"treatments|pills|tablets|blockade)\b|\btamoxifen\b|\baromatase\s+inhibitors?\b"
        r"|\bletrozole\b|\banastrozole\b|\bexemestane\b",
        ("endocrine_therapy",),
        "decline",
    ),
    _t(
        r"\bcar[-\s]?t\b(?:[-\s]cells?)?(?:\s+(?:cell\s+)?therap(?:y|ies))?"
        r"|\bchimeric\s+antigen\s+receptor\w*(?:\s+t[-\s]cells?)?(?:\s+therap(?:y|ies))?"
        r"|\bcellular\s+therap(?:y|ies)\b|\b(?:axi|liso|tisa)-?cel\b",
        ("cellular_therapy",),
        "decline",
    ),
    _t(r"\btransplant\w*", ("transplant",), "decline"),
    _t(
        r"\b(?:blood\s+)?transfusions?\b|\bblood\s+products?\b"
        r"|\b(?:receive|receiving|accept|accepting|take|taking|have|having)\s+blood\b",
        ("transfusion",),
        "decline",
    ),
    _t(
        r"\bintravenous\w*|\bi\.?v\.?\s+(?:therapy|treatment|drugs|chemo\w*|medication)"
        r"|\binfusions?\b|\bdrips?\b",
        ("intravenous_therapy",),
        "decline",
    ),
    _t(
        r"\bhospitali[sz]\w*|\bin-?\s?patient\b|\badmission\b|\badmitted\b"
        r"|\bhospital\s+stays?\b|\b(?:stay|staying|be|being|go|going)\s+(?:in|into)\s+"
        r"(?:the\s+)?hospital\b",
        ("hospitalisation",),
        "decline",
    ),
    _t(
        r"\boral\s+(?:therapy|therapies|treatment|treatments|medication|medications|drugs?|"
        r"agents?|chemo\w*|options?)\b|\btablets?\b|\bpills?\b|\bby\s+mouth\b",
        ("oral_therapy",),
        "want",
    ),
    _t(
        r"\bfertility\b|\begg\s+freezing\b|\boocyte\w*|\bembryo\w*|\bsperm\s+bank\w*",
        ("fertility_preservation",),
        "want",
    ),
    # Continuing the present pregnancy is not a wish for a future one (no egg freezing for a
    # pregnant patient): the phrase claims its span and names no topic.
    _t(
        r"\b(?:continu(?:e|ing)|keep(?:ing)?|maintain(?:ing)?|proceed(?:ing)?\s+with|carry(?:ing)?)"
        r"\s+(?:the|her|this|their)\s+(?:current\s+|present\s+)?pregnancy(?:\s+to\s+term)?\b",
        (),
        "want",
    ),
    _t(
        r"\b(?:more\s+|further\s+|another\s+|a\s+)?(?:child|children|baby|babies)\b"
        r"|\bpregnan\w*|\bconceive\b|\b(?:start|have|complete)\s+a\s+family\b",
        _FERTILITY_AND_PREGNANCY,
        "want",
    ),
)

# Cue phrases and their base polarity. Longer alternatives are tried first at a position.
_CUES: Final[tuple[tuple[str, Polarity], ...]] = (
    # accept (stated openness; never a decline and never a wish)
    (r"no\s+objections?(?:\s+to)?", "accept"),
    (r"no\s+problems?\s+with", "accept"),
    (r"(?:does\s+not|doesn't|do\s+not|don't|would\s+not|wouldn't)\s+mind", "accept"),
    (r"(?:would\s+)?accepts?|accepting|accepted|acceptable", "accept"),
    (
        r"(?:is\s+)?willing|agrees?|agreed|consents?|consented|open\s+to|happy\s+to|fine\s+with",
        "accept",
    ),
    (r"(?:would\s+)?consider(?:s|ing)?", "accept"),
    (r"no\s+preference|undecided|unsure|uncertain|discuss(?:ed|ion)?|counsell?ed", "neutral"),
    # decline
    (r"declin\w*|refus\w*|rejects?|rejected|opposed|objects?\s+to|against", "decline"),
    (r"(?:would\s+(?:rather|prefer\s+to)\s+)?avoid\w*|rather\s+than|instead\s+of", "decline"),
    (r"unwilling|won't|will\s+not|wouldn't|unacceptable|out\s+of\s+the\s+question", "decline"),
    (r"does\s+not\s+want|doesn't\s+want|not\s+keen", "decline"),
    (r"no|not|without|never", "decline"),
    # want
    (
        r"wants?|wanted|wish(?:es|ed)?|would\s+like|likes?|hopes?|hoping|keen|desires?|desired",
        "want",
    ),
    (r"prefers?|preferred|preference\s+for|planning|plans?|important|priority|request\w*", "want"),
)
_CUE_RE: Final = re.compile(
    "|".join(rf"\b(?:{regex})\b" for regex, _ in _CUES),
    re.IGNORECASE,
)
_CUE_KIND: Final = [(re.compile(rf"(?:{regex})", re.IGNORECASE), pol) for regex, pol in _CUES]
_SPLIT_RE: Final = re.compile(
    r"[.;!?\n]+|\b(?:but|however|although|though|whereas|except|yet)\b", re.IGNORECASE
)
_FAMILY_COMPLETE_RE: Final = re.compile(
    r"\bfamily\s+(?:is\s+)?complete\b|\bcompleted\s+(?:her|his|their)\s+family\b", re.IGNORECASE
)
# Only an explicit refusal verb carries over to the previous clause's topics ("Offered
# chemotherapy but declined"); bare "no"/"not" do not, as they usually negate something else.
_REFUSAL_RE: Final = re.compile(r"\b(?:declin\w*|refus\w*|reject\w*)", re.IGNORECASE)
_JEHOVAH_RE: Final = re.compile(r"\bjehovah", re.IGNORECASE)


def _polarity_of(cue: str) -> Polarity:
    # Cues that are themselves negations ("does not want") must not match the bare "no|not" row
    # first, so classify by the full-match of each row in table order.
    for regex, pol in _CUE_KIND:
        if regex.fullmatch(cue):
            return pol
    return "neutral"


def _flip(pol: Polarity) -> Polarity:
    return {"decline": "accept", "accept": "decline", "want": "decline"}.get(pol, pol)  # type: ignore[return-value]


_SCOPE_BREAK_RE: Final = re.compile(r",|\b(?:and|or|then|so|who|which|because)\b", re.IGNORECASE)


def _negated(clause: str, start: int) -> bool:
    """A negator in the three words before position `start`, within the same phrase ("has no
    children and wants ..." does not negate "wants")."""
    return negated_before(clause, start, words=3, breaks=_SCOPE_BREAK_RE, negators=NEGATOR_RE)


def _cue_polarity(clause: str, match: re.Match[str]) -> Polarity:
    cue = match.group(0)
    pol = _polarity_of(cue)
    if cue.lower() in ("no", "not", "without", "never"):
        return pol  # a bare negator is the cue itself: not negated again
    if "not" in cue.lower() or "n't" in cue.lower():
        return pol  # "does not want", "won't": the negation is inside the cue
    return _flip(pol) if _negated(clause, match.start()) else pol


def _mention_polarity(
    clause: str, cues: list[re.Match[str]], cue_ends: list[int], start: int, end: int
) -> Polarity | None:
    """The stance of the nearest cue before the mention, else of the first after it. ``cues``
    are the clause's cue matches, found once (issue 26: finding them again for every mention
    made a clause of n mentions cost n squared); ``cue_ends`` their ends, ascending."""
    before = bisect.bisect_right(cue_ends, start)
    if before:
        return _cue_polarity(clause, cues[before - 1])
    # Cues do not overlap, so their starts ascend with their ends.
    after = bisect.bisect_left(cue_ends, end + 1)
    for cue in cues[after:]:
        if cue.start() >= end:
            return _cue_polarity(clause, cue)
    return None


_QUOTE_CHARS: Final = 200


def _quoted(clause: str) -> str:
    """A clause as the evidence of a reason, cut short (quoted once per mention)."""
    return clause if len(clause) <= _QUOTE_CHARS else clause[:_QUOTE_CHARS].rstrip() + "…"


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _SPLIT_RE.split(text) if c and c.strip()]


@dataclass(frozen=True)
class Preferences:
    declines: list[str]
    wants: list[str]
    reasons: list[str]
    # Wish topics the patient explicitly rejects ("does not want more children"): an offer
    # made for that wish (fertility preservation) is then not made.
    rejected_wishes: list[str] = field(default_factory=list)


def parse_preferences(text: str) -> Preferences:
    """Declined and wanted topics in vocabulary order, with one reason per topic found."""
    declines: set[str] = set()
    wants: set[str] = set()
    rejected: set[str] = set()
    reasons: list[str] = []
    # Topics of the previous clause that it left without a stance ("Offered surgery"), which a
    # following clause without a topic of its own may settle ("but declined").
    pending: list[_Topic] = []
    for clause in _clauses(text):
        # Each character of the clause belongs to at most one topic mention: a mention is
        # checked against its own characters only, never against every mention before it.
        taken = bytearray(len(clause))
        any_taken = False
        cues = list(_CUE_RE.finditer(clause))
        cue_ends = [cue.end() for cue in cues]
        open_topics: list[_Topic] = []
        for topic in _TOPICS:
            for match in topic.pattern.finditer(clause):
                start, end = match.span()
                if start == end or any(taken[start:end]):
                    continue
                taken[start:end] = b"\x01" * (end - start)
                any_taken = True
                pol = _mention_polarity(clause, cues, cue_ends, start, end)
                if pol in (None, "neutral"):
                    open_topics.append(topic)
                if topic.kind == "want" and pol == "decline":
                    rejected.update(topic.topics)
                found = _apply(topic, pol, declines, wants)
                if found:
                    reasons.append(f'{"/".join(found)} <- "{_quoted(clause)}"')
        if not any_taken and pending:
            refusal = _REFUSAL_RE.search(clause)
            if refusal and not _negated(clause, refusal.start()):
                for topic in pending:
                    found = _apply(topic, "decline", declines, wants)
                    if found:
                        reasons.append(
                            f'{"/".join(found)} <- "{_quoted(clause)}" (previous clause)'
                        )
        # A topic left open once is pending once, however often the clause repeats it.
        pending = list(dict.fromkeys(open_topics)) if any_taken else []
    if _FAMILY_COMPLETE_RE.search(text):
        wants.difference_update(_FERTILITY_AND_PREGNANCY)
        rejected.update(_FERTILITY_AND_PREGNANCY)
        reasons.append("family complete: no fertility or pregnancy wish")
    if _JEHOVAH_RE.search(text) and "transfusion" not in declines:
        accepts_blood = re.search(
            r"\b(?:accepts?|would\s+accept|will\s+accept)\s+(?:blood|transfusion)", text, re.I
        )
        if not accepts_blood:
            declines.add("transfusion")
            reasons.append("transfusion <- Jehovah's Witness (blood products declined)")
    return Preferences(
        declines=[t for t in DECLINE_TOPICS if t in declines],
        wants=[t for t in WANT_TOPICS if t in wants],
        reasons=list(dict.fromkeys(reasons)),
        rejected_wishes=[t for t in WANT_TOPICS if t in rejected and t not in wants],
    )


def _apply(topic: _Topic, pol: Polarity | None, declines: set[str], wants: set[str]) -> list[str]:
    if topic.kind == "decline" and pol == "decline":
        declines.update(topic.topics)
        return [f"declines {t}" for t in topic.topics]
    if topic.kind == "want" and pol == "want":
        wants.update(topic.topics)
        return [f"wants {t}" for t in topic.topics]
    if topic.kind == "inherent_want" and pol in (None, "want", "accept"):
        wants.update(topic.topics)
        return [f"wants {t}" for t in topic.topics]
    if topic.kind == "inherent_decline" and pol in (None, "want", "accept"):
        declines.update(topic.topics)
        return [f"declines {t}" for t in topic.topics]
    if topic.kind == "avoid_means_want" and pol == "decline":
        wants.update(topic.topics)
        return [f"wants {t}" for t in topic.topics]
    return []


# In the notes only an explicit decision of the patient counts ("has decided against any
# treatment aimed at the cancer", "will not have chemotherapy of any kind", "does not want an
# operation"): a bare "no active treatment" there is as often the history of another disease or
# the team's own view, and a refusal dated in the past ("declined adjuvant chemotherapy in
# 2019") was about another decision.
_NOTES_REFUSAL: Final = re.compile(
    r"\b(?:declin\w*|refus\w*|decided\s+against|decision\s+(?:is\s+)?not\s+to\s+have|"
    r"opted\s+(?:against|not\s+to\s+have)|cho(?:se|sen)\s+not\s+to\s+have|adamant|"
    r"(?:does|do|did)\s+not\s+want|doesn't\s+want|don't\s+want|will\s+not\s+(?:have|accept|"
    r"undergo|consider|take)|won't\s+(?:have|accept|undergo|consider|take)|"
    r"wish(?:es)?\s+not\s+to\s+have|not\s+wish\s+to\s+(?:have|receive|start|undergo)|"
    r"unwilling\s+to\s+(?:have|receive|start|undergo))\b",
    re.IGNORECASE,
)
_PAST_DECISION: Final = re.compile(
    r"\b(?:previously|at\s+the\s+time|back\s+then|in\s+(?:19|20)\d\d|\d+\s+years?\s+ago|"
    r"(?:adjuvant|neoadjuvant)\b)",
    re.IGNORECASE,
)


def declines_in_notes(text: str) -> tuple[list[str], list[str]]:
    """The topics the patient declines in the notes, and the clauses that say so: a clause
    counts only with an explicit refusal that is not negated ("is not refusing treatment") and
    not dated in the past."""
    topics: list[str] = []
    clauses: list[str] = []
    for clause in _clauses(text):
        refusal = _NOTES_REFUSAL.search(clause)
        if refusal is None or _negated(clause, refusal.start()):
            continue
        if _PAST_DECISION.search(clause):
            continue
        found = [t for t in parse_preferences(clause).declines if t not in topics]
        if found:
            topics += found
            clauses.append(clause)
    return topics, clauses


def _read(case: Mapping[str, Any], name: str) -> CalcResult:
    inputs = Inputs(case)
    text = inputs.text("patient.preferences", record_missing=False)
    notes = case.get("notes") if name == "declines" else None
    noted, clauses = declines_in_notes(notes) if isinstance(notes, str) else ([], [])
    if text is None and not noted:
        if "patient.preferences" not in inputs.missing:
            inputs.missing.append("patient.preferences")
        return inputs.result(name, None, PREFERENCES_SOURCE)
    parsed = parse_preferences(text or "")
    value = parsed.declines if name == "declines" else parsed.wants
    reasons = list(parsed.reasons)
    if any(t not in value for t in noted):
        value = [t for t in DECLINE_TOPICS if t in value or t in noted]
        reasons += [f'declines <- "{_quoted(c)}" (notes)' for c in clauses]
    detail = reasons or ["no declined or wanted topic recognised"]
    return inputs.result(name, value, PREFERENCES_SOURCE, detail)


def declines(case: Mapping[str, Any]) -> CalcResult:
    """Topics the patient declines (see module docstring); None if preferences are not recorded."""
    return _read(case, "declines")


def wants(case: Mapping[str, Any]) -> CalcResult:
    """Topics the patient wants (see module docstring); None if preferences are not recorded."""
    return _read(case, "wants")


def fertility_declined(case: Mapping[str, Any]) -> CalcResult:
    """True when the patient says she (or he) wants no (more) children or no fertility
    preservation, or that the family is complete; False otherwise, also when no preference is
    recorded: an offer of fertility preservation is withheld only on an explicit statement."""
    inputs = Inputs(case)
    text = inputs.text("patient.preferences", record_missing=False)
    if text is None:
        return inputs.result(
            "fertility_declined", False, PREFERENCES_SOURCE, "no preference recorded"
        )
    parsed = parse_preferences(text)
    declined = bool(set(parsed.rejected_wishes) & set(_FERTILITY_AND_PREGNANCY))
    detail = parsed.reasons or ["no fertility wish or refusal recognised"]
    return inputs.result("fertility_declined", declined, PREFERENCES_SOURCE, detail)
