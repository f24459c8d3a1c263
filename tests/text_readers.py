"""Every reader of untrusted free text, as one list of callables ``reader(text) -> anything``.

A reader takes hostile text and must cost time linear in it (tests/linearity.py; the test is
tests/consult/unit/test_text_readers_linear.py, the figure `make bench`'s ``textreaders``).
To register a new reader, append a function to TEXT_READERS: it receives the text and feeds
it to the code under test the way the application does (as a case's free-text fields, a
plan's prose, a guideline document...). Case-file text reaches the readers without the
validator's 10,000-character cap, so a reader is linear whatever the cap is.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from datetime import date
from functools import cache
from typing import Any

from tests.paths import REPO

CASES = REPO / "tests" / "cases"
# One case of each cancer type the calculators specialise in (breast: the dossier page's).
BASE_CASES = ("hcc-01.json", "lung-01.json", "lymph-01.json")
# Every free-text field of mdtboard.case/1 (consult/casefile/fields.py: the strings without
# a choice list or a pattern, and the lists of strings).
TEXT_FIELDS = (
    "question",
    "notes",
    "patient.preferences",
    "index_lesion.description",
    "index_lesion.site",
    "diagnosis.histology",
    "diagnosis.subtype",
    "organ_function.autoimmune_disease",
)
LIST_FIELDS = ("patient.comorbidities", "patient.medications", "patient.allergies")


@cache
def _base(name: str) -> dict[str, Any]:
    case = json.loads((CASES / name).read_text())
    case.pop("expected", None)
    return case


def hostile_case(text: str, name: str = "breast-01.json") -> dict[str, Any]:
    """A real case whose free-text fields (and prior lines' regimens) share ``text``: each
    holds an equal share of it, so the case carries about ``len(text)`` characters in all
    and every field grows with the text."""
    case = copy.deepcopy(_base(name))
    therapies = (case.get("diagnosis") or {}).get("prior_therapies") or []
    share = text[: max(1, len(text) // (len(TEXT_FIELDS) + len(LIST_FIELDS) + len(therapies)))]
    for path in (*TEXT_FIELDS, *LIST_FIELDS):
        section, _, key = path.rpartition(".")
        target = case.setdefault(section, {}) if section else case
        target[key] = [share] if path in LIST_FIELDS else share
    for therapy in therapies:
        therapy["regimen"] = share
    return case


# --- the case file --------------------------------------------------------------------------


def casefile_validation(text: str) -> object:
    from consult.casefile.validate import case_warnings, validate_case

    case = hostile_case(text)
    return validate_case(case, filename="hostile.json", today=date(2026, 6, 1)), case_warnings(
        case, filename="hostile.json", today=date(2026, 6, 1)
    )


def dossier_page(text: str) -> object:
    """What the dossier page reads: the case in sections and every derived fact."""
    from clinical.calculators import derive_all
    from consult.presenters import case_sections

    case = hostile_case(text)
    return case_sections(case), derive_all(case)


# --- the calculators and text readers ----------------------------------------------------------


def calculators_every_cancer(text: str) -> object:
    from clinical.calculators import derive_all

    return [derive_all(hostile_case(text, name)) for name in BASE_CASES]


def facts_from_text(text: str) -> object:
    from clinical.applicability import case_facts
    from clinical.text.clinicaltext import likely_missing, read_text_facts

    case = hostile_case(text)
    return read_text_facts(case), likely_missing(case), case_facts(case)


def preferences(text: str) -> object:
    from clinical.text.preferences import parse_preferences

    return parse_preferences(text)


def negation(text: str) -> object:
    from clinical.text.negation import term_occurrences

    return term_occurrences(text, "ascites"), term_occurrences(text, "1")


def notes_reader(text: str) -> object:
    """The medspaCy reader of clinical notes (clinical/text/reader.py)."""
    from clinical.text.reader import read_facts

    return read_facts(text, source="notes", as_of=date(2026, 6, 1))


def lymphoma_text(text: str) -> object:
    from clinical.calculators.lymphoma import classify_lymphoma, esr_from_notes, parse_ann_arbor

    return classify_lymphoma(text, text), esr_from_notes(text), parse_ann_arbor(text)


# --- the consultation engine ------------------------------------------------------------------


def drug_lexicon(text: str) -> object:
    from clinical import lexicon

    # Caches emptied: a repeated measurement must read the text again.
    lexicon.read.cache_clear()
    lexicon.written.cache_clear()
    return (
        lexicon.read(text),
        lexicon.written("pembrolizumab", text),
        lexicon.history_agents([text]),
    )


def plan_hygiene(text: str) -> object:
    from consult.engine.dosing import carboplatin_aucs
    from consult.engine.hygiene import Excluded, clean_text, without_partners

    excluded = Excluded.of(["rituximab", "bevacizumab"])
    return clean_text(text, excluded), without_partners(text, excluded), carboplatin_aucs(text)


@cache
def _retriever() -> Any:
    from consult.bundle_retriever import BundleRetriever
    from tests.fixtures.seed import seed_bundle

    return BundleRetriever(seed_bundle())


def _plan(case: Mapping[str, Any]) -> dict[str, Any]:
    from clinical import lexicon
    from clinical.applicability import case_facts
    from clinical.calculators import derive_all, staging_summary
    from consult.engine.aio import run_coroutine
    from consult.engine.deliberation import Deliberation
    from consult.engine.protocols import MemoryStore
    from consult.engine.providers import GuidelineProvider

    lexicon.read.cache_clear()
    lexicon.written.cache_clear()
    lexicon._given.cache_clear()
    deliberation = Deliberation(
        case=dict(case),
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=_retriever(),
        store=MemoryStore(),
        provider=GuidelineProvider(),
    )
    plan = run_coroutine(lambda: deliberation.run())
    return plan.model_dump(mode="json")


def consultation(text: str) -> object:
    """The guideline engine's whole deliberation on a case with hostile free text."""
    return _plan(hostile_case(text, "hcc-01.json"))


@cache
def _plan_of_a_real_case() -> dict[str, Any]:
    return _plan(_base("breast-01.json"))


def hostile_plan(text: str) -> dict[str, Any]:
    """A real plan whose prose (every description, rationale, note and flag) is ``text``."""
    doc = copy.deepcopy(_plan_of_a_real_case())
    recommendation = doc.get("recommendation") or {}
    recommendation["summary"] = text
    for component in recommendation.get("components") or []:
        component["description"] = text
        component["rationale"] = [text]
    for flag in (doc.get("safety") or {}).get("flags") or []:
        flag["text"] = text
    for gate in doc.get("gates") or []:
        gate["detail"] = text
    return doc


def plan_page(text: str) -> object:
    """What the plan and review pages, the rating packet and the amendment diff read."""
    from consult.labels import clinical_text
    from consult.plan_view import plan_view
    from consult.rating.blinding import blind_plan, neutral_text
    from consult.review.presenters import plan_lines, recommendation_view

    doc = hostile_plan(text)
    return (
        plan_view(doc),
        recommendation_view(doc, case=hostile_case(text), dossier_id=1, derived={}, version_ids={}),
        plan_lines(doc),
        blind_plan(doc),
        neutral_text(text),
        clinical_text(text),
    )


# --- the knowledge base ------------------------------------------------------------------------


def guideline_ingest(text: str) -> object:
    from knowledge.ingest import segment_document

    return [
        segment_document(text, fmt=fmt, source_key="hostile-1")  # type: ignore[arg-type]
        for fmt in ("text", "markdown", "html")
    ]


TEXT_READERS: list[Callable[[str], object]] = [
    casefile_validation,
    dossier_page,
    calculators_every_cancer,
    facts_from_text,
    preferences,
    negation,
    notes_reader,
    lymphoma_text,
    drug_lexicon,
    plan_hygiene,
    consultation,
    plan_page,
    guideline_ingest,
]
