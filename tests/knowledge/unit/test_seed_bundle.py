"""The seed knowledge base parses, validates and covers the public evaluation cases.

The evaluator here is a deliberately small, independent reading of the condition semantics in
``knowledge.bundle`` (all/any, three-valued logic where a null fact is *unknown*), so a unit
that only matches through a guessed value fails these tests rather than the engine's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from knowledge.bundle import (
    Bundle,
    Condition,
    SafetyAction,
    SurveillanceAction,
    TherapyAction,
    UnitKind,
    UnitSpec,
    bundle_from_documents,
)
from knowledge.calculators import derive_all, staging_summary
from tests.paths import PUBLIC_CASES, REPO, public_case_files

SEED_DIR = REPO / "knowledge" / "seed"
SEED_FILES = (
    "00-sources.yaml",
    "hcc.yaml",
    "lung.yaml",
    "breast.yaml",
    "lymphoma.yaml",
    "common.yaml",
)
QUERIES = REPO / "tests" / "knowledge" / "retrieval_queries.yaml"

MIN_UNITS = 160
MIN_PER_CANCER = 30
MIN_PER_KIND = 10
CANCERS = ("hcc", "lung_adenocarcinoma", "breast", "lymphoma")
SAFETY_KINDS = (UnitKind.CONTRAINDICATION, UnitKind.INTERACTION, UnitKind.ORGAN_FUNCTION_GATE)
DERIVED_KEYS = {
    "child_pugh_score",
    "child_pugh_class",
    "albi_score",
    "albi_grade",
    "bclc",
    "tnm_stage",
    "breast_subtype",
    "ann_arbor_stage",
    "ipi",
    "cns_ipi",
    "egfr_ckd_epi_2021",
    "crcl_cockcroft_gault",
    "line",
}


# --- loading ------------------------------------------------------------------------------------
def _documents() -> list[dict[str, Any]]:
    return [yaml.safe_load((SEED_DIR / name).read_text(encoding="utf-8")) for name in SEED_FILES]


@pytest.fixture(scope="module")
def bundle() -> Bundle:
    return bundle_from_documents(_documents())


@pytest.fixture(scope="module")
def queries() -> list[dict[str, Any]]:
    data = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    return list(data["queries"])


def _cases() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in public_case_files()]


# --- a minimal evaluator of unit applicability ----------------------------------------------------
Truth = bool | None  # None = unknown


def _derived(case: Mapping[str, Any]) -> dict[str, Any]:
    results = derive_all(case)
    values: dict[str, Any] = {name: result.value for name, result in results.items()}
    values.update({k: v for k, v in staging_summary(results).items() if v is not None})
    prior = (case.get("diagnosis") or {}).get("prior_therapies")
    values["line"] = None if prior is None else len(prior) + 1
    return values


def _fact(case: Mapping[str, Any], derived: Mapping[str, Any], fact: str) -> Any:
    if fact.startswith("derived."):
        return derived.get(fact.removeprefix("derived."))
    node: Any = case
    for part in fact.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _condition(cond: Condition, case: Mapping[str, Any], derived: Mapping[str, Any]) -> Truth:
    value = _fact(case, derived, cond.fact)
    if cond.op == "present":
        return value is not None
    if value is None:
        return None
    if cond.op == "eq":
        return _same(value, cond.value)
    if cond.op == "ne":
        return not _same(value, cond.value)
    if cond.op == "in":
        return any(_same(value, v) for v in cond.value)
    if cond.op == "not_in":
        return not any(_same(value, v) for v in cond.value)
    if cond.op in ("lt", "le", "gt", "ge"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return {
            "lt": value < cond.value,
            "le": value <= cond.value,
            "gt": value > cond.value,
            "ge": value >= cond.value,
        }[cond.op]
    if cond.op in ("is_true", "is_false"):
        if not isinstance(value, bool):
            return None
        return value is (cond.op == "is_true")
    if cond.op == "contains_any":
        needles = [str(v).casefold() for v in cond.value]
        items = value if isinstance(value, list) else [value]
        return any(n in str(item).casefold() for item in items for n in needles)
    raise AssertionError(f"unhandled operator {cond.op}")


def _all(values: list[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _any(values: list[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def applies(unit: UnitSpec, case: Mapping[str, Any], derived: Mapping[str, Any]) -> Truth:
    if unit.cancer_type.value not in ("any", case.get("cancer_type")):
        return False
    parts = [_all([_condition(c, case, derived) for c in unit.context.all])]
    if unit.context.any:
        parts.append(_any([_condition(c, case, derived) for c in unit.context.any]))
    return _all(parts)


def _matching(bundle: Bundle, case: Mapping[str, Any]) -> list[UnitSpec]:
    derived = _derived(case)
    return [u for u in bundle.units if applies(u, case, derived) is True]


def _therapy_text(unit: UnitSpec) -> str:
    assert isinstance(unit.action, TherapyAction)
    return " ".join([unit.action.description, *unit.action.agents]).casefold()


def _safety_text(unit: UnitSpec) -> str:
    assert isinstance(unit.action, SafetyAction)
    return " ".join([unit.title, unit.text, unit.action.advice, unit.action.gate]).casefold()


def _removed_agents(unit: UnitSpec) -> set[str]:
    assert isinstance(unit.action, SafetyAction)
    return {a.casefold() for a in unit.action.agents} if unit.action.effect == "remove" else set()


def _surveillance_text(unit: UnitSpec) -> str:
    assert isinstance(unit.action, SurveillanceAction)
    return " ".join([unit.action.what, unit.action.anchor.value]).casefold()


# --- format and content --------------------------------------------------------------------------
def test_seed_files_parse_and_validate(bundle: Bundle) -> None:
    for document in _documents():
        assert document["format"] == "mdtboard.kb/1"
    assert len(bundle.sources) >= 20
    assert all(s.url.startswith("https://") for s in bundle.sources)


def test_seed_has_enough_units_of_every_kind_and_cancer(bundle: Bundle) -> None:
    assert len(bundle.units) >= MIN_UNITS
    kinds = Counter(u.kind for u in bundle.units)
    for kind in UnitKind:
        assert kinds[kind] >= MIN_PER_KIND, f"only {kinds[kind]} {kind.value} units"
    cancers = Counter(u.cancer_type.value for u in bundle.units)
    for cancer in CANCERS:
        assert cancers[cancer] >= MIN_PER_CANCER, f"only {cancers[cancer]} {cancer} units"
    assert cancers["any"] >= 10


def test_seed_units_cite_defined_sources_and_are_distinct(bundle: Bundle) -> None:
    source_keys = {s.key for s in bundle.sources}
    assert {u.source for u in bundle.units} <= source_keys
    assert {u.source for u in bundle.units} == source_keys, "every source should be cited"
    texts = Counter(" ".join(u.text.split()).casefold() for u in bundle.units)
    assert [t for t, n in texts.items() if n > 1] == []
    titles = Counter(u.title.casefold() for u in bundle.units)
    assert [t for t, n in titles.items() if n > 1] == []


def test_seed_conditions_name_real_case_fields() -> None:
    sample = json.loads(next(iter(public_case_files())).read_text(encoding="utf-8"))
    known = {
        f"{section}.{field}"
        for section, body in sample.items()
        if isinstance(body, dict)
        for field in body
    }
    known |= {k for k, v in sample.items() if not isinstance(v, dict)}
    known |= {f"derived.{k}" for k in DERIVED_KEYS}
    for unit in bundle_from_documents(_documents()).units:
        for cond in (*unit.context.all, *unit.context.any):
            assert cond.fact in known, f"{unit.key}: unknown fact {cond.fact!r}"


def test_seed_grades_and_anchors_are_filled(bundle: Bundle) -> None:
    for unit in bundle.units:
        assert unit.anchor.strip(), unit.key
        assert unit.grade.native.strip(), unit.key
        prefix = {
            "hcc": "hcc.",
            "lung_adenocarcinoma": "lung.",
            "breast": "breast.",
            "lymphoma": "lymph.",
            "any": "common.",
        }
        assert unit.key.startswith(prefix[unit.cancer_type.value]), unit.key


# --- retrieval query set -------------------------------------------------------------------------
def test_retrieval_queries_are_labelled_with_existing_units(
    bundle: Bundle, queries: list[dict[str, Any]]
) -> None:
    assert len(queries) >= 45
    unit_keys = {u.key: u for u in bundle.units}
    ids = [q["id"] for q in queries]
    assert len(ids) == len(set(ids))
    for query in queries:
        assert set(query) == {"id", "query", "cancer_type", "relevant"}, query["id"]
        assert query["query"].strip()
        assert 1 <= len(query["relevant"]) <= 5, query["id"]
        for key in query["relevant"]:
            assert key in unit_keys, f"{query['id']}: unknown unit {key}"
            assert unit_keys[key].cancer_type.value in (query["cancer_type"], "any"), (
                query["id"],
                key,
            )
    assert {q["cancer_type"] for q in queries} >= {*CANCERS, "any"}


# --- public case coverage ------------------------------------------------------------------------
CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[c["case_id"] for c in CASES])
def test_seed_covers_public_case(bundle: Bundle, case: dict[str, Any]) -> None:
    expected = case["expected"]
    matching = _matching(bundle, case)
    therapy = [u for u in matching if u.kind is UnitKind.THERAPY_STEP]
    safety = [u for u in matching if u.kind in SAFETY_KINDS]
    surveillance = [u for u in matching if u.kind is UnitKind.SURVEILLANCE_INTERVAL]

    for terms in expected.get("recommend_all", []):
        hits = [u.key for u in therapy if any(t.casefold() in _therapy_text(u) for t in terms)]
        assert hits, f"no matching therapy step mentions any of {terms}"

    removed = set().union(*(_removed_agents(u) for u in safety))
    for term in expected.get("recommend_none", []):
        offending = [u.key for u in therapy if term.casefold() in _therapy_text(u)]
        if offending:
            assert term.casefold() in removed, f"{offending} recommend {term!r}"

    for terms in expected.get("safety_any", []):
        hits = [u.key for u in safety if any(t.casefold() in _safety_text(u) for t in terms)]
        assert hits, f"no matching safety unit mentions any of {terms}"

    for terms in expected.get("monitoring_any", []):
        hits = [
            u.key for u in surveillance if any(t.casefold() in _surveillance_text(u) for t in terms)
        ]
        assert hits, f"no matching surveillance unit mentions any of {terms}"


def test_evaluator_treats_null_facts_as_unknown(bundle: Bundle) -> None:
    case = json.loads((PUBLIC_CASES / "pub-hcc-01.json").read_text(encoding="utf-8"))
    case["organ_function"]["clinically_significant_portal_hypertension"] = None
    resection = next(u for u in bundle.units if u.key == "hcc.tx.resection")
    assert applies(resection, case, _derived(case)) is None
    case["organ_function"]["clinically_significant_portal_hypertension"] = True
    assert applies(resection, case, _derived(case)) is False
