"""The engine's retriever over the database: published knowledge units only, with the same
applicability rules as everywhere else, and hybrid search for ranked hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.db import connection, transaction

from clinical.applicability import case_facts
from consult.engine.protocols import Evidence, EvidenceRequest, Retrieved
from consult.evidence import unit_evidence
from knowledge.models import UnitVersion
from knowledge.selectors import Hit, published_versions, query_vectors, unit_search


def _evidence(version: UnitVersion, facts: Mapping[str, Any]) -> Evidence:
    source = version.source
    return unit_evidence(
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
        facts=facts,
    )


def _ranked(hit: Hit, by_version: Mapping[int, Evidence], facts: Mapping[str, Any]) -> Evidence:
    judged = by_version.get(hit.version_id)
    if judged is not None:
        return replace(judged, score=hit.score)
    # Published between reading the scope and searching it.
    return unit_evidence(
        unit_id=hit.unit_key,
        kind=hit.kind,
        cancer_type=hit.cancer_type,
        title=hit.title,
        text=hit.text,
        anchor=hit.anchor,
        version=hit.version,
        version_id=hit.version_id,
        source=hit.source,
        grade=f"{hit.grade_system}: {hit.grade_native}",
        grade_ordinal=hit.grade_ordinal,
        content=hit.content,
        facts=facts,
        score=hit.score,
    )


class DbRetriever:
    """The engine calls ``retrieve`` from a worker thread (asyncio.to_thread), once for the
    whole panel: one connection, closed when done, and one embedding call for every query."""

    def __init__(self, *, facts: Mapping[str, Any] | None = None) -> None:
        self.used_version_ids: set[int] = set()
        # The snapshot's frozen facts (clinical.frozen); without them, computed from the case.
        self.facts = facts

    def retrieve(
        self,
        *,
        cancer_type: str,
        case: Mapping[str, Any],
        requests: Sequence[EvidenceRequest],
        k: int,
    ) -> dict[str, Retrieved]:
        try:
            # One transaction for the scope and every search (each search would otherwise
            # open and commit one of its own: two round trips a member).
            with transaction.atomic():
                return self._retrieve(cancer_type=cancer_type, case=case, requests=requests, k=k)
        finally:
            connection.close()

    def _retrieve(
        self,
        *,
        cancer_type: str,
        case: Mapping[str, Any],
        requests: Sequence[EvidenceRequest],
        k: int,
    ) -> dict[str, Retrieved]:
        facts = self.facts if self.facts is not None else case_facts(case)
        kinds = sorted({kind for request in requests for kind in request.kinds})
        # Each unit in scope is judged against the patient once, for every member: a ranked
        # hit is the same evidence with its search score.
        versions = list(
            published_versions().filter(
                unit__cancer_type__in=[cancer_type, "any"], unit__kind__in=kinds
            )
        )
        in_scope = [_evidence(version, facts) for version in versions]
        by_version = {e.version_id: e for e in in_scope}
        judged = {v.pk: (v, by_version[v.pk].applies) for v in versions}
        searched = [request for request in requests if not request.everything]
        vectors = dict(
            zip(
                [r.role for r in searched],
                query_vectors([r.query for r in searched]) if searched else [],
                strict=True,
            )
        )
        found: dict[str, Retrieved] = {}
        for request in requests:
            if request.everything:
                # The safety gate: every rule of these kinds, checked whether or not it
                # applies; no ranked search.
                found[request.role] = Retrieved(
                    applicable=[e for e in in_scope if e.kind in request.kinds], hits=[]
                )
                self.used_version_ids.update(e.version_id for e in found[request.role].applicable)
                continue
            vector = vectors[request.role]
            hits = unit_search(
                query=request.query,
                cancer_type=cancer_type,
                kinds=request.kinds,
                k=k,
                case=case,
                query_vector=vector,
                judged=judged,
            )
            retrieved = Retrieved(
                applicable=[
                    e for e in in_scope if e.kind in request.kinds and e.applies is not False
                ],
                hits=[_ranked(hit, by_version, facts) for hit in hits],
                considered=[
                    e
                    for e in in_scope
                    if "therapy_step" in request.kinds
                    and e.kind == "therapy_step"
                    and e.cancer_type == cancer_type
                    and e.applies is False
                ],
            )
            self.used_version_ids.update(e.version_id for e in retrieved.applicable)
            self.used_version_ids.update(e.version_id for e in retrieved.hits)
            found[request.role] = retrieved
        return found
