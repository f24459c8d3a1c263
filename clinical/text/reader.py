"""The clinical text reader: free text in, structured facts out, each with its sentence.

Built on medspaCy (Eyre H et al., AMIA Annu Symp Proc 2021): a blank English spaCy pipeline
(no statistical model, nothing downloaded) with medspaCy's tokenizer, TargetMatcher (the
concept dictionary's patterns, concepts.yaml), Sectionizer (a "Family history:" section makes
its findings a relative's) and ConText (Harkema H et al., J Biomed Inform 2009;42:839-851) for
negated, uncertain, historical, hypothetical and family mentions, with the cue words of
concepts.yaml.

Every mention keeps its sentence, the field it was read from and its assertion. Only a
present (or, where the concept says so, historical) mention sets a fact; a negated one sets
the concept's `negated_value` where the negation is itself a result ("EGFR wild-type", "no
varices"), otherwise nothing; uncertain, hypothetical and family mentions never set a fact.

Linear by construction: the text is cut into sentences of bounded length
(clinical/text/segment.py) and each sentence is a document of its own, so ConText's pairwise
comparisons stay within one bounded sentence. Pure Python: imports nothing of the project.
"""

from __future__ import annotations

import re
import sys
import threading
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Final

from clinical.text.concepts import Concept, Dictionary, dictionary
from clinical.text.segment import sentences
from clinical.text.values import Facts, Mention, read_value

READER_SOURCE: Final = (
    "medspaCy reading of the free text (clinical/text/reader.py): concept dictionary "
    "clinical/text/concepts.yaml, ConText assertions (negated, historical, hypothetical, "
    "family); a structured field always wins over the text."
)

ASSERTIONS: Final = ("present", "negated", "historical", "hypothetical", "possible", "family")


@dataclass(frozen=True)
class Finding:
    """One mention of a concept in the text, with what it asserts."""

    concept: str
    family: str
    assertion: str  # one of ASSERTIONS
    sentence: str
    source: str  # the case-file field the text came from ("" for bare text)
    start: int  # of the matched words, in the text read
    end: int
    words: str
    facts: tuple[tuple[str, Any], ...] = ()  # what the mention sets (empty: nothing)

    def as_dict(self) -> dict[str, Any]:
        return {
            "concept": self.concept,
            "family": self.family,
            "assertion": self.assertion,
            "sentence": self.sentence,
            "source": self.source,
            "words": self.words,
            "facts": [{"fact": f, "value": v} for f, v in self.facts],
        }


@dataclass(frozen=True)
class TextFact:
    """A structured fact read from free text: the value and the sentence it was read from."""

    fact: str
    value: Any
    sentence: str
    source: str
    assertion: str = "present"
    family: str = ""
    concept: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "fact": self.fact,
            "value": self.value,
            "phrase": self.sentence,
            "source": self.source,
            "assertion": self.assertion,
            "family": self.family,
        }


# --- the pipeline -----------------------------------------------------------------------------

_LOCK: Final = threading.Lock()
_PIPELINE: dict[str, Any] = {}

_ON_OWN_RESULT: Final = re.compile(
    r"\b(?:L858R|G12C|V600E|exon\s*(?:19|20|14)|fusion|rearrang\w*|positive|detected|mutat\w*"
    r"|present|confirmed|identified|reactive)\b",
    re.IGNORECASE,
)


def _not_inside(target: Any, modifier: Any, _between: Any) -> bool:
    """A cue word inside the matched words is part of the finding ("DPYD testing showed no
    pathogenic variant" is a normal result, not a negated one). medspaCy 1.3.1's overlap test
    misses a modifier wholly inside its target."""
    return not (target.start <= modifier.start and modifier.end <= target.end)


def _not_across_a_result(target: Any, modifier: Any, between: Any) -> bool:
    """A negation cue does not reach across a comma to a finding that carries its own positive
    result: in "EGFR L858R detected, ALK negative" the "negative" is ALK's only."""
    if not _not_inside(target, modifier, between):
        return False
    doc = target.doc
    lo, hi = sorted((target.end, modifier.start))
    between = doc[lo:hi].text if lo < hi else ""
    if "," not in between and " and " not in f" {between} ":
        return True
    own = doc.text[target.end_char : target.end_char + 40]
    own = target.text + " " + re.split(r"[,;]", own, maxsplit=1)[0]
    return not _ON_OWN_RESULT.search(own)


def _not_past_a_colon(target: Any, modifier: Any, between: Any) -> bool:
    """A plan word before a colon belongs to the lead-in, not to the result the colon
    introduces: in "gastroscopy ahead of planned systemic therapy: grade III varices" the
    varices are a finding, not a plan. A cue after its target still reaches back across a
    colon ("Transplant: planned" stays a plan)."""
    if not _not_inside(target, modifier, between):
        return False
    if modifier.end <= target.start:
        gap = target.doc.text[modifier.end_char : target.start_char]
        if re.search(r":(?=\s)", gap):
            return False
    return True


def _regex_matches_once(self: Any, doc: Any) -> list[tuple[int, int, int]]:
    """medspaCy 1.3.1's RegexMatcher.__call__ with the document's text built once per call
    instead of once per pattern: the original rebuilds ``doc.text_with_ws`` (a Python object per
    token) for every pattern, which made a 50 KB note take seconds. Same matches, same order."""
    from medspacy.common.util import get_token_for_char

    matches: list[tuple[int, int, int]] = []
    text = doc.text_with_ws
    for match_id, patterns in self._patterns.items():
        for pattern in patterns:
            on_match = self._callbacks[match_id]
            for re_match in pattern.finditer(text):
                span = doc.char_span(re_match.start(), re_match.end())
                if span is None:
                    start = get_token_for_char(doc, re_match.start(), resolve=self.resolve_start)
                    end = get_token_for_char(doc, re_match.end(), resolve=self.resolve_end)
                    end_index = len(doc) if end is None else end.i
                    span = doc[start.i : end_index]
                if len(span):
                    matches.append((match_id, span.start, span.end))
                if on_match is not None:
                    on_match(self, doc, len(matches) - 1, matches)
    return matches


@contextmanager
def _rule_based_imports() -> Iterator[None]:
    """Import spaCy and medspaCy without what only their statistical parts use (issue 27: the
    first text read cost a process ~6 s and ~300 MB): thinc, spaCy's machine-learning layer,
    imports torch whenever it is installed, and medspaCy's package imports QuickUMLS (UMLS
    concept mapping, which pulls in nltk, scipy and scikit-learn) to register a component this
    pipeline never adds; spaCy's package imports its command-line interface. For the duration
    of the import, torch reads as absent and QuickUMLS and spaCy's CLI as empty modules; all
    are taken back afterwards, so a later import of any of them gets the real one. None is
    replaced if it was already imported."""
    blocked = [name for name in ("torch",) if name not in sys.modules]
    stubbed = [
        n
        for n in ("quickumls", "quickumls.spacy_component", "spacy.cli", "spacy.cli.info")
        if n not in sys.modules
    ]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # "import torch" raises ImportError
    for name in stubbed:
        sys.modules[name] = types.ModuleType(name)
    if "quickumls" in stubbed:
        sys.modules["quickumls"].spacy_component = sys.modules["quickumls.spacy_component"]  # type: ignore[attr-defined]
    if "spacy.cli.info" in stubbed:
        # spaCy's package imports its command-line interface (typer, click, requests: ~0.1 s)
        # for one name, spacy.info; that name imports the real one when called.
        sys.modules["spacy.cli.info"].info = _spacy_info  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for name in blocked + stubbed:
            sys.modules.pop(name, None)


def _spacy_info(*args: Any, **kwargs: Any) -> Any:
    from spacy.cli.info import info

    return info(*args, **kwargs)


def _build(d: Dictionary) -> Any:
    # Imported here: spaCy and medspaCy take a second to import, and only the reader needs them.
    with _rule_based_imports():
        import spacy
        from medspacy.common.regex_matcher import RegexMatcher
        from medspacy.context import ConTextRule
        from medspacy.custom_tokenizer import create_medspacy_tokenizer
        from medspacy.section_detection import SectionRule
        from medspacy.target_matcher import TargetRule
        from spacy.language import Language

    RegexMatcher.__call__ = _regex_matches_once

    if not Language.has_factory("mdtboard_one_sentence"):

        @Language.component("mdtboard_one_sentence")
        def one_sentence(doc: Any) -> Any:
            # The segmenter already cut the text: each document is one sentence.
            for i, token in enumerate(doc):
                token.is_sent_start = i == 0
            return doc

    nlp = spacy.blank("en")
    nlp.tokenizer = create_medspacy_tokenizer(nlp)
    nlp.add_pipe("mdtboard_one_sentence")
    matcher: Any = nlp.add_pipe(
        "medspacy_target_matcher", config={"result_type": "group", "prune": False}
    )
    matcher.add(
        [
            TargetRule(literal=f"{c.id}#{i}", category=c.id, pattern=p)
            for c in d.concepts
            for i, p in enumerate(c.patterns)
        ]
    )
    sectionizer: Any = nlp.add_pipe(
        "medspacy_sectionizer",
        config={"rules": None, "input_span_type": "group", "span_attrs": None},
    )
    sectionizer.add([SectionRule(literal=lit, category=cat) for lit, cat in d.sections])
    context: Any = nlp.add_pipe(
        "medspacy_context", config={"rules": None, "input_span_type": "group"}
    )
    rules = []
    for spec in d.context:
        kwargs: dict[str, Any] = {"max_scope": spec.max_scope}
        if spec.pattern:
            kwargs["pattern"] = spec.pattern
        kwargs["on_modifies"] = {
            "NEGATED_EXISTENCE": _not_across_a_result,
            "HYPOTHETICAL": _not_past_a_colon,
        }.get(spec.category, _not_inside)
        if spec.category not in ("HISTORICAL", "CLAUSE_BREAK"):
            kwargs["terminated_by"] = {"CLAUSE_BREAK"}  # see the "while" cue (concepts.yaml)
        if spec.excluded_types:
            kwargs["excluded_types"] = set(spec.excluded_types)
        if spec.allowed_types:
            kwargs["allowed_types"] = set(spec.allowed_types)
        rules.append(ConTextRule(spec.literal, spec.category, direction=spec.direction, **kwargs))
    context.add(rules)
    return nlp


def pipeline(vocabulary: Dictionary | None = None) -> Any:
    """The spaCy pipeline of a dictionary (the concept dictionary by default), built once per
    process (thread-safe)."""
    d = vocabulary or dictionary()
    key = "nlp" if vocabulary is None else f"nlp:{id(d)}"
    with _LOCK:
        if key not in _PIPELINE:
            _PIPELINE[key] = _build(d)
        return _PIPELINE[key]


# --- reading ----------------------------------------------------------------------------------


def _any_concept(d: Dictionary) -> re.Pattern[str]:
    key = f"any:{id(d)}"
    if key not in _PIPELINE:
        joined = "|".join(f"(?:{p})" for c in d.concepts for p in c.patterns)
        _PIPELINE[key] = re.compile(joined, re.IGNORECASE)
    pattern: re.Pattern[str] = _PIPELINE[key]
    return pattern


def _worth_reading(sentence: str, d: Dictionary) -> bool:
    return ":" in sentence or _any_concept(d).search(sentence) is not None


def _assertion(span: Any, section: str | None) -> str:
    ext = span._
    if ext.is_family or section == "family_history":
        return "family"
    if ext.is_negated:
        return "negated"
    if ext.is_hypothetical or section == "plan":
        return "hypothetical"
    if ext.is_uncertain:
        return "possible"
    if ext.is_historical:
        return "historical"
    return "present"


def _prune(spans: Sequence[Any], d: Dictionary) -> list[Any]:
    """Overlapping mentions of one fact: the longest (then the first) stays. Mentions of
    different facts may overlap ("HBV-related cirrhosis" is serology and liver; "prolonged
    QTc of 490 ms" is a prolongation and a measurement)."""
    kept: list[Any] = []
    ordered = sorted(spans, key=lambda s: (-(s.end - s.start), s.start))
    for span in ordered:
        fact = d.concept(span.label_).fact
        if any(
            d.concept(k.label_).fact == fact and k.start < span.end and span.start < k.end
            for k in kept
        ):
            continue
        kept.append(span)
    return sorted(kept, key=lambda s: s.start)


# "No bleeding from varices", "never bled from the ulcer": the negation is of the event, and
# the finding it names is its object - neither present nor ruled out by that sentence.
_EVENT_OBJECT: Final = re.compile(
    r"\b(?:bleed\w{0,8}|bled|ha?emorrhag\w{0,8}|ruptur\w{0,8})\s{1,4}(?:from|of)\s{1,4}"
    r"(?:the\s+|an?\s+|his\s+|her\s+)?$",
    re.IGNORECASE,
)


def _object_of_event(mention: Mention) -> bool:
    """Whether the mention is the object of an event the sentence names ("bleeding from
    [varices]"), so that a negation there denies the event, not the finding."""
    # The words just before the mention (bounded, so that a sentence of many mentions is read
    # in linear time): "haemorrhage from the " is under 40 characters.
    return bool(_EVENT_OBJECT.search(mention.sentence[max(0, mention.start - 64) : mention.start]))


def _facts_of(concept: Concept, assertion: str, mention: Mention) -> Facts:
    """What a mention with this assertion sets, per the concept's rules."""
    if concept.measurement and assertion == "negated":
        assertion = "present"
    if assertion in ("family", "hypothetical", "possible"):
        return []
    if assertion == "negated":
        if concept.negated_value is None or _object_of_event(mention):
            return []
        if concept.extract == "driver":
            return read_value(concept.extract, mention)
        return [(concept.fact, concept.negated_value)]
    facts = read_value(concept.extract, mention)
    if assertion == "historical":
        if concept.historical == "drop":
            return []
        if concept.historical == "history" and concept.history_fact:
            facts = [(concept.history_fact, True)]
    if concept.also == "irae":
        facts = [*facts, *read_value("irae", mention)]
    return facts


def read_text(
    text: str,
    *,
    source: str = "",
    as_of: date | None = None,
    vocabulary: Dictionary | None = None,
) -> list[Finding]:
    """Every concept mention in ``text``, with its assertion, sentence and the facts it sets
    (``vocabulary``: another dictionary than the concept dictionary, e.g. the situations).
    Linear in the length of ``text``."""
    if not text or not text.strip():
        return []
    d = vocabulary or dictionary()
    nlp = pipeline(vocabulary)
    spans = sentences(text)
    findings: list[Finding] = []
    section: str | None = None
    until_blank_line = False
    previous_end = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # medspaCy warns about overlapping spans it skips
        # Only a sentence that may hold a concept or a section header goes through spaCy.
        candidates = [(b, e) for b, e in spans if _worth_reading(text[b:e], d)]
        docs = dict(zip(candidates, nlp.pipe(text[b:e] for b, e in candidates), strict=True))
        for index, (s_start, s_end) in enumerate(spans):
            # A section runs from its header to the end of the header's line, or, for a header
            # alone on its line ("Family history:"), to the next blank line or header.
            gap = text[previous_end:s_start]
            if section is not None and (
                re.search(r"\n\s*\n", gap) or ("\n" in gap and not until_blank_line)
            ):
                section = None
            previous_end = s_end
            doc = docs.get((s_start, s_end))
            if doc is None:
                continue
            headers = [sec for sec in doc._.sections if sec.title_end > sec.title_start]
            targets = _prune(doc.spans.get("medspacy_spans", []), d)
            sentence = text[s_start:s_end]
            following = (
                text[spans[index + 1][0] : spans[index + 1][1]] if index + 1 < len(spans) else ""
            )
            for span in targets:
                concept = d.concept(span.label_)
                own = section
                for header in headers:
                    if header.title_start <= span.start:
                        own = header.category
                assertion = _assertion(span, own)
                modifiers = tuple(_mod_text(doc, mod) for mod in span._.modifiers)
                mention = Mention(
                    sentence=sentence,
                    start=span.start_char,
                    end=span.end_char,
                    negated=assertion == "negated",
                    modifiers=modifiers,
                    as_of=as_of,
                    concept_fact=concept.fact,
                    concept_value=concept.value,
                    organ=concept.organ,
                    synonyms=d.synonyms,
                    following=following,
                )
                findings.append(
                    Finding(
                        concept=concept.id,
                        family=concept.family,
                        assertion=assertion,
                        sentence=sentence,
                        source=source,
                        start=s_start + span.start_char,
                        end=s_start + span.end_char,
                        words=span.text,
                        facts=tuple(_facts_of(concept, assertion, mention)),
                    )
                )
            if headers:
                section = headers[-1].category
                until_blank_line = headers[-1].title_end >= len(doc)
    return findings


def _mod_text(doc: Any, modifier: Any) -> str:
    start, end = modifier.modifier_span
    return str(doc[start:end].text)


# --- from findings to facts -------------------------------------------------------------------

_LIST_FACTS: Final = frozenset(
    {"patient.prior_immune_adverse_events", "organ_function.recent_bleeding"}
)


def _choose(fact: str, candidates: list[TextFact], d: Dictionary) -> TextFact:
    """Several values for one fact: an affirmed value beats one read from a negation; then the
    dictionary's order (the cautious reading first); else the last one stated."""
    affirmed = [c for c in candidates if c.assertion != "negated"] or candidates
    order = d.severity.get(fact)
    if order:
        rank = {v: i for i, v in enumerate(order)}
        return min(affirmed, key=lambda c: rank.get(c.value, len(order)))
    return affirmed[-1]


def facts_from(findings: Iterable[Finding]) -> list[TextFact]:
    """The structured facts the findings set, one per fact (lists for events), each with the
    sentence it was read from."""
    d = dictionary()
    by_fact: dict[str, list[TextFact]] = {}
    for finding in findings:
        for fact, value in finding.facts:
            if value is None:
                continue
            by_fact.setdefault(fact, []).append(
                TextFact(
                    fact=fact,
                    value=value,
                    sentence=finding.sentence,
                    source=finding.source,
                    assertion=finding.assertion,
                    family=d.family_of_fact(fact) or finding.family,
                    concept=finding.concept,
                )
            )
    result: list[TextFact] = []
    for fact, candidates in by_fact.items():
        if fact in _LIST_FACTS:
            events: list[dict[str, Any]] = []
            named = {
                c.sentence for c in candidates if c.value.get("organ") not in (None, "unspecified")
            }
            for c in candidates:
                event = dict(c.value)
                if event.get("organ") == "unspecified" and c.sentence in named:
                    continue  # "irAE: grade 3 nephritis": one event, the kidney's
                if event not in events:
                    events.append(event)
            first = candidates[0]
            result.append(
                TextFact(
                    fact=fact,
                    value=events,
                    sentence=" | ".join(dict.fromkeys(c.sentence for c in candidates)),
                    source=first.source,
                    assertion=first.assertion,
                    family=first.family,
                    concept=first.concept,
                )
            )
        else:
            result.append(_choose(fact, candidates, d))
    return result


def read_facts(text: str, *, source: str = "", as_of: date | None = None) -> list[TextFact]:
    """The structured facts ``text`` states (one callable ``f(text)`` for the linearity
    harness)."""
    return facts_from(read_text(text, source=source, as_of=as_of))


def read_texts(
    texts: Iterable[tuple[str, str]], *, as_of: date | None = None
) -> tuple[list[Finding], list[TextFact]]:
    """Several (source, text) pairs read together: every finding, and the facts they set."""
    findings: list[Finding] = []
    for source, text in texts:
        findings.extend(read_text(text, source=source, as_of=as_of))
    return findings, facts_from(findings)


def case_texts(case: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The free text of a case file, each with its field: the notes, the lesion description,
    the comorbidities, the medications, the histology and subtype, the autoimmune-disease
    field and the prior regimens."""
    found: list[tuple[str, str]] = []
    for path in (
        "patient.comorbidities",
        "patient.medications",
        "organ_function.autoimmune_disease",
        "diagnosis.histology",
        "diagnosis.subtype",
        "index_lesion.description",
        "notes",
    ):
        section, _, key = path.partition(".")
        node: Any = case.get(section) if key else case.get(path)
        value = node.get(key) if key and isinstance(node, Mapping) else (node if not key else None)
        if isinstance(value, str) and value.strip():
            found.append((path, value))
        elif isinstance(value, list):
            found.extend((path, v) for v in value if isinstance(v, str) and v.strip())
    diagnosis = case.get("diagnosis")
    if isinstance(diagnosis, Mapping) and isinstance(diagnosis.get("prior_therapies"), list):
        for therapy in diagnosis["prior_therapies"]:
            if isinstance(therapy, Mapping) and isinstance(therapy.get("regimen"), str):
                found.append(("diagnosis.prior_therapies", therapy["regimen"]))
    return found
