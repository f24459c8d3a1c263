"""Precision and recall of the clinical text reader per fact family, on an annotated set.

The annotated set (tests/clinical/data/annotated_sentences.yaml) gives each sentence and the
structured facts it states. A fact is compared as (fact, value); a list fact (immune-related
adverse events, bleeding events) as one (fact, organ or site) per event. A fact the reader sets
that the annotation does not list is a false positive; one listed and not set is a false
negative; each counts in the family of its fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Final

import yaml

from clinical.text.concepts import dictionary
from clinical.text.reader import read_facts

# The relative dates of the set ("4 weeks ago") are read against this day.
AS_OF: Final = date(2026, 11, 27)
_EVENT_KEYS: Final = {
    "patient.prior_immune_adverse_events": "organ",
    "organ_function.recent_bleeding": "site",
}


@dataclass
class FamilyScore:
    true_positives: int = 0
    false_positives: int = 0
    false_negatives: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else None

    @property
    def recall(self) -> float | None:
        stated = self.true_positives + self.false_negatives
        return self.true_positives / stated if stated else None


def _norm(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def _pairs(facts: Mapping[str, Any]) -> set[tuple[str, Any]]:
    pairs: set[tuple[str, Any]] = set()
    for fact, value in facts.items():
        if fact in _EVENT_KEYS and isinstance(value, list):
            for item in value:
                key = item.get(_EVENT_KEYS[fact]) if isinstance(item, Mapping) else item
                pairs.add((fact, _norm(key)))
        else:
            pairs.add((fact, _norm(value)))
    return pairs


def load_examples(path: Path) -> list[dict[str, Any]]:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return list(raw["sentences"])


def evaluate(examples: Iterable[Mapping[str, Any]]) -> dict[str, FamilyScore]:
    """Scores per family (every family of the dictionary, even one without examples)."""
    d = dictionary()
    scores = {family: FamilyScore() for family in d.families}
    for example in examples:
        text = str(example["t"])
        expected = _pairs(example.get("e") or {})
        read = {f.fact: f.value for f in read_facts(text, as_of=AS_OF)}
        found = _pairs(read)
        for pair in found | expected:
            family = d.family_of_fact(pair[0]) or "other"
            score = scores.setdefault(family, FamilyScore())
            if pair in found and pair in expected:
                score.true_positives += 1
            elif pair in found:
                score.false_positives += 1
                score.errors.append(f"false positive {pair[0]}={pair[1]!r}: {text}")
            else:
                score.false_negatives += 1
                score.errors.append(f"missed {pair[0]}={pair[1]!r}: {text}")
    return scores


def _pct(value: float | None) -> str:
    return "  n/a" if value is None else f"{value * 100:5.1f}"


def report(scores: Mapping[str, FamilyScore]) -> list[str]:
    """The per-family table as lines of text, then the overall micro-average."""
    lines = [f"{'family':<18} {'prec %':>6} {'recall %':>8}   tp  fp  fn"]
    total = FamilyScore()
    for family, s in sorted(scores.items()):
        lines.append(
            f"{family:<18} {_pct(s.precision):>6} {_pct(s.recall):>8}  "
            f"{s.true_positives:3d} {s.false_positives:3d} {s.false_negatives:3d}"
        )
        total.true_positives += s.true_positives
        total.false_positives += s.false_positives
        total.false_negatives += s.false_negatives
    lines.append(
        f"{'all':<18} {_pct(total.precision):>6} {_pct(total.recall):>8}  "
        f"{total.true_positives:3d} {total.false_positives:3d} {total.false_negatives:3d}"
    )
    return lines
