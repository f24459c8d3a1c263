"""The seed knowledge base parses, validates and covers the public evaluation cases.

Whether a unit applies to a case is decided by the retriever the engine uses
(``consult.bundle_retriever``, over ``clinical.applicability``, the code the database
retriever uses too), so a regression there fails these tests too; a null fact is *unknown*,
and a unit that only matches through a guessed value does not count.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from clinical.applicability import Truth
from clinical.calculators import derive_all
from clinical.calculators.derive import CALCULATORS_BY_CANCER_TYPE
from clinical.rules import Bundle, SafetyAction, SurveillanceAction, TherapyAction, UnitSpec
from clinical.text.concepts import dictionary
from clinical.vocab import UnitKind
from consult.bundle_retriever import BundleRetriever
from consult.casefile.fields import FIELDS
from tests.fixtures.seed import SEED_DIR
from tests.paths import PUBLIC_CASES, REPO, public_case_files

QUERIES = REPO / "tests" / "knowledge" / "retrieval_queries.yaml"

MIN_UNITS = 160
MIN_PER_CANCER = 30
MIN_PER_KIND = 10
CANCERS = ("hcc", "lung_adenocarcinoma", "breast", "lymphoma")
SAFETY_KINDS = (UnitKind.CONTRAINDICATION, UnitKind.INTERACTION, UnitKind.ORGAN_FUNCTION_GATE)


# --- loading ------------------------------------------------------------------------------------
# The seed bundle itself is the shared ``bundle`` fixture (tests/fixtures/seed.py).
def _documents() -> list[dict[str, Any]]:
    # libyaml's safe loader: the same documents as yaml.safe_load, in a tenth of the time
    return [
        yaml.load(p.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        for p in sorted(SEED_DIR.glob("*.yaml"))
    ]


@pytest.fixture(scope="module")
def queries() -> list[dict[str, Any]]:
    data = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    return list(data["queries"])


def _cases() -> list[dict[str, Any]]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in public_case_files()]


# --- applicability: the real code the engine and the retrievers use -------------------------------
def _applicability(retriever: BundleRetriever, case: Mapping[str, Any]) -> dict[str, Truth]:
    """Each unit of the case's cancer (and of any cancer) with whether it applies, as the
    engine's retriever decides it; units of other cancers are not offered at all."""
    found = retriever.applicable(
        cancer_type=str(case["cancer_type"]),
        kinds=[kind.value for kind in UnitKind],
        case=case,
        everything=True,
    )
    return {e.unit_id: e.applies for e in found}


def _matching(retriever: BundleRetriever, case: Mapping[str, Any]) -> list[UnitSpec]:
    applies = _applicability(retriever, case)
    return [u for u in retriever.bundle.units if applies.get(u.key) is True]


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


def test_seed_conditions_name_real_case_fields(bundle: Bundle) -> None:
    # every condition names a field of the case format or a fact the calculators derive
    known = {field.path for field in FIELDS}
    derived = {name for calcs in CALCULATORS_BY_CANCER_TYPE.values() for name in calcs}
    derived |= set(derive_all({"cancer_type": "other"}))
    known |= {f"derived.{name}" for name in derived} | {"derived.line"}
    # or a fact the clinical text reader sets from the notes (a drug named there, a prior
    # pneumonitis, a graded neuropathy), which the rules read as it is
    reader = dictionary()
    for unit in bundle.units:
        for cond in (*unit.context.all, *unit.context.any):
            assert cond.fact in known or reader.family_of_fact(cond.fact), (
                f"{unit.key}: unknown fact {cond.fact!r}"
            )


def test_seed_therapy_units_say_how_they_enter_a_pathway(bundle: Bundle) -> None:
    # an adjunct that follows only some pathways names them; an option's "when" is written
    for unit in bundle.units:
        if isinstance(unit.action, TherapyAction) and unit.action.with_modalities:
            assert unit.action.role == "adjunct", unit.key


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
def test_seed_covers_public_case(retriever: BundleRetriever, case: dict[str, Any]) -> None:
    expected = case["expected"]
    matching = _matching(retriever, case)
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


def test_applicability_treats_null_facts_as_unknown(retriever: BundleRetriever) -> None:
    case = json.loads((PUBLIC_CASES / "pub-hcc-01.json").read_text(encoding="utf-8"))
    case["organ_function"]["clinically_significant_portal_hypertension"] = None
    assert _applicability(retriever, case)["hcc.tx.resection"] is None
    case["organ_function"]["clinically_significant_portal_hypertension"] = True
    assert _applicability(retriever, case)["hcc.tx.resection"] is False


def test_units_of_another_cancer_never_apply(retriever: BundleRetriever) -> None:
    # a lung case is offered lung units and the units for any cancer, never an HCC unit
    case = json.loads((PUBLIC_CASES / "pub-lung-01.json").read_text(encoding="utf-8"))
    offered = _applicability(retriever, case)
    assert offered
    assert not any(key.startswith("hcc.") for key in offered)
    assert any(key.startswith("common.") for key in offered)
