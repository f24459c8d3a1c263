"""Reads of the knowledge base, above all hybrid retrieval with provenance.

Retrieval sees published versions only. Dense similarity (pgvector, HNSW, cosine) and
PostgreSQL full-text rank are computed for the union of both candidate lists, normalised to
0..1 and fused with configurable weights (EvoMDT: 0.8 dense + 0.2 keyword); hits are filtered
by cancer type and, given a case, by applicability; then reranked and deduplicated.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import F, OuterRef, Q, QuerySet, Subquery
from pgvector.django import CosineDistance
from pydantic import ValidationError

from clinical import lexicon
from clinical.applicability import Truth, case_facts, context_applies
from clinical.coverage import CancerCoverage, UnitRef, coverage_map
from clinical.rules import Bundle, Context, SafetyAction, UnitSpec, unit_content
from clinical.vocab import SAFETY_KINDS, UnitKind
from knowledge.embeddings import get_provider
from knowledge.models import (
    ApprovalRequest,
    ApprovalStatus,
    GuidelineSource,
    KnowledgeUnit,
    UnitEmbedding,
    UnitVersion,
    VersionStatus,
)
from knowledge.safety_change import SafetyChange, classify

logger = logging.getLogger(__name__)

Mode = Literal["hybrid", "dense", "keyword"]
KEYWORD_RANK_CAP = 500
_WORD = re.compile(r"[a-z0-9]+(?:[-/][a-z0-9]+)*")


@dataclass(frozen=True)
class Hit:
    version_id: int
    unit_key: str
    version_number: int
    content_hash: str
    kind: str
    cancer_type: str
    title: str
    text: str
    anchor: str
    source_key: str
    source: str
    jurisdiction: str
    year: int
    grade_system: str
    grade_native: str
    grade_ordinal: int
    content: dict[str, Any]
    dense: float
    keyword: float
    score: float
    applies: Truth = None

    @property
    def version(self) -> str:
        return f"v{self.version_number}:{self.content_hash[:12]}"

    @property
    def provenance(self) -> tuple[str, str, str]:
        """(unit id, anchor, version): what a citation must carry."""
        return (self.unit_key, self.anchor, self.version)

    @property
    def is_safety(self) -> bool:
        return self.kind in SAFETY_KINDS

    @cached_property
    def safety(self) -> SafetyAction | None:
        """The unit's safety rule, typed; None for other kinds of unit."""
        if not self.is_safety:
            return None
        return SafetyAction.model_validate(self.content.get("action") or {})


def published_versions() -> QuerySet[UnitVersion]:
    return UnitVersion.objects.filter(status=VersionStatus.PUBLISHED).select_related(
        "unit", "source"
    )


def therapy_drugs(*, cancer_type: str) -> frozenset[str]:
    """Every drug a published therapy step of this cancer can give (canonical names): what
    makes a dose calculation worth showing on the cancer's pages."""
    drugs: set[str] = set()
    rows = published_versions().filter(
        unit__cancer_type=cancer_type, unit__kind=UnitKind.THERAPY_STEP
    )
    for content in rows.values_list("content", flat=True):
        action = (content or {}).get("action") or {}
        given = lexicon.given(
            [str(a) for a in action.get("agents") or []], str(action.get("description") or "")
        )
        drugs |= given.drugs
    return frozenset(drugs)


def _scoped(
    queryset: QuerySet[Any], prefix: str, cancer_type: str | None, kinds: Iterable[str] | None
) -> QuerySet[Any]:
    if cancer_type:
        queryset = queryset.filter(**{f"{prefix}unit__cancer_type__in": [cancer_type, "any"]})
    if kinds:
        queryset = queryset.filter(**{f"{prefix}unit__kind__in": list(kinds)})
    return queryset


def keyword_query(text: str) -> SearchQuery | None:
    """Any of the query's words (OR), stemmed: a clinician's phrase rarely contains every word
    of the unit it wants, and rank rewards the units that match more of them."""
    words = _WORD.findall(text.lower())[:32]
    if not words:
        return None
    return SearchQuery(" | ".join(words), search_type="raw", config="english")


def _dense_candidates(
    vector: list[float], cancer_type: str | None, kinds: Iterable[str] | None, limit: int
) -> dict[int, float]:
    # Inside a caller's transaction (a consultation's panel: several searches in one), no
    # transaction of its own: the settings below hold for the caller's.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # Filtered HNSW scans keep searching until enough rows pass the filter (pgvector 0.8);
        # set_config(..., true) is SET LOCAL: the settings stay in this transaction, not on the
        # pooled connection. Both in one statement: one round trip.
        cursor.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
            "set_config('hnsw.ef_search', %s, true)",
            [str(max(40, limit))],
        )
        rows = list(
            _scoped(
                UnitEmbedding.objects.filter(version__status=VersionStatus.PUBLISHED),
                "version__",
                cancer_type,
                kinds,
            )
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .values_list("version_id", "distance")[:limit]
        )
    return {version_id: 1.0 - float(distance) for version_id, distance in rows}


def _keyword_candidates(
    query: SearchQuery | None, cancer_type: str | None, kinds: Iterable[str] | None, limit: int
) -> dict[int, float]:
    if query is None:
        return {}
    # Ranking is the costly part; a query of common words can match most of a large knowledge
    # base. Rank at most KEYWORD_RANK_CAP matches: below that size (every realistic curated
    # base) nothing changes, and above it the dense half of the fusion carries the ranking.
    matched = _scoped(
        UnitVersion.objects.filter(status=VersionStatus.PUBLISHED, search=query),
        "",
        cancer_type,
        kinds,
    ).values("pk")[:KEYWORD_RANK_CAP]
    rows = (
        UnitVersion.objects.filter(pk__in=matched)
        .annotate(rank=SearchRank(F("search"), query, cover_density=True, normalization=32))
        .order_by("-rank")
        .values_list("pk", "rank")[:limit]
    )
    return {pk: float(rank) for pk, rank in rows}


def _fill_dense(ids: set[int], vector: list[float]) -> dict[int, float]:
    rows = (
        UnitEmbedding.objects.filter(version_id__in=ids)
        .annotate(distance=CosineDistance("embedding", vector))
        .values_list("version_id", "distance")
    )
    return {version_id: 1.0 - float(distance) for version_id, distance in rows}


def _fill_keyword(ids: set[int], query: SearchQuery | None) -> dict[int, float]:
    if query is None or not ids:
        return {}
    rows = (
        UnitVersion.objects.filter(pk__in=ids)
        .annotate(rank=SearchRank(F("search"), query, cover_density=True, normalization=32))
        .values_list("pk", "rank")
    )
    return {pk: float(rank) for pk, rank in rows}


def query_vectors(queries: Sequence[str]) -> list[list[float] | None]:
    """The embeddings hybrid search will need for these queries, in one call to the provider
    (None each when the dense side is weighted out): pass them to ``unit_search``."""
    if settings.RETRIEVAL_DENSE_WEIGHT <= 0:
        return [None] * len(queries)
    return list(get_provider().embed(list(queries)))


def unit_search(
    *,
    query: str,
    cancer_type: str | None = None,
    k: int = 10,
    case: Mapping[str, Any] | None = None,
    kinds: Iterable[str] | None = None,
    mode: Mode = "hybrid",
    dense_weight: float | None = None,
    keyword_weight: float | None = None,
    candidates: int = 30,
    query_vector: list[float] | None = None,
    judged: Mapping[int, tuple[UnitVersion, Truth]] | None = None,
) -> list[Hit]:
    """Top ``k`` published units for ``query``, each with its provenance and scores.

    ``judged`` (with ``case``): the published versions in scope, already loaded and judged
    against the case, by id: a caller searching for several queries over the same case loads
    and judges each unit once instead of once per query."""
    wd = settings.RETRIEVAL_DENSE_WEIGHT if dense_weight is None else dense_weight
    wk = settings.RETRIEVAL_KEYWORD_WEIGHT if keyword_weight is None else keyword_weight
    if mode == "dense":
        wd, wk = 1.0, 0.0
    elif mode == "keyword":
        wd, wk = 0.0, 1.0
    kinds = list(kinds) if kinds else None
    tsquery = keyword_query(query)
    vector: list[float] | None = None
    dense: dict[int, float] = {}
    keyword: dict[int, float] = {}
    if wd > 0:
        vector = query_vector or get_provider().embed([query])[0]
        dense = _dense_candidates(vector, cancer_type, kinds, candidates)
    if wk > 0:
        keyword = _keyword_candidates(tsquery, cancer_type, kinds, candidates)
    union = set(dense) | set(keyword)
    if not union:
        return []
    if vector is not None and wk > 0:
        dense |= _fill_dense(union - set(dense), vector)
    if wk > 0 and wd > 0:
        keyword |= _fill_keyword(union - set(keyword), tsquery)
    top_keyword = max(keyword.values(), default=0.0) or 1.0
    scored = {pk: (dense.get(pk, 0.0), keyword.get(pk, 0.0) / top_keyword) for pk in union}
    ranked = sorted(scored, key=lambda pk: -(wd * scored[pk][0] + wk * scored[pk][1]))
    # Load the full rows of the best candidates only; with a case, applicability may drop
    # many, so then load them all.
    wanted = ranked if case is not None else ranked[: 3 * k + 10]
    if judged is not None and case is not None:
        versions = {pk: judged[pk][0] for pk in wanted if pk in judged}
        missing = [pk for pk in wanted if pk not in judged]
        if missing:  # published since the caller read its scope
            versions.update(published_versions().in_bulk(missing))
    else:
        versions = published_versions().in_bulk(wanted)
    hits: list[Hit] = []
    # The patient's facts only for units not judged already: deriving them costs a few
    # milliseconds per search, and a caller with ``judged`` (a consultation's panel, five
    # searches in a row) seldom has any such unit.
    facts: Mapping[str, Any] | None = None
    for pk in wanted:
        d, kw = scored[pk]
        version = versions.get(pk)
        if version is None:  # retired between the two queries
            continue
        applies: Truth = None
        if case is not None:
            if judged is not None and pk in judged:
                applies = judged[pk][1]
            else:
                if facts is None:
                    facts = case_facts(case)
                context = Context.model_validate(version.content["context"])
                applies = context_applies(context, facts)
            if applies is False:
                continue
        hits.append(_hit(version, d, kw, wd * d + wk * kw, applies))
    return rerank(hits)[:k]


def _hit(version: UnitVersion, dense: float, keyword: float, score: float, applies: Truth) -> Hit:
    source = version.source
    return Hit(
        version_id=version.pk,
        unit_key=version.unit.key,
        version_number=version.number,
        content_hash=version.content_hash,
        kind=version.unit.kind,
        cancer_type=version.unit.cancer_type,
        title=version.title,
        text=version.text,
        anchor=version.anchor,
        source_key=source.key,
        source=f"{source.organisation} {source.title} ({source.version})",
        jurisdiction=source.jurisdiction,
        year=source.year,
        grade_system=version.grade_system,
        grade_native=version.grade_native,
        grade_ordinal=version.grade_ordinal,
        content=version.content,
        dense=round(dense, 4),
        keyword=round(keyword, 4),
        score=round(score, 4),
        applies=applies,
    )


def rerank(hits: list[Hit]) -> list[Hit]:
    """Fused score first; among equal scores the applicable, stronger, safety unit first.
    Deduplicate identical content (the same paraphrase imported under two keys)."""
    ordered = sorted(
        hits,
        key=lambda h: (
            -h.score,
            h.applies is not True,
            not h.is_safety,
            h.grade_ordinal,
            h.unit_key,
        ),
    )
    seen: set[str] = set()
    unique = []
    for hit in ordered:
        fingerprint = re.sub(r"\W+", " ", hit.text.lower()).strip()
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        unique.append(hit)
    return unique


# --- arbitration -------------------------------------------------------------------------


@dataclass(frozen=True)
class Arbitration:
    """A recorded decision between units that disagree about the same agents."""

    winner: str
    losers: tuple[str, ...]
    agents: tuple[str, ...]
    rule: str


@dataclass
class Arbitrated:
    hits: list[Hit]
    decisions: list[Arbitration] = field(default_factory=list)


def arbitration_key(hit: Hit, jurisdiction: str | None) -> tuple[int, int, int, int]:
    """Safety first, then higher certainty/strength (lower ordinal), then jurisdiction match,
    then recency."""
    return (
        0 if hit.is_safety else 1,
        hit.grade_ordinal,
        0 if jurisdiction and hit.jurisdiction.casefold() == jurisdiction.casefold() else 1,
        -hit.year,
    )


def _agents(hit: Hit) -> set[str]:
    return {str(a).casefold() for a in hit.content.get("action", {}).get("agents", [])}


def _restricts(hit: Hit) -> bool:
    # The gate's policy (SafetyAction.restricts), so that diagnostics and plans agree.
    return hit.safety is not None and hit.safety.restricts()


def arbitrate(hits: list[Hit], *, jurisdiction: str | None = None) -> Arbitrated:
    """Order hits by the arbitration policy and record every disagreement it settles: a
    safety unit that restricts agents another unit recommends always wins."""
    ordered = sorted(hits, key=lambda h: arbitration_key(h, jurisdiction))
    decisions: list[Arbitration] = []
    for restriction in (h for h in ordered if _restricts(h)):
        restricted = _agents(restriction)
        losers = [h for h in ordered if h.kind == UnitKind.THERAPY_STEP and _agents(h) & restricted]
        if losers:
            shared = sorted(set().union(*(_agents(h) & restricted for h in losers)))
            decision = Arbitration(
                winner=restriction.unit_key,
                losers=tuple(h.unit_key for h in losers),
                agents=tuple(shared),
                rule="safety first",
            )
            decisions.append(decision)
            logger.info(
                "arbitration %s over %s on %s (%s)",
                decision.winner,
                ",".join(decision.losers),
                ",".join(shared),
                decision.rule,
            )
    return Arbitrated(ordered, decisions)


def unit_versions_for(*, unit_key: str) -> QuerySet[UnitVersion]:
    return (
        UnitVersion.objects.filter(unit__key=unit_key)
        .select_related("unit", "source", "author", "reviewed_by")
        .order_by("-number")
    )


# --- curator pages --------------------------------------------------------------------------


def unit_latest_versions(
    *, q: str = "", cancer_type: str = "", kind: str = "", status: str = "", source: str = ""
) -> QuerySet[UnitVersion]:
    """The latest version of every unit, with the number of its published version."""
    latest = UnitVersion.objects.filter(unit=OuterRef("unit")).order_by("-number").values("pk")
    published = UnitVersion.objects.filter(
        unit=OuterRef("unit"), status=VersionStatus.PUBLISHED
    ).values("number")
    rows = (
        UnitVersion.objects.filter(pk=Subquery(latest[:1]))
        .annotate(published_number=Subquery(published[:1]))
        .select_related("unit", "source")
    )
    if q:
        rows = rows.filter(Q(unit__key__icontains=q) | Q(title__icontains=q) | Q(text__icontains=q))
    if cancer_type:
        rows = rows.filter(unit__cancer_type=cancer_type)
    if kind:
        rows = rows.filter(unit__kind=kind)
    if status:
        rows = rows.filter(status=status)
    if source:
        rows = rows.filter(source__key=source)
    return rows.order_by("unit__key")


def newest_published_number(versions: Iterable[UnitVersion]) -> int:
    """The highest number among ``versions`` ever published (live or since retired), 0 if
    none: a version below it is stale and cannot be published."""
    return max((v.number for v in versions if v.published_at is not None), default=0)


def versions_in_review() -> QuerySet[UnitVersion]:
    """The review queue, oldest submission first, each with ``newest_published``: the number
    of its unit's newest version ever published (None if none)."""
    newest = (
        UnitVersion.objects.filter(unit=OuterRef("unit"), published_at__isnull=False)
        .order_by("-number")
        .values("number")
    )
    return (
        UnitVersion.objects.filter(status=VersionStatus.IN_REVIEW)
        .annotate(newest_published=Subquery(newest[:1]))
        .select_related("unit", "author", "source")
        .order_by("submitted_at", "pk")
    )


def version_as_cited(*, version_id: int) -> UnitVersion | None:
    """A version as a consultation may have cited it: only one that was published, whether
    still live or since retired (past plans keep citing it). Drafts and versions in review
    are curators' work in progress, never evidence."""
    return (
        UnitVersion.objects.filter(pk=version_id, published_at__isnull=False)
        .select_related("unit", "source")
        .first()
    )


def sources_all() -> QuerySet[GuidelineSource]:
    return GuidelineSource.objects.all()


# --- what a change does to a safety rule (four eyes) ----------------------------------------

UNREADABLE = (
    "The {which} content cannot be read as a rule of the current format, so the change "
    "cannot be shown not to weaken it."
)


def _spec_of(version: UnitVersion) -> UnitSpec | None:
    try:
        return UnitSpec.model_validate({"key": version.unit.key, **version.content})
    except ValidationError:
        return None


def _published_version(unit: KnowledgeUnit) -> UnitVersion | None:
    return UnitVersion.objects.filter(unit=unit, status=VersionStatus.PUBLISHED).first()


def version_safety_change(*, version: UnitVersion, retire: bool = False) -> SafetyChange | None:
    """What publishing ``version`` (or, with ``retire``, retiring it) does to its unit's
    published safety rule; None for a unit that is not a safety rule (the ordinary review
    applies). Fails closed: content that no longer reads as a rule counts as weakening."""
    if retire:
        return safety_change_of(version=version, published=version, retire=True)
    return safety_change_of(version=version, published=_published_version(version.unit))


def safety_change_of(
    *, version: UnitVersion, published: UnitVersion | None, retire: bool = False
) -> SafetyChange | None:
    """``version_safety_change`` against a given published version (None: none is live)."""
    if version.unit.kind not in SAFETY_KINDS:
        return None
    if retire:
        spec = _spec_of(version)
        if spec is None:
            return SafetyChange(weakens=(UNREADABLE.format(which="published"),))
        return classify(spec, None)
    if published is not None and published.pk == version.pk:
        return SafetyChange()
    proposed = _spec_of(version)
    if proposed is None:
        return SafetyChange(weakens=(UNREADABLE.format(which="proposed"),))
    if published is None:
        return classify(None, proposed)
    current = _spec_of(published)
    if current is None:
        return SafetyChange(weakens=(UNREADABLE.format(which="published"),))
    return classify(current, proposed)


def approval_requests_pending() -> QuerySet[ApprovalRequest]:
    """Every change waiting for a second person, oldest first."""
    return (
        ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING)
        .select_related("unit", "version", "version__author", "requested_by")
        .order_by("created_at", "pk")
    )


def unit_approval_requests(*, unit: KnowledgeUnit) -> QuerySet[ApprovalRequest]:
    """A unit's requests, newest first: what waits, and what was decided."""
    return (
        ApprovalRequest.objects.filter(unit=unit)
        .select_related("unit", "version", "version__author", "requested_by", "decided_by")
        .order_by("-created_at", "-pk")
    )


def approval_request_get(*, pk: int) -> ApprovalRequest | None:
    return (
        ApprovalRequest.objects.filter(pk=pk)
        .select_related("unit", "version", "version__unit", "requested_by")
        .first()
    )


def published_by_unit(*, unit_ids: Iterable[int]) -> dict[int, UnitVersion]:
    """The live version of each of these units that has one, by unit id, in one query."""
    rows = UnitVersion.objects.filter(
        unit_id__in=list(unit_ids), status=VersionStatus.PUBLISHED
    ).select_related("unit")
    return {v.unit_id: v for v in rows}


# --- coverage map ------------------------------------------------------------------------------


def coverage_published() -> dict[str, CancerCoverage]:
    """The coverage map of the published knowledge base (the curator's page): per cancer, what
    its therapy options model and which situations only have immediate steps."""
    return coverage_map(
        UnitRef(
            key=version.unit.key,
            cancer_type=version.unit.cancer_type,
            kind=version.unit.kind,
            content=version.content,
        )
        for version in published_versions().filter(unit__kind=UnitKind.THERAPY_STEP)
    )


def coverage_of_bundle(bundle: Bundle) -> dict[str, CancerCoverage]:
    """The coverage map of a bundle (the seed: docs/coverage.md)."""
    return coverage_map(
        UnitRef(
            key=unit.key,
            cancer_type=unit.cancer_type.value,
            kind=unit.kind.value,
            content=unit_content(unit),
        )
        for unit in bundle.units
    )
