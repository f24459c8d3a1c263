"""Knowledge-base figures: embedding throughput, retrieval quality on the labelled query set,
and hybrid retrieval latency at 1,000 and 100,000 published units."""

from __future__ import annotations

import time
from typing import Any

import yaml
from django.core.management import call_command
from django.db import connection

from benchmarks.common import REPO, emit, p50, p95

QUERIES = REPO / "tests" / "knowledge" / "retrieval_queries.yaml"
VOCABULARY = [
    "resection",
    "ablation",
    "transplant",
    "chemotherapy",
    "immunotherapy",
    "radiotherapy",
    "surveillance",
    "biopsy",
    "staging",
    "nodal",
    "metastatic",
    "adjuvant",
    "neoadjuvant",
    "progression",
    "response",
    "toxicity",
    "renal",
    "hepatic",
    "cardiac",
    "pulmonary",
    "dose",
    "reduction",
    "interval",
    "imaging",
    "marker",
    "mutation",
    "receptor",
    "inhibitor",
    "antibody",
    "infusion",
    "cycle",
    "regimen",
    "maintenance",
    "relapse",
    "refractory",
    "remission",
    "performance",
    "status",
    "bilirubin",
    "albumin",
    "creatinine",
    "platelet",
    "neutrophil",
    "ejection",
    "fraction",
    "portal",
    "tumour",
    "lesion",
    "margin",
    "lobe",
    "segment",
    "node",
    "bone",
    "brain",
    "liver",
    "lung",
    "breast",
    "lymph",
    "marrow",
]


def load_queries() -> list[dict[str, Any]]:
    document = yaml.safe_load(QUERIES.read_text())
    queries: list[dict[str, Any]] = document["queries"]
    return queries


def _quality(provider: Any) -> None:
    from knowledge.selectors import unit_search

    queries = load_queries()
    vectors = provider.embed([q["query"] for q in queries])
    for mode in ("dense", "keyword", "hybrid"):
        recall, reciprocal = [], []
        for query, vector in zip(queries, vectors, strict=True):
            hits = unit_search(
                query=query["query"],
                cancer_type=query.get("cancer_type"),
                k=10,
                mode=mode,
                query_vector=vector,
            )
            keys = [h.unit_key for h in hits]
            relevant = set(query["relevant"])
            recall.append(len(relevant & set(keys)) / len(relevant))
            rank = next((i for i, key in enumerate(keys, 1) if key in relevant), None)
            reciprocal.append(1 / rank if rank else 0.0)
        emit(
            f"retrieval_recall_at_10_{mode}",
            sum(recall) / len(recall),
            "fraction",
            "hybrid > dense and keyword",
        )
        emit(
            f"retrieval_mrr_{mode}",
            sum(reciprocal) / len(reciprocal),
            "fraction",
            "hybrid > dense and keyword",
        )


def _synthetic_units(total: int) -> None:
    """Top the published knowledge base up to ``total`` units of synthetic text and random
    vectors, in SQL (the ORM would take minutes for 100k rows)."""
    from knowledge.models import GuidelineSource, UnitVersion
    from mdtboard.core.dbroles import database_owner

    have = UnitVersion.objects.filter(status="published").count()
    if have >= total:
        return
    source = GuidelineSource.objects.order_by("pk").first()
    assert source is not None, "load the seed first"  # noqa: S101 - benchmark precondition
    start = have + 1
    # Dropping and building the index is the owner's (the app's role only writes rows).
    with database_owner(), connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute("DROP INDEX IF EXISTS unitembedding_hnsw_cosine")
        cursor.execute(
            """
            INSERT INTO knowledge_knowledgeunit (key, kind, cancer_type, created_at)
            SELECT 'bench.' || g,
                   (ARRAY['therapy_step','contraindication','surveillance_interval',
                          'organ_function_gate','interaction','staging_rule'])[1 + mod(g, 6)],
                   (ARRAY['hcc','lung_adenocarcinoma','breast','lymphoma'])[1 + mod(g, 4)], now()
            FROM generate_series(%s, %s) g
            """,
            [start, total],
        )
        cursor.execute(
            """
            INSERT INTO knowledge_unitversion (unit_id, number, source_id, content, content_hash,
                diff, title, text, anchor, grade_system, grade_native, grade_ordinal, search,
                created_at, status, published_at, hotfix, hotfix_reason)
            SELECT u.id, 1, %s,
                   '{"context": {"all": [], "any": [], "exceptions": []},
                     "action": {"type": "therapy", "agents": []}}'::jsonb,
                   md5(u.key), '', t.title, t.body, 'synthetic', 'BENCH', 'synthetic', 3,
                   setweight(to_tsvector('english', t.title), 'A')
                     || setweight(to_tsvector('english', t.body), 'B'),
                   now(), 'published', now(), false, ''
            FROM knowledge_knowledgeunit u
            CROSS JOIN LATERAL (
                SELECT array_to_string(ARRAY(
                           SELECT (%s::text[])[1 + floor(random() * %s)::int]
                           FROM generate_series(1, 4) w WHERE u.id > 0), ' ') AS title,
                       array_to_string(ARRAY(
                           SELECT (%s::text[])[1 + floor(random() * %s)::int]
                           FROM generate_series(1, 30) w WHERE u.id > 0), ' ') AS body
            ) t
            WHERE u.key LIKE 'bench.%%' AND NOT EXISTS (
                SELECT 1 FROM knowledge_unitversion v WHERE v.unit_id = u.id)
            """,
            [source.pk, list(VOCABULARY), len(VOCABULARY), list(VOCABULARY), len(VOCABULARY)],
        )
        cursor.execute(
            """
            INSERT INTO knowledge_unitembedding (version_id, provider, embedding, created_at)
            SELECT v.id, 'synthetic',
                   (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) d
                    WHERE v.id > 0)::vector, now()
            FROM knowledge_unitversion v
            WHERE NOT EXISTS (SELECT 1 FROM knowledge_unitembedding e WHERE e.version_id = v.id)
            """
        )
        cursor.execute(
            "CREATE INDEX unitembedding_hnsw_cosine ON knowledge_unitembedding "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        cursor.execute("ANALYZE")


def _latency(label: str, vectors: list[list[float]], queries: list[dict[str, Any]]) -> None:
    from knowledge.selectors import unit_search

    for query, vector in zip(queries[:5], vectors[:5], strict=True):  # warm caches
        unit_search(query=query["query"], cancer_type=query.get("cancer_type"), query_vector=vector)
    samples = []
    for _ in range(3):
        for query, vector in zip(queries, vectors, strict=True):
            started = time.perf_counter()
            unit_search(
                query=query["query"], cancer_type=query.get("cancer_type"), query_vector=vector
            )
            samples.append((time.perf_counter() - started) * 1000)
    emit(f"retrieval_latency_p50_{label}", p50(samples), "ms")
    emit(
        f"retrieval_latency_p95_{label}", p95(samples), "ms", "< 50 ms" if label == "100k" else None
    )


def run_quality() -> None:
    """Load the seed, then embedding throughput and retrieval quality."""
    from knowledge.embeddings import get_provider
    from knowledge.models import UnitVersion
    from knowledge.services import embedding_text

    call_command("load_kb_seed", verbosity=0)
    provider = get_provider()
    texts = [embedding_text(v) for v in UnitVersion.objects.filter(status="published")]
    provider.embed(texts[:8])  # the model loads once; measure steady-state throughput
    started = time.perf_counter()
    provider.embed(texts)
    emit("embedding_throughput_local", len(texts) / (time.perf_counter() - started), "units/s")
    _quality(provider)


def run_latency(*, large: bool = True) -> None:
    """Synthetic units on top of the seed: run after everything that reads the seed."""
    from knowledge.embeddings import get_provider

    queries = load_queries()
    started = time.perf_counter()
    vectors = get_provider().embed([q["query"] for q in queries])
    emit("query_embedding_mean", (time.perf_counter() - started) * 1000 / len(queries), "ms")
    _synthetic_units(1_000)
    _latency("1k", vectors, queries)
    if large:
        started = time.perf_counter()
        _synthetic_units(100_000)
        emit("synthetic_100k_build", time.perf_counter() - started, "s")
        _latency("100k", vectors, queries)
