"""The deliberation engine, pure Python: guideline concordance, the safety gate, rounds,
grounding, fallbacks and resumption."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.engine.aio import run_coroutine
from consult.engine.deliberation import EngineConfig
from consult.engine.protocols import MemoryStore, Step, StepResult
from consult.engine.providers import LLMProvider
from consult.evaluation import concordance_failures
from tests.consult.engine.support import ScriptedLLM, deliberation, llm_answers, load_case
from tests.paths import PUBLIC_CASES, public_case_files


@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_guideline_engine_is_concordant_on_public_case(path: Path, retriever: Any) -> None:
    # given an evaluation case
    case, expected = load_case(path)
    # when the guideline engine deliberates on it
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    # then every expectation of the file holds, and every cited unit carries provenance
    assert concordance_failures(plan.model_dump(mode="json"), expected) == []
    assert plan.evidence
    assert all(e.unit_id and e.anchor and e.version.startswith("v") for e in plan.evidence)
    assert plan.engine == "guideline-engine"


def test_safety_flags_name_their_reason_and_unit(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    varices = [f for f in plan.safety.flags if "varice" in f.text.lower()]
    assert varices
    assert all(f.evidence and f.evidence[0].startswith("hcc.") for f in varices)
    # the bevacizumab regimen is kept only on the condition the rule states
    atezo_bev = next(
        c for c in plan.recommendation.components if "bevacizumab" in " ".join(c.agents).lower()
    )
    assert any("varice" in condition.lower() for condition in atezo_bev.conditions)


def test_missing_inputs_make_gates_unknown_and_ask_for_the_data(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    unknown = [g for g in plan.safety.gates if g.status == "unknown"]
    assert unknown
    assert all(g.needs for g in unknown)
    assert any("organ_function.autoimmune_disease" in n for n in plan.needs_data)


def test_contraindicated_drug_is_removed_by_the_gate_with_a_conflict_record(
    retriever: Any,
) -> None:
    # given a lung case whose treatment would be a checkpoint inhibitor, after a kidney
    # transplant (the seed's common contraindication)
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["diagnosis"]["transplant_history"] = "kidney"
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    agents = " ".join(a for c in plan.recommendation.components for a in c.agents).lower()
    assert "pembrolizumab" not in agents
    removed = [r for r in plan.rejected_options if "pembrolizumab" in r.option.lower()]
    assert removed
    assert all("transplant" in r.reason.lower() for r in removed)
    assert any(c.kind == "risk" and "safety" in c.between for c in plan.conflicts)


def test_resumed_run_redoes_no_step_and_gives_the_same_plan(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-breast-01.json")
    full = MemoryStore()
    expected_plan = run_coroutine(lambda: deliberation(case, retriever=retriever, store=full).run())

    # given a store that holds only the first half of the steps (a worker died there)
    class Resumable(MemoryStore):
        commits: list[str]

        async def commit(self, step: Step, result: StepResult) -> None:
            self.commits.append(step.key)
            await super().commit(step, result)

    partial = Resumable()
    partial.commits = []
    keys = list(full.steps)
    for key in keys[: len(keys) // 2]:
        partial.steps[key] = full.steps[key]
    # when the run is resumed
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever, store=partial).run())
    # then only the missing steps ran, and the plan is the same
    assert partial.commits == keys[len(keys) // 2 :]
    assert plan.model_dump() == expected_plan.model_dump()


def test_cancel_stops_between_steps(retriever: Any) -> None:
    from consult.engine.deliberation import Cancelled

    case, _ = load_case(PUBLIC_CASES / "pub-hcc-01.json")
    store = MemoryStore()
    store.cancel = True
    with pytest.raises(Cancelled):
        run_coroutine(lambda: deliberation(case, retriever=retriever, store=store).run())
    assert store.steps == {}


def test_cancel_interrupts_members_waiting_on_the_llm(retriever: Any) -> None:
    import asyncio

    from consult.engine.deliberation import Cancelled

    case, _ = load_case(PUBLIC_CASES / "pub-hcc-01.json")
    store = MemoryStore()

    class Hanging:
        """An LLM that never answers; the clinician cancels once the members are waiting."""

        def model_for(self, role: str) -> str:
            return "hanging"

        async def complete_structured(self, **kwargs: Any) -> Any:
            store.cancel = True
            await asyncio.Event().wait()

    config = EngineConfig(cancel_poll_s=0.01)
    with pytest.raises(Cancelled):
        run_coroutine(
            lambda: deliberation(
                case,
                retriever=retriever,
                store=store,
                provider=LLMProvider(Hanging()),
                config=config,
            ).run()
        )
    # what finished before the cancel is kept; no member's turn is
    assert "intake" in store.steps
    assert any(key.startswith("retrieval.") for key in store.steps)
    assert not any(key.startswith("r1.") for key in store.steps)


def test_round_limit_is_validated() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        EngineConfig(max_rounds=9)


# --- LLM mode with a scripted double (the HTTP stub tests live with the LLM client) --------


def test_llm_disagreement_leads_to_a_second_round_with_residual_context(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-01.json")
    llm = ScriptedLLM(llm_answers(disagree_rounds=1))
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=LLMProvider(llm)
        ).run()
    )
    assert plan.rounds == 2
    assert plan.engine == "llm:scripted-model"
    consensus = [e.payload for e in store.events if e.kind == "consensus"]
    assert [c["stop"] for c in consensus] == [False, True]
    assert sum(1 for e in store.events if e.kind == "residual") == 2


def test_llm_board_checks_and_writes_its_plan_after_the_last_vote_as_a_resumed_run_would(
    retriever: Any,
) -> None:
    # given an LLM board that needs two rounds (the gate and plan are worked out while each
    # round's votes are awaited)
    case, _ = load_case(PUBLIC_CASES / "pub-lung-01.json")

    def two_rounds(store: MemoryStore) -> Any:
        provider = LLMProvider(ScriptedLLM(llm_answers(disagree_rounds=1)))
        return run_coroutine(
            lambda: deliberation(case, retriever=retriever, store=store, provider=provider).run()
        )

    full = MemoryStore()
    plan = two_rounds(full)
    # then the board sees the gate, the review and the plan only after the last round's votes
    kinds = [e.kind for e in full.events]
    last_consensus = len(kinds) - 1 - kinds[::-1].index("consensus")
    assert plan.rounds == 2
    assert {"gate", "review", "plan"} <= set(kinds[last_consensus + 1 :])
    assert not {"gate", "review", "plan"} & set(kinds[:last_consensus])
    # and a run resumed just before the gate (a worker died there) checks and writes the same
    keys = list(full.steps)
    partial = MemoryStore()
    for key in keys[: keys.index("gate")]:
        partial.steps[key] = full.steps[key]
    resumed = two_rounds(partial)
    assert list(partial.steps) == keys
    assert [(e.kind, e.payload) for e in partial.events] == [
        (e.kind, e.payload) for e in full.events[len(full.events) - len(partial.events) :]
    ]
    assert resumed.model_dump() == plan.model_dump()


def test_llm_citation_of_an_unretrieved_unit_is_marked_ungrounded(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-01.json")
    llm = ScriptedLLM(llm_answers(cite="made.up-unit"))
    store = MemoryStore()
    run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=LLMProvider(llm)
        ).run()
    )
    grounding = [e for e in store.events if e.kind == "grounding"]
    assert grounding
    assert grounding[0].payload["ungrounded"][0]["cited"] == ["made.up-unit"]


def test_llm_proposing_a_contraindicated_drug_is_overruled_by_the_gate(retriever: Any) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["diagnosis"]["transplant_history"] = "liver"
    llm = ScriptedLLM(
        llm_answers(
            propose={
                "modality": "systemic",
                "description": "Pembrolizumab monotherapy",
                "agents": ["pembrolizumab"],
                "evidence": [],
            }
        )
    )
    plan = run_coroutine(
        lambda: deliberation(case, retriever=retriever, provider=LLMProvider(llm)).run()
    )
    assert all(
        "pembrolizumab" not in " ".join(c.agents).lower() for c in plan.recommendation.components
    )
    assert any("pembrolizumab" in r.option.lower() for r in plan.rejected_options)


def test_llm_turn_that_fails_falls_back_to_the_guideline_engine_and_says_so(
    retriever: Any,
) -> None:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-01.json")
    llm = ScriptedLLM(llm_answers(invalid_roles=("treatment",)))
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=LLMProvider(llm)
        ).run()
    )
    messages = [e for e in store.events if e.kind == "message" and e.role == "treatment"]
    assert "guideline engine answered" in messages[0].payload["fallback"]
    assert (
        "osimertinib"
        in " ".join(a for c in plan.recommendation.components for a in c.agents).lower()
    )


class _Budgeted(ScriptedLLM):
    """A scripted LLM whose consultation has ``left`` tokens of its budget left."""

    def __init__(self, answer: Any, left: int) -> None:
        super().__init__(answer)
        self.left = left

    def budget_left(self) -> int:
        return self.left


@pytest.mark.parametrize(
    ("choice", "rounds", "decision"), [("stop", 1, "stopped"), ("continue", 2, "continued")]
)
def test_a_round_the_budget_will_not_cover_is_known_before_it_starts(
    retriever: Any, choice: str, rounds: int, decision: str
) -> None:
    # given a board that wants a second round and a budget left far smaller than a round costs
    case, _ = load_case(PUBLIC_CASES / "pub-lung-01.json")
    llm = _Budgeted(llm_answers(disagree_rounds=1), left=20)
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            case,
            retriever=retriever,
            store=store,
            provider=LLMProvider(llm),
            config=EngineConfig(budget_short=choice),
        ).run()
    )
    # then round 1's end says so, with the estimate (round 1's tokens) and what is left, and
    # the clinician's choice decides whether round 2 runs
    first = next(e.payload for e in store.events if e.kind == "consensus")
    round_one = sum(
        (e.payload.get("usage") or {}).get("prompt_tokens", 0)
        + (e.payload.get("usage") or {}).get("completion_tokens", 0)
        for e in store.events
        if e.round == 1 and e.kind in ("message", "critique", "draft", "vote")
    )
    assert first["budget"] == {"round": 2, "estimate": round_one, "left": 20, "decision": decision}
    assert plan.rounds == rounds
    assert "token budget" in first["reason"]


def test_engine_config_refuses_an_unknown_budget_choice() -> None:
    with pytest.raises(ValueError, match="budget_short"):
        EngineConfig(budget_short="maybe")
