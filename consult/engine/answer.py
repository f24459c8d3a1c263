"""The answer to the board's question in at most three sentences, in the question's own terms:
what is and is not advised (and why), the recommended option with its precondition, and what
would change it. Built from the plan document alone (and the fact labels given), so the page,
the board and the PDF say the same thing; the full pathway follows it on each of them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clinical import lexicon
from clinical.vocab import Modality

MAX_SENTENCES = 3
# A clause longer than this many words is cut at a word boundary (the full text follows below
# the answer, in the pathway, the alternatives and the ruled-out options).
MAX_WORDS = 22


@dataclass(frozen=True)
class Family:
    """A kind of option a question can name ("resection", "TACE", "chemotherapy") and how a
    plan item is recognised as one: by its modality, by words, or by the drug classes the
    lexicon reads in it."""

    key: str
    asked: re.Pattern[str]
    modalities: frozenset[str] = frozenset()
    words: re.Pattern[str] | None = None
    classes: frozenset[str] = frozenset()


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_RESECTION = (
    r"\b(?:resect\w*|surg\w*|operat\w*|hepatectom\w*|lobectom\w*|segmentectom\w*|"
    r"pneumonectom\w*|mastectom\w*|lumpectom\w*|breast[- ]conserving|excision)\b"
)
_ABLATION = r"\b(?:ablat\w*|rfa|mwa|radiofrequency|microwave)\b"
_TACE = (
    r"\b(?:tace|tare|sirt|chemoemboli[sz]\w*|radioemboli[sz]\w*|emboli[sz]ation|"
    r"transarterial|locoregional)\b"
)
_TRANSPLANT = r"\b(?:transplant\w*|asct|auto-?sct|allo-?sct|hsct)\b"
_RADIOTHERAPY = (
    r"\b(?:radiotherap\w*|radiation|irradiat\w*|sbrt|sabr|stereotactic|chemoradi\w*|rt)\b"
)
_SURVEILLANCE = (
    r"\b(?:surveillance|observ\w*|watch(?:ful)?[- ](?:and[- ])?wait\w*|watchful|"
    r"active monitoring|wait[- ]and[- ]see)\b"
)
_SUPPORTIVE = r"\b(?:best supportive care|bsc|palliative care|hospice|supportive care)\b"

FAMILIES: tuple[Family, ...] = (
    Family("resection", _rx(_RESECTION), frozenset({Modality.SURGERY}), _rx(_RESECTION)),
    Family("ablation", _rx(_ABLATION), frozenset({Modality.ABLATION}), _rx(_ABLATION)),
    Family("tace", _rx(_TACE), frozenset({Modality.LOCOREGIONAL}), _rx(_TACE)),
    Family("transplant", _rx(_TRANSPLANT), frozenset({Modality.TRANSPLANT}), _rx(_TRANSPLANT)),
    Family(
        "radiotherapy", _rx(_RADIOTHERAPY), frozenset({Modality.RADIOTHERAPY}), _rx(_RADIOTHERAPY)
    ),
    Family(
        "surveillance", _rx(_SURVEILLANCE), frozenset({Modality.SURVEILLANCE}), _rx(_SURVEILLANCE)
    ),
    Family("supportive", _rx(_SUPPORTIVE), frozenset(), _rx(_SUPPORTIVE)),
    Family("car_t", _rx(r"\bcar[- ]?t\b|chimeric antigen"), classes=frozenset({"car_t"})),
    Family(
        "chemotherapy",
        _rx(r"\bchemo(?:therap\w*)?\b|\bcytotoxic"),
        classes=frozenset({"chemotherapy"}),
        words=_rx(r"\bchemo\w*"),
    ),
    Family(
        "immunotherapy",
        _rx(r"\bimmunotherap\w*|\bcheckpoint|\bpd-?l?1\b"),
        classes=frozenset({"immunotherapy", "ici"}),
        words=_rx(r"\bimmunotherap\w*|\bcheckpoint"),
    ),
    Family(
        "targeted",
        _rx(r"\btargeted\b|\btki\b|tyrosine kinase"),
        classes=frozenset({"tki"}),
        words=_rx(r"\btargeted\b|\btki\b"),
    ),
    Family(
        "endocrine",
        _rx(r"\bendocrine\b|\bhormon\w* therap\w*|\baromatase"),
        classes=frozenset({"endocrine"}),
        words=_rx(r"\bendocrine\b|\baromatase"),
    ),
    Family("systemic", _rx(r"\bsystemic\b"), frozenset({Modality.SYSTEMIC}), _rx(r"\bsystemic\b")),
)

# "after surgery", "following resection": what the question takes as done, not an option.
_CONTEXT_BEFORE = re.compile(
    r"\b(?:after|following|post|since|previous|prior|despite|from)[\s-]+(?:\w+\s+)?$", re.I
)


@dataclass(frozen=True)
class Asked:
    """An option the question names, as it names it, and how a plan item is recognised as it."""

    words: str
    family: Family | None = None
    drug: str = ""


@dataclass(frozen=True)
class Verdict:
    """What the plan does with an option the question names."""

    asked: str
    status: str  # "advised" | "with" | "alternative" | "not_advised" | "not_in_plan"
    detail: str = ""


@dataclass(frozen=True)
class Answer:
    sentences: tuple[str, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


# --- reading the question --------------------------------------------------------------------
def asked_options(question: str) -> list[Asked]:
    """The options a question names, in the order it names them: kinds of treatment
    ("resection", "TACE", "chemotherapy") and drugs by name. A treatment the question takes
    as done ("after surgery") is context, not an option."""
    found: list[tuple[int, Asked]] = []
    taken: list[tuple[int, int]] = []
    for family in FAMILIES:
        for match in family.asked.finditer(question):
            start, end = match.span()
            if any(s < end and start < e for s, e in taken):
                continue
            if _CONTEXT_BEFORE.search(question[:start]):
                continue
            taken.append((start, end))
            found.append((start, Asked(match.group(0), family=family)))
            break
    for mention in lexicon.mentions(question):
        if mention.cls or not mention.drugs:
            continue
        if any(s < mention.end and mention.start < e for s, e in taken):
            continue
        if _CONTEXT_BEFORE.search(question[: mention.start]):
            continue
        taken.append((mention.start, mention.end))
        words = question[mention.start : mention.end]
        found.append((mention.start, Asked(words, drug=sorted(mention.drugs)[0])))
    return [asked for _, asked in sorted(found, key=lambda pair: pair[0])]


def _item_text(c: Mapping[str, Any]) -> str:
    return " ".join([str(c.get("description") or ""), *(str(a) for a in c.get("agents") or [])])


def _is(asked: Asked, *, text: str, modality: str = "", agents: Sequence[str] = ()) -> bool:
    """Whether a plan item (or a ruled-out option, which has text only) is the option asked."""
    given = lexicon.given(list(agents), text)
    if asked.drug:
        return given.gives(asked.drug)
    family = asked.family
    if family is None:
        return False
    if modality and modality in family.modalities:
        return True
    if family.modalities and modality and modality not in family.modalities:
        # A surgery named inside a systemic item ("after complete resection: osimertinib")
        # does not make that item the surgery.
        return False
    if family.classes and any(given.gives_class(cls) for cls in family.classes):
        return True
    return bool(family.words and family.words.search(text))


# --- reading the plan -------------------------------------------------------------------------
def _components(plan: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    components = (plan.get("recommendation") or {}).get("components") or []
    key = "order" if role == "primary" else "rank"
    chosen = [c for c in components if (c.get("role") or "primary") == role]
    return sorted(chosen, key=lambda c: c.get(key) if isinstance(c.get(key), int) else 99)


def _drop_brackets(text: str) -> str:
    out, depth = [], 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif not depth:
            out.append(char)
    text = re.sub(r"\s{2,}", " ", "".join(out))
    return re.sub(r"\s+([,;:.])", r"\1", text).strip()


def _words(text: str, limit: int = MAX_WORDS) -> str:
    words = text.split()
    if len(words) <= limit:
        return text.strip()
    return " ".join(words[:limit]).rstrip(",;:.") + "…"


def _clause(text: str, limit: int = MAX_WORDS) -> str:
    """The first clause of a text, without brackets, at most ``limit`` words."""
    head = re.split(r";\s|:\s|\.\s", _drop_brackets(str(text or "")), maxsplit=1)[0]
    return _words(head.strip().rstrip("."), limit)


def short_name(c: Mapping[str, Any], limit: int = MAX_WORDS) -> str:
    """A plan item as the answer names it: the name before its colon ("Neoadjuvant TCHP"),
    else its first clause with its doses ("Osimertinib 80 mg once daily until progression")."""
    description = str(c.get("description") or "").strip()
    head, colon, _ = description.partition(": ")
    if colon and 1 <= len(head.split()) <= 6:
        return _drop_brackets(head)
    return _clause(description, limit)


def _lower_first(text: str) -> str:
    # "Liver resection" -> "liver resection"; "TACE", "R-CHOP", "CD19 CAR T" stay.
    if len(text) > 1 and text[0].isupper() and not text[1].isupper() and text[1] != "-":
        return text[0].lower() + text[1:]
    return text


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _join(items: Sequence[str]) -> str:
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


_CONDITIONAL = re.compile(r"\b(?:if|when|once|unless)\b", re.I)


def _when(text: str) -> str:
    """An alternative's "when" as a condition: "if …", "once …", "when …" (the first clause
    that states one: "Standard for IPI 0-1; for IPI 2-5 when …" is the second)."""
    clauses = [c for c in re.split(r";\s", _drop_brackets(str(text or ""))) if c.strip()]
    chosen = next((c for c in clauses if _CONDITIONAL.search(c)), clauses[0] if clauses else "")
    clause = _clause(chosen)
    if not clause:
        return ""
    lead = clause.split()[0].casefold()
    if lead in ("if", "when", "once", "unless", "only", "after", "in", "for", "with"):
        return _lower_first(clause)
    return "if " + _lower_first(clause)


def _fact(fact: str, labels: Mapping[str, str]) -> str:
    return labels.get(fact) or fact.split(".")[-1].replace("_", " ")


# The facts a board names first when it says why: stage, subtype, drivers, fitness.
_DEFINING = re.compile(
    r"stage|bclc|child|subtype|mutation|fusion|rearrang|her2|pd-?l1|ipi|flipi|entity|"
    r"histolog|setting|ecog|hormone|alk|egfr|kras|braf|ros1",
    re.I,
)
_SAYS_NOTHING = {"no", "none", "none_recorded", "false", "not recorded"}


def _rationale(
    c: Mapping[str, Any], limit: int = 2, values: Mapping[str, str] | None = None
) -> list[str]:
    """ "BCLC stage: C ✓" -> "BCLC stage C": the defining facts that made the item apply
    (stage, subtype, driver) before the others; absences ("Breast operation done: none")
    say nothing in an answer."""
    defining: list[str] = []
    other: list[str] = []
    for line in c.get("rationale") or []:
        text = str(line).replace("✓", "").strip()
        label, colon, value = text.partition(": ")
        if not colon:
            other.append(text)
            continue
        if value.strip().casefold() in _SAYS_NOTHING or label.casefold() == "line of therapy":
            continue
        value = (values or {}).get(value.strip(), value.strip())
        (defining if _DEFINING.search(label) else other).append(f"{label} {value}".strip())
    return (defining + other)[:limit]


def _reason(reason: str) -> str:
    """A ruled-out option's reason, shortened: "not indicated now: BCLC stage C (needs A);
    …" -> "BCLC stage C"."""
    text = re.sub(r"^\s*not indicated now:\s*", "", str(reason or ""), flags=re.I)
    text = re.sub(r"^\s*none of its indications holds\s*", "none of its indications holds ", text)
    return _clause(text, 16)


_CONFIRM = re.compile(r"^\s*confirm before starting (?P<drugs>[^:]+):\s*(?P<fact>.+)$", re.I)


def _confirm(plan: Mapping[str, Any], main: Mapping[str, Any]) -> list[str]:
    """What must be recorded before the recommended option starts ("Confirm before starting
    osimertinib: QTc (ms), not recorded (…)" -> "QTc (ms)"), when it concerns that option's
    drugs (a check before the adjuvant drug is not one before the operation)."""
    gives = lexicon.given([str(a) for a in main.get("agents") or []], _item_text(main))
    out = []
    for line in (plan.get("recommendation") or {}).get("confirm_first") or []:
        match = _CONFIRM.match(str(line))
        if match is None:
            fact = str(line)
        else:
            drugs = [d.strip() for d in re.split(r",|\band\b", match["drugs"]) if d.strip()]
            named = [lexicon.resolve(d) for d in drugs]
            if not any(r is None or any(gives.gives(d) for d in r[0]) for r in named):
                continue
            fact = match["fact"]
        fact = fact.split(", not recorded")[0].strip()
        if fact and fact not in out:
            out.append(fact)
    return out


def _precondition(plan: Mapping[str, Any], main: Mapping[str, Any]) -> str:
    if main.get("waits_for"):
        return "only once " + _clause(str(main["waits_for"]))
    confirm = _confirm(plan, main)
    if confirm:
        return "after recording " + _join([_lower_first(c) for c in confirm[:3]])
    conditions = [str(c) for c in main.get("conditions") or [] if str(c).strip()]
    if conditions:
        text = _drop_brackets(conditions[0])
        head, colon, rest = text.partition(": ")
        if colon and len(head.split()) <= 4:
            text = rest
        return "before starting: " + _lower_first(_clause(text))
    return ""


# --- the answer -------------------------------------------------------------------------------
def verdicts(plan: Mapping[str, Any], asked: Iterable[Asked]) -> list[Verdict]:
    primary = _components(plan, "primary")
    alternatives = _components(plan, "alternative")
    rejected = list(plan.get("rejected_options") or [])
    out = []
    for option in asked:

        def matches(c: Mapping[str, Any], option: Asked = option) -> bool:
            return _is(
                option,
                text=_item_text(c),
                modality=str(c.get("modality") or ""),
                agents=[str(a) for a in c.get("agents") or []],
            )

        main = [c for c in primary if not c.get("adjunct") and matches(c)]
        with_ = [c for c in primary if c.get("adjunct") and matches(c)]
        alt = [c for c in alternatives if matches(c)]
        ruled = [r for r in rejected if _is(option, text=str(r.get("option") or ""))]
        if main:
            out.append(Verdict(option.words, "advised"))
        elif with_:
            out.append(Verdict(option.words, "with", short_name(with_[0])))
        elif alt:
            out.append(Verdict(option.words, "alternative", _when(str(alt[0].get("when") or ""))))
        elif ruled:
            out.append(Verdict(option.words, "not_advised", _reason(str(ruled[0].get("reason")))))
        else:
            out.append(Verdict(option.words, "not_in_plan"))
    return out


def _abstains(plan: Mapping[str, Any]) -> bool:
    recommendation = plan.get("recommendation") or {}
    return bool(plan.get("abstain")) or str(recommendation.get("intent") or "") == "abstain"


def _abstention(plan: Mapping[str, Any]) -> Mapping[str, Any]:
    """The plan's account of why it abstains (``recommendation.abstention``), if any."""
    found = (plan.get("recommendation") or {}).get("abstention")
    return found if isinstance(found, Mapping) else {}


def _abstain_reason(plan: Mapping[str, Any]) -> str:
    outside = [
        str(s.get("label") or "")
        for s in _abstention(plan).get("situations") or []
        if isinstance(s, Mapping) and not s.get("covered") and s.get("label")
    ]
    if outside:
        return f"the case is outside the knowledge base ({_join(outside[:3])})"
    recommendation = plan.get("recommendation") or {}
    for source in (_abstention(plan), recommendation, plan.get("abstention") or {}, plan):
        for key in ("abstain_reason", "reason"):
            if isinstance(source, Mapping) and source.get(key):
                return _clause(str(source[key]), 30)
    return ""


def _needs(plan: Mapping[str, Any], labels: Mapping[str, str], limit: int = 3) -> list[str]:
    out: list[str] = []
    for item in plan.get("needs_data") or []:
        fact = str(item).split(" (for ")[0].strip()
        label = _fact(fact, labels) if re.fullmatch(r"[a-z_]+\.[a-z0-9_]+", fact) else fact
        if label and label not in out:
            out.append(label)
    return out[:limit]


def _verdict_sentence(found: Sequence[Verdict]) -> str:
    """The options asked about that the plan does not lead with, grouped as the board would
    say them: not advised (with the reason), alternatives (with when), not in the plan."""
    parts = []
    not_advised = [v for v in found if v.status == "not_advised"]
    if not_advised:
        verb = "are" if len(not_advised) > 1 else "is"
        if len({v.detail for v in not_advised}) == 1:
            names = _join([_lower_first(v.asked) for v in not_advised])
            parts.append(f"{names} {verb} not advised now: {not_advised[0].detail}")
        else:
            names = _join([f"{_lower_first(v.asked)} ({_words(v.detail, 8)})" for v in not_advised])
            parts.append(f"{names} {verb} not advised now")
    alternatives = [v for v in found if v.status == "alternative"]
    if len(alternatives) == 1:
        only = alternatives[0]
        parts.append(f"{_lower_first(only.asked)} is an alternative {only.detail}")
    elif alternatives:
        names = _join([_lower_first(v.asked) for v in alternatives])
        parts.append(f"{names} are alternatives (see below)")
    for v in found:
        if v.status == "with":
            parts.append(f"{_lower_first(v.asked)} goes with the pathway")
    absent = [_lower_first(v.asked) for v in found if v.status == "not_in_plan"]
    if absent:
        verb = "are" if len(absent) > 1 else "is"
        parts.append(f"{_join(absent)} {verb} not part of this plan")
    if not parts:
        return ""
    return _upper_first("; ".join(p.strip() for p in parts)) + "."


def _change_sentence(
    plan: Mapping[str, Any],
    labels: Mapping[str, str],
    alternatives: Sequence[Mapping[str, Any]],
    found: Sequence[Verdict],
) -> str:
    """What would change the recommendation: the first decisive fact, else the first
    alternative with its when, else the missing data the plan waits for."""
    for d in plan.get("decisive_facts") or []:
        if not isinstance(d, Mapping) or not d.get("primary_would_be"):
            continue
        fact = _fact(str(d.get("fact") or ""), labels)
        would = _lower_first(_clause(str(d["primary_would_be"]), 12))
        varied = d.get("varied_to")
        recorded = d.get("recorded")
        condition = (
            f"If {fact} were {varied}"
            if recorded is None
            else f"If {fact} were {varied} rather than {recorded}"
        )
        return f"{condition}, {would} would be recommended — see Decisive facts."
    if alternatives and not any(v.status == "alternative" for v in found):
        alt = alternatives[0]
        when = _when(str(alt.get("when") or ""))
        if when:
            return f"{_upper_first(when)}: {_lower_first(short_name(alt, 12))} instead."
        return f"Next best: {_lower_first(short_name(alt))}."
    return ""


def _not_advised_sentence(plan: Mapping[str, Any]) -> str:
    rejected = list(plan.get("rejected_options") or [])
    if not rejected:
        return ""
    names = [_lower_first(_clause(str(r.get("option") or ""), 6)) for r in rejected]
    reasons = {_reason(str(r.get("reason") or "")) for r in rejected}
    shown = names[:4] + ([f"{len(names) - 4} more"] if len(names) > 4 else [])
    if len(reasons) == 1:
        return f"Not advised: {_join(shown)} ({reasons.pop()})."
    return f"Not advised: {_join(shown)} (see Ruled out)."


def _stop(sentence: str) -> str:
    """One full stop, none after an ellipsis ("…." reads as a typo)."""
    return re.sub(r"…\.$", "…", sentence)


def plan_answer(
    plan: Mapping[str, Any],
    *,
    question: str = "",
    labels: Mapping[str, str] | None = None,
    values: Mapping[str, str] | None = None,
) -> Answer:
    """At most three sentences that answer the question: (1) what is and is not advised of
    the options it names, with the reason; (2) the recommended option with its precondition;
    (3) what would change it. A plan that abstains says so first, with what it needs.
    ``labels``: facts by their clinical names; ``values``: coded values in words
    ("exon19del" -> "exon 19 deletion")."""
    labels = labels or {}
    recommendation = plan.get("recommendation") or {}
    question = question or str(recommendation.get("question") or "")
    found = verdicts(plan, asked_options(question))
    primary = _components(plan, "primary")
    alternatives = _components(plan, "alternative")
    options = [c for c in primary if not c.get("adjunct")] or primary
    sentences: list[str] = []
    verdict = _verdict_sentence(found)
    if _abstains(plan) or not options:
        reason = _abstain_reason(plan).rstrip(".")
        head = "No treatment can be recommended yet"
        sentences.append(f"{head}: {reason}." if reason else f"{head}.")
        outside = _abstention(plan)
        steps = [
            _clause(str(i.get("text") or ""), 14) for i in outside.get("immediate_steps") or []
        ]
        decides = [
            _clause(str(i.get("text") or ""), 16) for i in outside.get("board_decides") or []
        ]
        needs = [] if outside else _needs(plan, labels)
        if steps:
            lead = "Now" if outside.get("emergency") else "First"
            sentences.append(f"{lead}: {'; '.join(_lower_first(s) for s in steps[:2] if s)}.")
        if decides:
            sentences.append(f"The board decides: {_lower_first(decides[0])}.")
        if needs:
            sentences.append(f"Needed first: {_join(needs)}.")
        if alternatives and not needs and not outside:
            alt = alternatives[0]
            sentences.append(
                f"{_upper_first(_when(str(alt.get('when') or '')) or 'possibly')}: "
                f"{_lower_first(short_name(alt))}."
            )
        if verdict:
            sentences.append(verdict)
        return Answer(tuple(_stop(s) for s in sentences[:MAX_SENTENCES]), tuple(found))
    main = options[0]
    advised = [v for v in found if v.status == "advised"]
    intent = str(recommendation.get("intent") or "")
    bracket = "; ".join(p for p in (intent, *_rationale(main, values=values)) if p)
    precondition = _precondition(plan, main)
    name = short_name(main)
    if advised:
        subject = _upper_first(_join([_lower_first(v.asked) for v in advised]))
        verb = "are" if len(advised) > 1 else "is"
        recommend = f"{subject} {verb} advised" + (f" ({bracket})" if bracket else "")
        recommend += f": {_lower_first(name)}"
    else:
        recommend = "Recommended" + (f" ({bracket})" if bracket else "") + f": {_lower_first(name)}"
    if len(primary) > 2:
        recommend += f", within a {len(primary)}-step pathway"
    if precondition:
        recommend += f", {precondition}"
    recommend += "."
    change = _change_sentence(plan, labels, alternatives, found)
    if verdict and advised:
        sentences = [recommend, verdict, change]
    elif verdict:
        sentences = [verdict, recommend, change]
    else:
        sentences = [recommend, change or _not_advised_sentence(plan)]
        if change:
            sentences.insert(1, _not_advised_sentence(plan))
    sentences = [_stop(s) for s in sentences if s]
    return Answer(tuple(sentences[:MAX_SENTENCES]), tuple(found))
