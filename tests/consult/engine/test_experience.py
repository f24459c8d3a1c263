"""The engine and the experience memory, as plain data through the ExperienceRetriever seam:
recalled once from round 2 and journaled, recorded in the residual context and the plan;
without memory the plan is what it was. Consensus-weight offsets are small and bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from clinical.applicability import case_facts
from clinical.calculators import derive_all, staging_summary
from consult.bundle_retriever import BundleRetriever
from consult.engine.consensus import MIN_WEIGHT, with_offsets
from consult.engine.deliberation import Deliberation, EngineConfig
from consult.engine.protocols import MemoryStore, PastCase
from consult.engine.providers import GuidelineProvider
from tests.consult.engine.support import load_case, seed_bundle
from tests.paths import PUBLIC_CASES

PAST = PastCase(
    kind="chain",
    summary="hcc; BCLC C; varices untreated",
    lesson="Corrected to: band ligation first. Reflection: treat varices before bevacizumab.",
    similarity=0.91,
    entry_id=7,
    label="ChainKB #7",
)


class Recall:
    def __init__(self, past: list[PastCase]) -> None:
        self.past = past
        self.calls = 0

    def similar(self, *, case: Mapping[str, Any], k: int) -> list[PastCase]:
        self.calls += 1
        return self.past[:k]


def _run(case: dict[str, Any], experience: Any = None, store: MemoryStore | None = None) -> Any:
    deliberation = Deliberation(
        case=case,
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=BundleRetriever(seed_bundle()),
        store=store or MemoryStore(),
        provider=GuidelineProvider(),
        experience=experience,
        config=EngineConfig(cancel_poll_s=0.05),
    )
    return asyncio.run(deliberation.run())


def test_past_cases_are_recalled_once_from_round_2_and_recorded() -> None:
    # given a case the board needs two rounds for, and a memory holding one similar case
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    recall = Recall([PAST])
    store = MemoryStore()
    # when the board deliberates
    plan = _run(case, recall, store)
    # then the memory was asked once, for round 2, and its answer journaled
    assert plan.rounds == 2
    assert recall.calls == 1
    assert store.steps["r2.experience"]["past"][0]["entry_id"] == 7
    # and round 2's residual records the case under Long-term memory, round 1's does not
    assert store.steps["r1.synthesis"]["synthesis"]["residual"]["long_term_memory"] == (
        "No similar past case."
    )
    memory = store.steps["r2.synthesis"]["synthesis"]["residual"]["long_term_memory"]
    assert memory.startswith("ChainKB #7 (similarity 0.91): Corrected to: band ligation")
    # and the plan says which past case informed it
    assert [(p.entry_id, p.label) for p in plan.informed_by] == [(7, "ChainKB #7")]


def test_a_resumed_run_reads_what_was_recalled_not_what_the_memory_holds_now() -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    store = MemoryStore()
    _run(case, Recall([PAST]), store)
    later = Recall([])  # the entry was retired since
    plan = _run(case, later, store)
    assert later.calls == 0
    assert [p.entry_id for p in plan.informed_by] == [7]


def test_one_round_recalls_nothing() -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-01.json")
    recall = Recall([PAST])
    plan = _run(case, recall)
    assert plan.rounds == 1
    assert recall.calls == 0
    assert plan.informed_by == []


def test_the_offline_plan_is_the_same_with_or_without_memory_but_for_its_record() -> None:
    # The guideline engine reasons from the knowledge base only: a recalled case is recorded
    # (residual, informed_by) and given to LLM members, never turned into plan items offline.
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    without = _run(case).model_dump(mode="json")
    with_memory = _run(case, Recall([PAST])).model_dump(mode="json")
    assert without.pop("informed_by") == []
    assert with_memory.pop("informed_by") != []
    assert with_memory == without


def test_weight_offsets_are_added_to_the_panel_only_and_never_silence_a_member() -> None:
    weights = {"diagnostic": 1.0, "treatment": 1.0, "safety": 2.0, "hepatology": 0.5}
    shifted = with_offsets(weights, {"safety": 0.1, "hepatology": -0.9, "pharmacy": 0.3})
    assert shifted == {
        "diagnostic": 1.0,
        "treatment": 1.0,
        "safety": 2.1,
        "hepatology": MIN_WEIGHT,
    }
    assert with_offsets(weights, {}) == weights


def test_engine_config_refuses_an_offset_beyond_one() -> None:
    with pytest.raises(ValueError, match="offset"):
        EngineConfig(weight_offsets={"safety": 1.5})


def _llm_run(case: dict[str, Any], experience: Any, seen: list[dict[str, Any]]) -> MemoryStore:
    """Only the Coordinator's turns answer through the (scripted) LLM; every other turn fails
    and falls back to the guideline engine."""
    from consult.engine.providers import LLMProvider
    from consult.engine.schemas import Synthesis
    from tests.consult.engine.support import ScriptedLLM

    def answer(role: str, schema: type, user: dict[str, Any]) -> Any:
        if schema is not Synthesis:
            return RuntimeError("not scripted")
        seen.append(user)
        return {
            "residual": {
                "consistency": "c",
                "conflict": "c",
                "independence": "i",
                "integration": "i",
                "long_term_memory": "A similar case: band the varices first.",
            },
            "draft": {"summary": "s", "intent": "palliative", "components": []},
            "confidence": 0.5,
        }

    store = MemoryStore()
    deliberation = Deliberation(
        case=case,
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=BundleRetriever(seed_bundle()),
        store=store,
        provider=LLMProvider(ScriptedLLM(answer)),
        experience=experience,
        config=EngineConfig(cancel_poll_s=0.05),
    )
    asyncio.run(deliberation.run())
    return store


def test_the_llm_coordinator_sees_the_past_cases_and_cannot_misstate_what_was_recalled() -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    # with a past case recalled: the Coordinator receives it in round 2, and the residual
    # records it by label before the Coordinator's note
    seen: list[dict[str, Any]] = []
    store = _llm_run(case, Recall([PAST]), seen)
    assert not seen[0].get("similar_past_cases")  # none recalled yet: nothing sent
    assert seen[1]["similar_past_cases"][0]["label"] == "ChainKB #7"
    memory = store.steps["r2.synthesis"]["synthesis"]["residual"]["long_term_memory"]
    assert memory.startswith("ChainKB #7 (similarity 0.91)")
    assert memory.endswith("| Coordinator: A similar case: band the varices first.")
    # with nothing recalled, a "similar case" the Coordinator claims is not recorded
    store = _llm_run(case, Recall([]), [])
    for step in ("r1.synthesis", "r2.synthesis"):
        residual = store.steps[step]["synthesis"]["residual"]
        assert residual["long_term_memory"] == "No similar past case."
