"""The engine's retriever over the database: published knowledge units only, with the same
applicability rules as everywhere else, and hybrid search for ranked hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import connection

from consult.engine.protocols import Evidence
from knowledge.applicability import case_facts, context_applies, missing_facts
from knowledge.bundle import Context
from knowledge.models import UnitVersion
from knowledge.selectors import Hit, published_versions, unit_search


def _evidence(version: UnitVersion, facts: Mapping[str, Any], score: float = 0.0) -> Evidence:
    context = Context.model_validate(version.content.get("context") or {})
    source = version.source
    return Evidence(
        unit_id=version.unit.key,
        kind=version.unit.kind,
        cancer_type=version.unit.cancer_type,
        title=version.title,
        text=version.text,
        anchor=version.anchor,
        version=f"v{version.number}:{version.content_hash[:12]}",
        version_id=version.pk,
        source=f"{source.organisation} {source.title} ({source.version})",
        grade=f"{version.grade_system}: {version.grade_native}",
        grade_ordinal=version.grade_ordinal,
        content=version.content,
        applies=context_applies(context, facts),
        missing=tuple(missing_facts(context, facts)),
        score=score,
    )


class DbRetriever:
    """The engine calls these from worker threads (asyncio.to_thread): each call closes its
    thread's connection when done, so no connection outlives the consultation."""

    def __init__(self) -> None:
        self.used_version_ids: set[int] = set()

    def applicable(
        self, *, cancer_type: str, kinds: Sequence[str], case: Mapping[str, Any]
    ) -> list[Evidence]:
        try:
            return self._applicable(cancer_type=cancer_type, kinds=kinds, case=case)
        finally:
            connection.close()

    def search(
        self, *, query: str, cancer_type: str, kinds: Sequence[str], k: int, case: Mapping[str, Any]
    ) -> list[Evidence]:
        try:
            return self._search(query=query, cancer_type=cancer_type, kinds=kinds, k=k, case=case)
        finally:
            connection.close()

    def _applicable(
        self, *, cancer_type: str, kinds: Sequence[str], case: Mapping[str, Any]
    ) -> list[Evidence]:
        facts = case_facts(case)
        versions = published_versions().filter(
            unit__cancer_type__in=[cancer_type, "any"], unit__kind__in=list(kinds)
        )
        found = [_evidence(v, facts) for v in versions]
        kept = [e for e in found if e.applies is not False]
        self.used_version_ids.update(e.version_id for e in kept)
        return kept

    def _search(
        self, *, query: str, cancer_type: str, kinds: Sequence[str], k: int, case: Mapping[str, Any]
    ) -> list[Evidence]:
        hits: list[Hit] = unit_search(
            query=query, cancer_type=cancer_type, kinds=kinds, k=k, case=case
        )
        versions = published_versions().in_bulk([h.version_id for h in hits])
        facts = case_facts(case)
        found = [
            _evidence(versions[h.version_id], facts, h.score)
            for h in hits
            if h.version_id in versions
        ]
        self.used_version_ids.update(e.version_id for e in found)
        return found
