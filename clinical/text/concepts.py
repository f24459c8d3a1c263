"""The concept dictionary of the clinical text reader, loaded from concepts.yaml and checked."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

CONCEPTS_PATH: Final = Path(__file__).with_name("concepts.yaml")
SITUATIONS_PATH: Final = Path(__file__).with_name("situations.yaml")

HISTORICAL_MODES: Final = frozenset({"keep", "history", "event", "drop"})
CONTEXT_CATEGORIES: Final = frozenset(
    {
        "NEGATED_EXISTENCE",
        "POSSIBLE_EXISTENCE",
        "HISTORICAL",
        "HYPOTHETICAL",
        "FAMILY",
        "TERMINATE",
        "PSEUDO",
        "CLAUSE_BREAK",
    }
)


@dataclass(frozen=True)
class Concept:
    """One concept: the words (patterns) and the structured fact they stand for."""

    id: str
    family: str
    fact: str
    patterns: tuple[str, ...]
    source: str
    value: Any = None
    extract: str | None = None
    negated_value: Any = None
    historical: str = "keep"
    history_fact: str | None = None
    also: str | None = None
    organ: str | None = None
    # A measurement ("QTc 428 ms") holds whatever cue word sits near it: "no QT prolongation,
    # QTc 428 ms" negates the prolongation, not the number.
    measurement: bool = False


@dataclass(frozen=True)
class ContextRuleSpec:
    literal: str
    category: str
    direction: str
    max_scope: int | None = None
    pattern: str | None = None
    excluded_types: tuple[str, ...] = ()  # concept ids the cue never modifies
    allowed_types: tuple[str, ...] = ()  # when given, the only concept ids the cue modifies


@dataclass(frozen=True)
class Dictionary:
    """The whole dictionary: concepts, ConText rules, section headers, value orders."""

    families: Mapping[str, str]
    sources: Mapping[str, str]
    concepts: tuple[Concept, ...]
    context: tuple[ContextRuleSpec, ...]
    sections: tuple[tuple[str, str], ...]
    severity: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    synonyms: Mapping[str, str] = field(default_factory=dict)

    def concept(self, concept_id: str) -> Concept:
        return next(c for c in self.concepts if c.id == concept_id)

    def family_of_fact(self, fact: str) -> str | None:
        """The family a structured fact belongs to (the extractors' derived facts included)."""
        for concept in self.concepts:
            if fact in (concept.fact, concept.history_fact):
                return concept.family
        return _DERIVED_FAMILIES.get(fact) or _DRIVER_FACT_FAMILY.get(fact)


# Facts an extractor sets beside its concept's own (a grade beside the neuropathy).
_DERIVED_FAMILIES: Final = {
    "organ_function.peripheral_neuropathy_grade": "neuropathy",
    "organ_function.autoimmune_activity": "autoimmune",
    "patient.gestational_age_weeks": "pregnancy",
}
_DRIVER_FACT_FAMILY: Final = {
    f"biomarkers.{key}": "driver"
    for key in (
        "egfr",
        "alk",
        "ros1",
        "kras",
        "braf",
        "met_exon14",
        "ret",
        "germline_brca",
        "esr1",
        "pik3ca",
    )
}


class DictionaryError(ValueError):
    """The concept dictionary is malformed (a test loads it, so this never reaches a user)."""


def _concept(
    raw: Mapping[str, Any], families: Mapping[str, str], sources: Mapping[str, str]
) -> Concept:
    concept = Concept(
        id=str(raw["id"]),
        family=str(raw["family"]),
        fact=str(raw["fact"]),
        patterns=tuple(str(p) for p in raw["patterns"]),
        source=str(raw["source"]),
        value=raw.get("value"),
        extract=raw.get("extract"),
        negated_value=raw.get("negated_value"),
        historical=str(raw.get("historical", "keep")),
        history_fact=raw.get("history_fact"),
        also=raw.get("also"),
        organ=raw.get("organ"),
        measurement=bool(raw.get("measurement", False)),
    )
    if concept.family not in families:
        raise DictionaryError(f"{concept.id}: unknown family {concept.family!r}")
    if concept.source not in sources:
        raise DictionaryError(f"{concept.id}: unknown source {concept.source!r}")
    if concept.historical not in HISTORICAL_MODES:
        raise DictionaryError(f"{concept.id}: historical must be one of {sorted(HISTORICAL_MODES)}")
    if concept.historical == "history" and not concept.history_fact:
        raise DictionaryError(f"{concept.id}: historical 'history' needs a history_fact")
    if concept.value is None and concept.extract is None:
        raise DictionaryError(f"{concept.id}: needs a value or an extract")
    for pattern in concept.patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise DictionaryError(f"{concept.id}: bad pattern {pattern!r}: {exc}") from exc
    return concept


@cache
def dictionary() -> Dictionary:
    """The concept dictionary, loaded once."""
    return load_dictionary(CONCEPTS_PATH)


@cache
def situation_dictionary() -> Dictionary:
    """The situation dictionary (situations.yaml), with the ConText cues, section headers and
    synonyms of the concept dictionary: one reading of negation and history for both."""
    return load_dictionary(SITUATIONS_PATH, base=dictionary())


def load_dictionary(path: Path, *, base: Dictionary | None = None) -> Dictionary:
    """A dictionary file; what it does not define (ConText rules, sections, value orders,
    synonyms) comes from ``base``."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if base is not None:
        raw.setdefault("context", None)
        raw.setdefault("sections", None)
    families = {str(k): str(v) for k, v in raw["families"].items()}
    sources = {str(k): str(v) for k, v in raw["sources"].items()}
    concepts = tuple(_concept(c, families, sources) for c in raw["concepts"])
    ids = [c.id for c in concepts]
    if len(ids) != len(set(ids)):
        raise DictionaryError("duplicate concept ids")
    if base is not None and raw["context"] is None:
        return Dictionary(
            families=families,
            sources=sources,
            concepts=concepts,
            context=base.context,
            sections=base.sections,
            severity=base.severity,
            synonyms=base.synonyms,
        )
    context = []
    for rule in raw["context"]:
        spec = ContextRuleSpec(
            literal=str(rule["literal"]),
            category=str(rule["category"]),
            direction=str(rule["direction"]),
            max_scope=rule.get("max_scope"),
            pattern=rule.get("pattern"),
            excluded_types=tuple(rule.get("excluded_types") or ()),
            allowed_types=tuple(rule.get("allowed_types") or ()),
        )
        if spec.category not in CONTEXT_CATEGORIES:
            raise DictionaryError(f"context rule {spec.literal!r}: bad category")
        context.append(spec)
    sections = tuple((str(s["literal"]), str(s["category"])) for s in raw["sections"])
    severity = {str(k): tuple(v) for k, v in (raw.get("severity") or {}).items()}
    synonyms = {str(k).casefold(): str(v) for k, v in (raw.get("synonyms") or {}).items()}
    return Dictionary(
        families=families,
        sources=sources,
        concepts=concepts,
        context=tuple(context),
        sections=sections,
        severity=severity,
        synonyms=synonyms,
    )
