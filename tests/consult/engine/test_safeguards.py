"""The knowledge base's safety rules inside an LLM deliberation: they object when an LLM seat
agrees to a contraindicated drug, Treatment must answer them and the advice of votes in the
next round, and a plan with no safe proposal falls back to the knowledge base's next option."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from consult.engine.aio import run_coroutine
from consult.engine.protocols import MemoryStore
from consult.engine.providers import LLMProvider
from consult.engine.safeguards import FALLBACK_NOTE
from consult.engine.schemas import CrossReview, RoleReport, Synthesis, Vote
from tests.consult.engine.support import (
    BundleRetriever,
    ScriptedLLM,
    deliberation,
    load_case,
)
from tests.paths import PUBLIC_CASES

ADVICE = "Revise: state the intended duration of maintenance therapy."


class Recording(ScriptedLLM):
    """A scripted LLM that keeps what each Treatment turn was sent."""

    def __init__(self, answer: Any) -> None:
        super().__init__(answer)
        self.treatment: list[dict[str, Any]] = []


def _board(propose: dict[str, Any], *, vote_advice: str = "") -> Recording:
    """Every seat agrees; Treatment proposes ``propose``; in round 1 Safety objects in its
    review and votes for a revision with ``vote_advice`` (when given): a member who objected
    is polled on the draft."""
    llm: Recording

    def answer(role: str, schema: type[BaseModel], user: dict[str, Any]) -> Any:
        if schema is RoleReport:
            if role == "treatment":
                llm.treatment.append(user)
            return {
                "conclusion": f"{role} view",
                "confidence": 0.8,
                "intent": "palliative",
                "components": [propose] if role == "treatment" else [],
            }
        if schema is CrossReview:
            if vote_advice and role == "safety" and user["round"] == 1:
                return {"agree": False, "critique": "The dose needs a second look."}
            return {"agree": True, "critique": "No objection."}
        if schema is Synthesis:
            return {
                "residual": {
                    "consistency": "c",
                    "conflict": "none",
                    "independence": "i",
                    "integration": "plan",
                },
                "draft": {"summary": "As proposed", "intent": "palliative", "components": []},
                "confidence": 0.8,
            }
        if schema is Vote:
            revise = bool(vote_advice) and role == "safety" and user["round"] == 1
            return {"agree": not revise, "advice": vote_advice if revise else ""}
        raise AssertionError(schema)

    llm = Recording(answer)
    return llm


def _lung(**diagnosis: Any) -> dict[str, Any]:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["diagnosis"].update(diagnosis)
    return case


KEYTRUDA = {
    "modality": "systemic",
    "description": "Keytruda 200 mg every 3 weeks",
    "agents": ["Keytruda"],
    "evidence": ["lung.tx.pdl1-high-immunotherapy"],
}


def test_rules_object_when_the_llm_safety_seat_agrees_to_a_contraindicated_drug(
    retriever: BundleRetriever,
) -> None:
    # given a kidney-transplant recipient, Treatment proposing Keytruda and an LLM Safety seat
    # that agrees with everything
    llm = _board(KEYTRUDA)
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            _lung(transplant_history="kidney"),
            retriever=retriever,
            store=store,
            provider=LLMProvider(llm),
        ).run()
    )
    # then Safety's critique of Treatment objects all the same, with the rule and its reason
    [critique] = [
        e.payload["review"]
        for e in store.events
        if e.kind == "critique" and e.round == 1 and e.payload["reviewer"] == "safety"
    ]
    assert not critique["agree"]
    assert critique["concerns"] == ["Keytruda 200 mg every 3 weeks"]
    assert "common.ci.ici-solid-organ-transplant" in critique["critique"]
    # and the round does not end there: Treatment receives the objection in round 2
    assert plan.rounds >= 2
    received = llm.treatment[1]["critiques_received"]
    assert any("safety" in c["from"] for c in received["objections"])
    # and the plan does not give it
    listed = [" ".join(c.agents).casefold() for c in plan.recommendation.components]
    assert not [agents for agents in listed if "keytruda" in agents]


def test_vote_advice_reaches_the_next_treatment_turn(retriever: BundleRetriever) -> None:
    # given a board whose Safety seat votes for a revision with advice in round 1
    llm = _board(
        {
            "modality": "systemic",
            "description": "Pembrolizumab 200 mg every 3 weeks",
            "agents": ["pembrolizumab"],
            "evidence": ["lung.tx.pdl1-high-immunotherapy"],
        },
        vote_advice=ADVICE,
    )
    plan = run_coroutine(
        lambda: deliberation(_lung(), retriever=retriever, provider=LLMProvider(llm)).run()
    )
    # then Treatment's round-2 turn carries the advice, from Safety
    assert plan.rounds == 2
    assert ADVICE not in str(llm.treatment[0].get("critiques_received", []))
    received = llm.treatment[1]["critiques_received"]
    assert ADVICE in [c["critique"] for c in received["objections"] if "safety" in c["from"]]


def test_a_board_that_proposes_only_forbidden_drugs_gets_the_knowledge_bases_next_option(
    retriever: BundleRetriever,
) -> None:
    # given a kidney-transplant recipient and an LLM Treatment that only ever proposes Keytruda
    llm = _board(KEYTRUDA)
    plan = run_coroutine(
        lambda: deliberation(
            _lung(transplant_history="kidney"), retriever=retriever, provider=LLMProvider(llm)
        ).run()
    )
    # then the plan does not abstain: the knowledge base's next safe option leads, saying why
    assert not plan.abstain
    option = next(
        c for c in plan.recommendation.components if c.role == "primary" and not c.adjunct
    )
    assert "carboplatin" in option.agents
    assert option.rationale[0] == FALLBACK_NOTE
    assert any("knowledge base" in c.resolution for c in plan.conflicts)
    assert "Keytruda 200 mg every 3 weeks" in {r.option for r in plan.rejected_options}
