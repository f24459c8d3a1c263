"""Pharmacy joins the board when the patient's medications interact (DESIGN.md, triage): when a
knowledge-base interaction rule fires on what the patient takes, or with polypharmacy; a
metformin or an inhaler alone does not earn a seat (issue 27: each seat costs three LLM calls
a round)."""

from __future__ import annotations

from typing import Any

from consult.engine.aio import run_coroutine
from consult.engine.protocols import MemoryStore
from consult.engine.providers import GuidelineProvider
from tests.consult.engine.support import BundleRetriever, deliberation, load_case
from tests.paths import PUBLIC_CASES


def _triage(case: dict[str, Any], retriever: BundleRetriever) -> dict[str, Any]:
    store = MemoryStore()
    run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=GuidelineProvider()
        ).run()
    )
    [triage] = [e.payload for e in store.events if e.kind == "triage"]
    return triage


def _lung(medications: list[str]) -> dict[str, Any]:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["patient"]["medications"] = medications
    return case


def test_a_medication_no_rule_is_about_invites_no_pharmacist(retriever: BundleRetriever) -> None:
    triage = _triage(_lung(["tiotropium inhaler"]), retriever)
    assert "pharmacy" not in triage["panel"]


def test_an_interacting_medication_invites_the_pharmacist_with_the_rule_named(
    retriever: BundleRetriever,
) -> None:
    triage = _triage(_lung(["tiotropium inhaler", "warfarin 5 mg daily"]), retriever)
    assert "pharmacy" in triage["panel"]
    reason = triage["specialists"]["pharmacy"]
    assert reason.startswith("current medications interact:")
    assert "arfarin" in reason or "anticoagula" in reason.lower(), reason


def test_five_medications_invite_the_pharmacist_whatever_they_are(
    retriever: BundleRetriever,
) -> None:
    medications = ["tiotropium", "amlodipine", "ramipril", "metformin", "atorvastatin"]
    triage = _triage(_lung(medications), retriever)
    assert triage["specialists"]["pharmacy"] == "polypharmacy: 5 current medications"
