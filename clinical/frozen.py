"""The facts of a case computed once, when its dossier is submitted, and kept with the snapshot.

A plan is computed from facts (``applicability.case_facts``) and derived staging
(``calculators.derive_all``); the pages, the PDF, the exports and the memory show them again
later. Computing them again at each reading would show today's calculators beside a plan made
with yesterday's: so they are computed once (``freeze``), stored as JSON with the version of the
code that computed them (``FACTS_VERSION``), and read back (``FrozenFacts.from_json``). A
recompute is an explicit act of a clinician that makes a new snapshot (consult.services).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinical.applicability import case_facts
from clinical.calculators import derive_all, staging_summary
from clinical.results import CalcResult, CalcValue

FROZEN_FORMAT = "mdtboard.facts/1"
# Bumped by hand when a calculator's meaning changes; the digest below changes by itself
# whenever the code that computes facts does, so a forgotten bump still shows.
FACTS_RELEASE = "2026.11.27"

_CORE = Path(__file__).resolve().parent
# The code whose output is frozen: the calculators, the readers of free text, the facts a rule
# reads, and what they share.
_FACT_SOURCES = ("calculators", "text", "applicability.py", "results.py", "lexicon.py", "vocab.py")


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for name in _FACT_SOURCES:
        path = _CORE / name
        files = (
            sorted(p for p in path.rglob("*") if p.suffix in (".py", ".yaml"))
            if (path.is_dir())
            else [path]
        )
        for file in files:
            digest.update(file.relative_to(_CORE).as_posix().encode())
            digest.update(b"\0")
            digest.update(file.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:12]


FACTS_VERSION = f"{FACTS_RELEASE}+{_sources_digest()}"


def _json(value: Any) -> Any:
    """A value as JSON keeps it: tuples become lists, sets sorted lists, anything else its
    text (a fact is data; it is never an object)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_json(v) for v in value), key=str)
    return str(value)


def _result(doc: Mapping[str, Any]) -> CalcResult:
    return CalcResult(
        name=str(doc.get("name") or ""),
        value=doc.get("value"),
        inputs_used=dict(doc.get("inputs_used") or {}),
        inputs_missing=list(doc.get("inputs_missing") or []),
        source=str(doc.get("source") or ""),
        detail=str(doc.get("detail") or ""),
    )


@dataclass(frozen=True)
class FrozenFacts:
    """What the board knew of a case when it was submitted: the derived facts (calculator
    results) and every fact a rule may read, with the version of the code that computed them."""

    version: str
    derived: dict[str, CalcResult]
    facts: dict[str, Any]

    @property
    def staging(self) -> dict[str, CalcValue]:
        """The plan's staging block, from the frozen results."""
        return staging_summary(self.derived)

    @property
    def current(self) -> bool:
        """Computed by the code running now."""
        return self.version == FACTS_VERSION

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = _json(
            {
                "format": FROZEN_FORMAT,
                "version": self.version,
                "derived": {name: result.to_dict() for name, result in self.derived.items()},
                "facts": self.facts,
            }
        )
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> FrozenFacts:
        if document.get("format") != FROZEN_FORMAT:
            raise ValueError(f"not a {FROZEN_FORMAT} document: {document.get('format')!r}")
        derived = document.get("derived") or {}
        return cls(
            version=str(document.get("version") or ""),
            derived={str(name): _result(doc) for name, doc in derived.items()},
            facts=dict(document.get("facts") or {}),
        )


def freeze(case: Mapping[str, Any]) -> FrozenFacts:
    """The facts and derived results of a case, computed now, in the form they are stored
    (a round trip through JSON, so that what is used is exactly what is kept)."""
    frozen = FrozenFacts(version=FACTS_VERSION, derived=derive_all(case), facts=case_facts(case))
    return FrozenFacts.from_json(json.loads(json.dumps(frozen.to_json())))


def changed_facts(before: FrozenFacts, after: FrozenFacts) -> list[str]:
    """The names of the derived facts whose value differs (added or gone included)."""
    names = set(before.derived) | set(after.derived)

    def value(frozen: FrozenFacts, name: str) -> Any:
        result = frozen.derived.get(name)
        return None if result is None else result.value

    return sorted(n for n in names if value(before, n) != value(after, n))
