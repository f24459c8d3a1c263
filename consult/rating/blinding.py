"""Both plans of a packet through one normaliser: the same sections, in the same order, the same
items at the same level of detail, written the same way, whoever wrote the plan, and nothing
that names where it came from (issue 25: in every packet the longer plan was the system's, and
its machine phrasing gave it away).

What is left out, for both plans alike: engine and model names, confidence, rounds,
conflicts, agent rationales, evidence citations and knowledge-base unit ids, staging (the
packet's case summary carries the case's staging), timestamps, hashes, gate names and
severities, and the summary paragraph (its content is in the sections; its style is the surest
give-away). What remains is clinical content, normalised:

- **One sentence per item**, of at most ``MAX_WORDS`` words: the item's first sentence (or
  clause before a semicolon), cut at a clause boundary when longer, ending with a full stop.
- **Machine phrasing as clinical words**: a unit id in brackets is dropped, a case-file path
  becomes its label without its unit ("organ_function.qtc_ms" → "QTc"), "->" becomes "then",
  ">=" "at least", "<=" "at most", "(needs ...)" and "Before starting:" go, a gate's "cannot
  be checked for X; needs Y" becomes "Check Y before X", and a mention of an agent ("the
  Safety agent") becomes "the team".
- **The same level of detail in a packet** (``blind_packet``): both plans show the same number
  of alternatives, options not advised, precautions, follow-up items and data still needed
  (the smaller of the two plans' counts); items are cut to the length the terser plan allows
  (its pathway's words spread over the longer plan's items, at least three words each, and
  never before the last drug an item names); an item's "when", dose and
  precondition are shown, each as one short sentence, only when both plans give that kind of
  detail; the intent only when both state it. Every pathway step is shown: the pathway is the
  plan being rated.

Text is returned as plain strings: the template escapes it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clinical import lexicon
from clinical.vocab import MODALITY_LABELS, PHASE_LABELS
from consult.labels import fact_label, fact_labels, intent_label

ROLE_WORDS = (
    "diagnostic",
    "treatment",
    "safety",
    "monitoring",
    "coordinator",
    "hepatology",
    "interventional radiology",
    "interventional_radiology",
    "surgery",
    "radiation oncology",
    "radiation_oncology",
    "pathology",
    "cardio-oncology",
    "cardio_oncology",
    "fertility",
    "pharmacy",
)
MAX_WORDS = 20  # an item's sentence
DETAIL_WORDS = 12  # a detail's sentence ("when", dose, precondition)
NOTE_WORDS = 16  # a precaution, an option's reason, a follow-up item
_SECTIONS = "patient|diagnosis|index_lesion|staging|biomarkers|labs|organ_function|derived|notes"
# "organ_function.qtc_ms", "derived.frailty": a case-file field or derived fact by its path.
_FIELD = re.compile(rf"\b(?:{_SECTIONS})\.[a-z0-9_]+\b")
# " (common.gate.carboplatin-calvert)": a knowledge-base unit cited in brackets.
# The patterns that begin with white space start only where a run of it starts, and a unit id
# only where a word starts: tried again from every position of a long run, they were quadratic
# (issue 26).
_UNIT_IN_BRACKETS = re.compile(
    r"(?<!\s)\s*\((?:for\s+)?(?:[a-z][a-z0-9_-]*\.){2,}[a-z0-9_.-]*[a-z0-9_-]\)"
)
# "hcc.tx.resection": a bare unit id (three or more dotted lowercase parts).
_UNIT = re.compile(r"(?<![\w-])(?:[a-z][a-z0-9_-]*\.){2,}[a-z0-9_-]+\b")
# " [carboplatin auc5 mg: 670]": a value the safety gate calculated.
_CALCULATED = re.compile(r"(?<!\s)\s*\[([a-z0-9_ ]+): ([^\]]+)\]")
_AGENT = re.compile(
    r"\b(?:the\s+)?(?:" + "|".join(re.escape(w) for w in ROLE_WORDS) + r")\s+"
    r"(?:agent|member|role|seat|specialist)s?\b",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"\s*\([^)]*\)")
_UNCHECKED = re.compile(r":? cannot be checked for (?P<what>.+?); needs (?P<needs>.+)$")
# A unit in brackets after a clinical label: "QTc (ms)", "LVEF (%)", "Creatinine (mg/dL)".
_LABEL_UNIT = re.compile(
    r"\s\((?:ms|%|mm|cm|kg|years|months|g/dl|mg/dl|u/l|ng/ml|iu/ml|\u00d710⁹/l|10e9/l|"
    r"ml/min(?:/1\.73\s?m²)?|calvert, mg|mg)\)",
    re.IGNORECASE,
)
_MACHINE = (
    (re.compile(r"\s*(?:->|=>|→)\s*"), " then "),
    (re.compile(r"\s*(?:>=|≥)\s*"), " at least "),
    (re.compile(r"\s*(?:<=|≤)\s*"), " at most "),
    (re.compile(r"(?<=\w)\s+>\s+(?=\d)"), " over "),
    (re.compile(r"(?<=\w)\s+<\s+(?=\d)"), " under "),
    (re.compile(r"\s*\(needs [^()]*(?:\([^()]*\)[^()]*)*\)"), ""),
    (re.compile(r"\bBefore starting:\s*", re.IGNORECASE), ""),
    (re.compile(r"^\s*needs\s+", re.IGNORECASE), ""),
    (re.compile(r"\bnot indicated now:", re.IGNORECASE), "not indicated:"),
    (re.compile(r"\bnone of its indications holds\b", re.IGNORECASE), "criteria not met"),
    (re.compile(r"\be\.g\.\s*", re.IGNORECASE), "for example "),
    (re.compile(r"\bi\.e\.\s*", re.IGNORECASE), "that is "),
    (re.compile(r"\bvs\.?\s", re.IGNORECASE), "versus "),
    (re.compile(r"mg/m2\b"), "mg/m²"),
    (re.compile(r"_"), " "),
)
# A dose or schedule written into an item: "300 mg", "AUC 5", "15 mg/kg IV", "every 4 weeks",
# "days 1-21", "x6", "twice daily". The packet shows it apart ("Dose"), or not at all.
_DOSE = re.compile(
    r"\s*(?:"
    r"\b\d+(?:[.,]\d+)?(?:\s*(?:-|–|to)\s*\d+(?:[.,]\d+)?)?\s*"
    r"(?:mg/m²|mg/m2|mg/kg|mg|g/m²|g|µg|mcg|micrograms?|iu|units?|u/m²|gy|ml/kg|ml)\b"
    r"(?:\s+(?:iv|sc|po|orally|intravenously|subcutaneously))?"
    r"|\bauc\s*\d+(?:[.,]\d+)?(?:\s*-\s*\d+(?:[.,]\d+)?)?"
    r"|\b(?:once|twice|three\s+times)\s+(?:daily|a\s+day|weekly)"
    r"|\b(?:every|each)\s+\d+(?:\s*(?:-|–|to)\s*\d+)?\s*(?:days?|weeks?|months?|hours?)"
    r"|\bdays?\s+\d+(?:\s*(?:-|–|,|and|to)\s*\d+)*"
    r"|\b[x\u00d7]\s?\d+(?:\s*-\s*\d+)?(?:\s+(?:weeks?|cycles?|months?|doses?))?\b"
    r"|\bfor\s+\d+(?:\s*-\s*\d+)?\s+(?:cycles?|weeks?|months?|years?)"
    r"|\(\s*cycle\s+\d+\s*\)|\(\s*\d+\s+then\s+\d+\s*[a-z/]*\s*\)"
    r"|\b(?:daily|weekly|fortnightly)\b|\bonce\b"
    r")",
    re.IGNORECASE,
)
# A bracketed aside in an item: "(anatomical hepatectomy, laparoscopic where feasible)".
_ASIDE = re.compile(r"\s*\([^()]*(?:\([^()]*\)[^()]*)*\)")
_CLAUSE = re.compile(
    r",\s|\s\(|\s-\s|\s–\s|:\s|\s(?:with|then|or|for|before|after|to|at|in|of|until|"
    r"starting|from|where|if|when|unless|and/or)\s"
)


def neutral_text(text: Any) -> str:
    """One piece of plan text with internal identifiers rewritten (see the module doc)."""
    if not isinstance(text, str):
        return ""
    out = _UNIT_IN_BRACKETS.sub("", text)
    out = _CALCULATED.sub(_calculated, out)
    out = _FIELD.sub(lambda m: fact_label(m.group(0)), out)
    out = _UNIT.sub("", out)
    out = _AGENT.sub("the team", out)
    return re.sub(r"\s{2,}", " ", out).strip()


def _calculated(match: re.Match[str]) -> str:
    key = "derived." + match.group(1).strip().replace(" ", "_")
    label = fact_labels().get(key) or match.group(1).strip()
    return f" ({label}: {match.group(2).strip()})"


def _balanced(text: str) -> str:
    """Cut before a bracket the text opens and does not close."""
    depth, cut = 0, None
    for i, char in enumerate(text):
        if char == "(":
            if depth == 0:
                cut = i
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                cut = None
    return text[:cut].rstrip(" ,;:-") if cut is not None and depth else text


def doses_of(text: Any) -> list[str]:
    """The doses and schedules an item's text gives, in its order."""
    return [m.group().strip() for m in _DOSE.finditer(neutral_text(text))]


def clinical_sentence(
    text: Any, max_words: int = MAX_WORDS, *, full_stop: bool = True, item: bool = False
) -> str:
    """One plan text as one clinical sentence of at most ``max_words`` words. An ``item``
    (a pathway step, an alternative) loses its doses and bracketed asides: the packet shows
    doses apart, and only when both plans give them."""
    out = neutral_text(text)
    for pattern, words in _MACHINE:
        out = pattern.sub(words, out)
    out = _LABEL_UNIT.sub("", out)
    if item:
        out = _ASIDE.sub("", _DOSE.sub("", out))
        out = re.sub(r"\s+([,.;:])", r"\1", out)
        out = re.sub(r"(?:,\s*)+(?=[,.;]|$)", "", out)
    out = re.split(r"(?<=[a-z0-9)][.!?])\s+|;\s*", out, maxsplit=1)[0]
    out = re.sub(r"\s{2,}", " ", out).strip(" .;,:")
    if out.startswith("(") and out.endswith(")") and _balanced(out[1:-1]) == out[1:-1]:
        out = out[1:-1].strip()
    return _cut(out, max_words, full_stop=full_stop)


_TRAILING = re.compile(
    r"(?:\s+(?:and|or|and/or|from|before|after|to|of|the|a|an|with|at|in|for|by|on|as|"
    r"until|if|when|then|plus|\d+))+$",
    re.IGNORECASE,
)


def _cut(text: str, max_words: int, *, full_stop: bool = True, drugs: bool = False) -> str:
    """At most ``max_words`` words, cut at a clause boundary (the last one past half the
    words, else the last one, else the word limit without a dangling "and" or "from"); with
    ``drugs`` (a treatment item) never before the last drug the text names: a shortened
    regimen must not lose a drug."""
    out = text.strip(" .;,:")
    words = out.split(" ")
    if len(words) > max_words:
        drugs_end = max((m.end for m in lexicon.mentions(out)), default=0) if drugs else 0
        head = " ".join(words[:max_words])
        if drugs_end > len(head):
            boundary = _CLAUSE.search(out, drugs_end)
            head = out[: boundary.start()] if boundary else out
        boundaries = [
            m.start()
            for m in _CLAUSE.finditer(head + " ")
            if m.start() >= drugs_end and head[: m.start()].strip()
        ]
        late = [b for b in boundaries if len(head[:b].split(" ")) >= max(2, max_words // 2)]
        if late:
            out = head[: late[-1]]
        elif boundaries:
            out = head[: boundaries[-1]]
        else:
            out = _TRAILING.sub("", head) or head
    out = _balanced(out).strip(" .;,:")
    if not out:
        return ""
    out = out[0].upper() + out[1:]
    return f"{out}." if full_stop else out


def _words(text: str) -> int:
    return len(text.split())


def _lower_first(text: str) -> str:
    """ "Contrast CT" -> "contrast CT", but "ALT" stays "ALT"."""
    if len(text) > 1 and text[1].isupper():
        return text
    return text[:1].lower() + text[1:]


def _condition(text: str) -> str:
    """A "when" as the rest of "Chosen if ...": without its own "if" or "when"."""
    out = clinical_sentence(text, DETAIL_WORDS)
    out = re.sub(r"^(?:if|when|once|only if|in case)\s+", "", out, flags=re.IGNORECASE)
    return out[:1].upper() + out[1:] if out else out


@dataclass(frozen=True)
class BlindItem:
    title: str  # the modality, for treatment items
    text: str
    details: tuple[tuple[str, str], ...] = ()  # ("Chosen if", "..."), ("Dose", "...")


@dataclass(frozen=True)
class BlindPlan:
    intent: str  # "" when not shown
    pathway: tuple[BlindItem, ...]
    alternatives: tuple[BlindItem, ...]
    not_advised: tuple[BlindItem, ...]
    precautions: tuple[str, ...]
    follow_up: tuple[BlindItem, ...]
    needed: tuple[str, ...]
    abstains: bool = False
    sections: tuple[str, ...] = field(
        default=(
            "Intent",
            "Recommended pathway",
            "Alternatives",
            "Not advised",
            "Precautions",
            "Follow-up",
            "Information still needed",
        )
    )


def _unique(items: list[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)


DETAIL_KINDS = ("Chosen if", "Dose", "Check first")


def _component(c: Mapping[str, Any], *, alternative: bool) -> BlindItem:
    modality = str(c.get("modality") or "")
    details: list[tuple[str, str]] = []
    if alternative and c.get("when"):
        details.append(("Chosen if", _condition(str(c.get("when")))))
    doses = [d for d in c.get("dose_adjustments") or [] if neutral_text(d)]
    given = doses_of(c.get("description"))
    if doses or given:
        text = doses[0] if doses else ", ".join(given)
        details.append(("Dose", clinical_sentence(text, DETAIL_WORDS)))
    conditions = [x for x in c.get("conditions") or [] if neutral_text(x)]
    if conditions:
        details.append(("Check first", clinical_sentence(conditions[0], DETAIL_WORDS)))
    return BlindItem(
        title=MODALITY_LABELS.get(modality, modality.capitalize()),
        text=clinical_sentence(c.get("description"), item=True),
        details=tuple(d for d in details if d[1]),
    )


def _gate_text(gate: Mapping[str, Any]) -> str:
    detail = str(gate.get("detail") or "")
    match = _UNCHECKED.search(detail)
    if match:
        needs = _unique(
            [
                _lower_first(clinical_sentence(n, 6, full_stop=False))
                for n in match["needs"].split(", ")
            ]
        )
        what = match["what"]
        detail = f"Check {', '.join(needs)} before {what}"
    return clinical_sentence(detail, NOTE_WORDS)


def _precautions(doc: Mapping[str, Any]) -> tuple[str, ...]:
    safety = doc.get("safety") or {}
    order = {"critical": 0, "major": 1, "minor": 2}
    flags = sorted(safety.get("flags") or [], key=lambda f: order.get(f.get("severity"), 3))
    notes = [clinical_sentence(f.get("text"), NOTE_WORDS) for f in flags]
    notes += [clinical_sentence(n, NOTE_WORDS) for n in safety.get("notes") or []]
    # A gate that failed or could not be checked says so unless a warning already did (the
    # engine writes a failed gate's rule as a warning too: "Name. Text" beside "Name: Text").
    said = [n.casefold() for n in notes]
    unrecorded: list[str] = []
    for status in ("fail", "unknown"):
        for gate in safety.get("gates") or []:
            if gate.get("status") != status:
                continue
            name = str(gate.get("detail") or "").split(":", 1)[0].casefold()
            if any(s.startswith(name) for s in said):
                continue
            match = _UNCHECKED.search(str(gate.get("detail") or ""))
            if status == "unknown" and match:
                # What the record lacks, said once for all the rules that wait for it, as a
                # clinician notes it ("QTc and LVEF not recorded").
                unrecorded += [
                    _lower_first(clinical_sentence(n, 6, full_stop=False))
                    for n in match["needs"].split(", ")
                ]
                continue
            text = _gate_text(gate)
            if text:
                notes.append(text)
                said.append(text.casefold())
    missing = [n for n in _unique([_BRACKETED.sub("", n).strip() for n in unrecorded]) if n]
    if missing:
        notes.append(clinical_sentence(f"Not recorded: {', '.join(missing)}", NOTE_WORDS))
    return _unique(notes)


_PHASE_LEAD = {
    "acute_0_3m": "In the first 3 months",
    "intermediate_3_12m": "From 3 to 12 months",
    "long_term_12m_plus": "After 12 months",
}


def _follow_up(doc: Mapping[str, Any]) -> tuple[BlindItem, ...]:
    items = [m for m in doc.get("monitoring") or [] if m.get("phase") in PHASE_LABELS]
    items.sort(key=lambda m: list(PHASE_LABELS).index(m["phase"]))
    out = []
    for m in items:
        what = clinical_sentence(m.get("what"), NOTE_WORDS, full_stop=False)
        interval = clinical_sentence(m.get("interval"), 8, full_stop=False)
        text = f"{_PHASE_LEAD[m['phase']]}: {_lower_first(what)}"
        if interval:
            text += f", {_lower_first(interval)}"
        out.append(BlindItem("", text + "."))
    return tuple(out)


def _needed(doc: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for item in doc.get("needs_data") or []:
        text = str(item)
        # "labs.hbsag (for common.tx.x)": the engine's own bookkeeping of who asked.
        path = text.split(" (for ", 1)[0].strip()
        out.append(fact_label(path) if _FIELD.fullmatch(path) or path == "notes" else text)
    return _unique([clinical_sentence(t, 8) for t in out])


def blind_plan(doc: Mapping[str, Any]) -> BlindPlan:
    """A ``mdtboard.plan/1`` document, system or comparator, in the neutral form (alone: for
    a comparator's own page; a packet equalises its two plans with ``blind_packet``)."""
    recommendation = doc.get("recommendation") or {}
    components = recommendation.get("components") or []
    pathway = sorted(
        (c for c in components if c.get("role", "primary") == "primary"),
        key=lambda c: c.get("order") or 99,
    )
    alternatives = sorted(
        (c for c in components if c.get("role") == "alternative"),
        key=lambda c: c.get("rank") or 99,
    )
    return BlindPlan(
        intent=intent_label(recommendation.get("intent")),
        pathway=tuple(_component(c, alternative=False) for c in pathway),
        alternatives=tuple(_component(c, alternative=True) for c in alternatives),
        not_advised=tuple(
            BlindItem(
                clinical_sentence(r.get("option"), 8, full_stop=False, item=True),
                clinical_sentence(r.get("reason"), NOTE_WORDS),
            )
            for r in doc.get("rejected_options") or []
        ),
        precautions=_precautions(doc),
        follow_up=_follow_up(doc),
        needed=_needed(doc),
        abstains=bool(doc.get("abstain")),
    )


def _details(plan: BlindPlan) -> set[str]:
    return {key for item in (*plan.pathway, *plan.alternatives) for key, _ in item.details}


def _keep_details(
    items: tuple[BlindItem, ...], kinds: set[str], words: int
) -> tuple[BlindItem, ...]:
    return tuple(
        replace(
            i,
            text=_cut(i.text, words, drugs=True),
            details=tuple(
                (k, _cut(v, max(words, MIN_DETAIL_WORDS))) for k, v in i.details if k in kinds
            ),
        )
        for i in items
    )


def _item_words(plan: BlindPlan) -> tuple[int, int]:
    """Words and items of the pathway and alternatives."""
    items = (*plan.pathway, *plan.alternatives)
    return sum(_words(i.text) for i in items), len(items)


MIN_ITEM_WORDS = 3
MIN_DETAIL_WORDS = 6


def _words_per_item(a: BlindPlan, b: BlindPlan) -> int:
    """How many words an item of either plan may have: the terser plan's words spread over
    the longer plan's items, so that both pathways read about as long."""
    (words_a, items_a), (words_b, items_b) = _item_words(a), _item_words(b)
    most = max(items_a, items_b, 1)
    return max(MIN_ITEM_WORDS, min(MAX_WORDS, min(words_a, words_b) // most + 1))


def _budget(mine: Sequence[str], theirs: Sequence[str], floor: int) -> int:
    """Words an entry of a section may have: the terser plan's words spread over the entries
    shown, so that the section reads about as long in both plans."""
    most = max(len(mine), len(theirs), 1)
    words = min(sum(map(_words, mine)), sum(map(_words, theirs)))
    return max(floor, min(MAX_WORDS, words // most + 1))


def _notes(notes: tuple[str, ...], words: int) -> tuple[str, ...]:
    return tuple(_cut(n, words) for n in notes)


def _equalised(plan: BlindPlan, other: BlindPlan, kinds: set[str], words: int) -> BlindPlan:
    not_advised = plan.not_advised[: len(other.not_advised)]
    theirs = other.not_advised[: len(plan.not_advised)]
    reason_words = _budget([i.text for i in not_advised], [i.text for i in theirs], 3)
    option_words = _budget([i.title for i in not_advised], [i.title for i in theirs], 2)
    precautions = plan.precautions[: len(other.precautions)]
    follow_up = plan.follow_up[: len(other.follow_up)]
    needed = plan.needed[: len(other.needed)]
    return replace(
        plan,
        intent=plan.intent if "Not stated" not in (plan.intent, other.intent) else "",
        pathway=_keep_details(plan.pathway, kinds, words),
        alternatives=_keep_details(
            plan.alternatives[: len(other.alternatives)], kinds | {"Chosen if"}, words
        ),
        not_advised=tuple(
            BlindItem(
                _cut(i.title, option_words, full_stop=False, drugs=True),
                _cut(i.text, reason_words),
            )
            for i in not_advised
        ),
        precautions=_notes(
            precautions,
            _budget(precautions, other.precautions[: len(plan.precautions)], 4),
        ),
        follow_up=tuple(
            replace(i, text=_cut(i.text, w))
            for i, w in zip(
                follow_up,
                [
                    _budget(
                        [x.text for x in follow_up],
                        [x.text for x in other.follow_up[: len(plan.follow_up)]],
                        6,
                    )
                ]
                * len(follow_up),
                strict=True,
            )
        ),
        needed=_notes(needed, _budget(needed, other.needed[: len(plan.needed)], 2)),
    )


def blind_packet(
    first: Mapping[str, Any], second: Mapping[str, Any]
) -> tuple[BlindPlan, BlindPlan]:
    """The two plans of a packet at the same level of detail (see the module doc)."""
    a, b = blind_plan(first), blind_plan(second)
    kinds = _details(a) & _details(b)
    words = _words_per_item(a, b)
    return _equalised(a, b, kinds, words), _equalised(b, a, kinds, words)


def blind_plan_text(plan: BlindPlan, label: str) -> str:
    """The same plan as plain text, one item per line: for the LLM rater (it sees what
    physicians see) and for the blinding check."""
    lines = [f"PLAN {label}"]
    if plan.intent:
        lines.append(f"Intent: {plan.intent}")
    lines.append("Recommended pathway:")
    lines += [f"  {i}. {_item_line(item)}" for i, item in enumerate(plan.pathway, 1)] or ["  none"]
    lines.append("Alternatives:")
    lines += [f"  {i}. {_item_line(item)}" for i, item in enumerate(plan.alternatives, 1)] or [
        "  none"
    ]
    lines.append("Not advised:")
    lines += [f"  - {item.title}: {item.text}" for item in plan.not_advised] or ["  none"]
    lines.append("Precautions:")
    lines += [f"  - {note}" for note in plan.precautions] or ["  none"]
    lines.append("Follow-up:")
    lines += [f"  - {item.text}" for item in plan.follow_up] or ["  none"]
    lines.append("Information still needed:")
    lines += [f"  - {need}" for need in plan.needed] or ["  none"]
    return "\n".join(lines)


def _item_line(item: BlindItem) -> str:
    head = f"{item.title}: {item.text}" if item.title else item.text
    return head + "".join(f" {k}: {v}" for k, v in item.details)


def pair_similarity(first: Mapping[str, Any], second: Mapping[str, Any]) -> float:
    """How alike a packet's two plans read once blinded, from 0 to 1 (the share of words in
    the same order, difflib's ratio): 1.0 is the same plan twice."""
    a, b = blind_packet(first, second)
    words_a = blind_plan_text(a, "").casefold().split()
    words_b = blind_plan_text(b, "").casefold().split()
    if words_a == words_b:
        return 1.0
    return round(difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).ratio(), 4)


def similarity_words(value: float | None) -> str:
    """A similarity for the administrator: identical, nearly identical, or neither."""
    if value is None:
        return ""
    if value >= IDENTICAL:
        return "identical"
    if value >= NEARLY_IDENTICAL:
        return "nearly identical"
    return ""


IDENTICAL = 0.999
NEARLY_IDENTICAL = 0.85


def packet_texts(
    documents: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> list[tuple[str, str]]:
    """(system text, comparator text) of each packet, as its raters read them."""
    out = []
    for system, comparator in documents:
        a, b = blind_packet(system, comparator)
        out.append((blind_plan_text(a, ""), blind_plan_text(b, "")))
    return out
