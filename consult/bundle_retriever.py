"""An in-memory retriever over a bundle: the same applicability rules as the database one,
without PostgreSQL (nor Django's models). For the engine's unit tests and offline evaluation
of a bundle file."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from clinical.applicability import case_facts
from clinical.rules import Bundle, UnitSpec, content_hash, unit_content
from consult.engine.protocols import Evidence, EvidenceRequest, Retrieved
from consult.evidence import unit_evidence

_WORD = re.compile(r"[a-z0-9]+")


class BundleRetriever:
    def __init__(self, bundle: Bundle, *, facts: Mapping[str, Any] | None = None) -> None:
        self.bundle = bundle
        # The case's facts computed once (clinical.frozen); without them, from the case.
        self.frozen_facts = facts
        self.sources = {s.key: s for s in bundle.sources}

    def _facts(self, case: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.frozen_facts if self.frozen_facts is not None else case_facts(case)

    def _evidence(self, unit: UnitSpec, facts: Mapping[str, Any], score: float = 0.0) -> Evidence:
        content = unit_content(unit)
        source = self.sources[unit.source]
        return unit_evidence(
            unit_id=unit.key,
            kind=unit.kind.value,
            cancer_type=unit.cancer_type.value,
            title=unit.title,
            text=unit.text,
            anchor=unit.anchor,
            version=f"v1:{content_hash(content)[:12]}",
            version_id=0,
            source=f"{source.organisation} {source.title} ({source.version})",
            grade=f"{unit.grade.system}: {unit.grade.native}",
            grade_ordinal=unit.grade.ordinal,
            content=content,
            facts=facts,
            score=score,
        )

    def _scope(self, cancer_type: str, kinds: Sequence[str]) -> list[UnitSpec]:
        return [
            u
            for u in self.bundle.units
            if u.cancer_type.value in (cancer_type, "any") and u.kind.value in kinds
        ]

    def applicable(
        self,
        *,
        cancer_type: str,
        kinds: Sequence[str],
        case: Mapping[str, Any],
        everything: bool = False,
    ) -> list[Evidence]:
        facts = self._facts(case)
        found = [self._evidence(u, facts) for u in self._scope(cancer_type, kinds)]
        return [e for e in found if everything or e.applies is not False]

    def considered(
        self, *, cancer_type: str, kinds: Sequence[str], case: Mapping[str, Any]
    ) -> list[Evidence]:
        """The therapy steps of the cancer type itself that do not apply to the case."""
        if "therapy_step" not in kinds:
            return []
        facts = self._facts(case)
        units = [
            u
            for u in self._scope(cancer_type, ("therapy_step",))
            if u.cancer_type.value == cancer_type
        ]
        found = [self._evidence(u, facts) for u in units]
        return [e for e in found if e.applies is False]

    def search(
        self, *, query: str, cancer_type: str, kinds: Sequence[str], k: int, case: Mapping[str, Any]
    ) -> list[Evidence]:
        # Word overlap stands in for hybrid retrieval here; the database retriever is the real
        # one. Good enough to exercise the engine's handling of ranked hits.
        words = set(_WORD.findall(query.lower()))
        facts = self._facts(case)
        scored = []
        for unit in self._scope(cancer_type, kinds):
            text = set(_WORD.findall(f"{unit.title} {unit.text}".lower()))
            overlap = len(words & text) / (len(words) or 1)
            evidence = self._evidence(unit, facts, round(overlap, 4))
            if evidence.applies is not False and overlap > 0:
                scored.append(evidence)
        return sorted(scored, key=lambda e: -e.score)[:k]

    def retrieve(
        self,
        *,
        cancer_type: str,
        case: Mapping[str, Any],
        requests: Sequence[EvidenceRequest],
        k: int,
    ) -> dict[str, Retrieved]:
        return {
            r.role: Retrieved(
                applicable=self.applicable(
                    cancer_type=cancer_type, kinds=r.kinds, case=case, everything=r.everything
                ),
                hits=(
                    []
                    if r.everything
                    else self.search(
                        query=r.query, cancer_type=cancer_type, kinds=r.kinds, k=k, case=case
                    )
                ),
                considered=self.considered(cancer_type=cancer_type, kinds=r.kinds, case=case),
            )
            for r in requests
        }
