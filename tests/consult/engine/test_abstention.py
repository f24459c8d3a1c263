"""Abstention with content: a case outside the knowledge base gets a plan that says so first,
gives the immediate safe steps from knowledge units, and does not present the nearest
standard pathway as the recommendation - with the guideline engine and with an LLM board."""

from __future__ import annotations

from typing import Any

from clinical.plan import PlanComponent, plan_parse
from consult.engine.abstention import abstain
from consult.engine.aio import run_coroutine
from consult.engine.providers import LLMProvider
from tests.consult.engine.support import (
    ScriptedLLM,
    deliberation,
    evidence_unit,
    llm_answers,
    load_case,
)
from tests.paths import REPO

CASES = REPO / "tests" / "cases"


def _cord_compression() -> dict[str, Any]:
    case, _ = load_case(CASES / "lung-05.json")
    case["notes"] = (
        "Non-squamous histology (TTF-1 positive). New thoracic back pain and leg weakness for "
        "two days; MRI shows metastatic spinal cord compression at T6."
    )
    return case


def test_abstention_emergency_plan_says_so_first_and_gives_immediate_steps(
    retriever: Any,
) -> None:
    # given a metastatic lung cancer presenting with cord compression
    plan = run_coroutine(lambda: deliberation(_cord_compression(), retriever=retriever).run())
    recommendation = plan.recommendation
    # then the plan abstains, and its answer begins with what was recognised
    assert recommendation.intent == "abstain"
    assert plan.abstain
    assert recommendation.summary.startswith(
        "Outside the knowledge base: metastatic spinal cord compression"
    )
    abstention = recommendation.abstention
    assert abstention is not None
    assert abstention.emergency
    situation = abstention.situations[0]
    assert situation.id == "spinal_cord_compression"
    assert "spinal cord compression at T6" in situation.phrase
    # the pathway is the immediate steps, each from a unit with its source in the evidence
    primary = [c for c in recommendation.components if c.role == "primary"]
    text = " ".join(c.description for c in primary).lower()
    assert "dexamethasone" in text
    assert "mri" in text
    assert "radiotherapy" in text
    cited = {e.unit_id for e in plan.evidence}
    assert all(set(c.evidence) <= cited and c.evidence for c in primary)
    assert abstention.specialists
    assert abstention.board_decides
    # the standard chemo-immunotherapy is named as not recommended, never as the pathway
    assert abstention.nearest_pathway
    assert "carboplatin" not in text
    assert "carboplatin" in " ".join(abstention.nearest_pathway).lower()
    # and the plan is a valid mdtboard.plan/1 document
    document = plan.model_dump(mode="json")
    assert plan_parse(document).plan is not None


def test_abstention_llm_board_is_held_to_it_too(retriever: Any) -> None:
    # given an LLM board whose treatment seat proposes the standard chemotherapy
    llm = ScriptedLLM(
        llm_answers(
            propose={
                "modality": "systemic",
                "description": "Carboplatin and paclitaxel, four cycles",
                "agents": ["carboplatin", "paclitaxel"],
                "evidence": [],
            }
        )
    )
    plan = run_coroutine(
        lambda: deliberation(
            _cord_compression(), retriever=retriever, provider=LLMProvider(llm)
        ).run()
    )
    # then the plan still abstains: the chemotherapy is not the recommendation
    assert plan.recommendation.intent == "abstain"
    primary = " ".join(
        c.description for c in plan.recommendation.components if c.role == "primary"
    ).lower()
    assert "carboplatin" not in primary
    assert "dexamethasone" in primary


def test_abstention_covered_case_does_not_abstain(retriever: Any) -> None:
    case, _ = load_case(CASES / "lung-05.json")
    case["notes"] = "Non-squamous histology. MRI spine: vertebral metastases, no cord compression."
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    assert plan.recommendation.intent != "abstain"
    assert plan.recommendation.abstention is None


def _step(unit_id: str, situation: str, **action: Any) -> Any:
    return evidence_unit(
        unit_id,
        kind="therapy_step",
        content={
            "context": {
                "all": [{"fact": "derived.situations", "op": "contains_any", "value": [situation]}]
            },
            "action": {
                "type": "therapy",
                "modality": "supportive",
                "intent": "supportive",
                "role": "adjunct",
                "agents": [],
                **action,
            },
        },
    )


def test_abstention_adds_a_step_no_member_proposed_but_never_one_the_gate_removed() -> None:
    # given a hypercalcaemia and three immediate-step units, none in the members' plan
    case = {
        "cancer_type": "hcc",
        "diagnosis": {"histology": "hepatocellular carcinoma"},
        "notes": "Corrected calcium 3.5 mmol/L, confused: hypercalcaemia of malignancy.",
    }
    fluids = _step("s.fluids", "hypercalcaemia", description="IV saline", preference=1)
    drug = _step(
        "s.drug",
        "hypercalcaemia",
        description="Zoledronic acid IV",
        agents=["zoledronic acid"],
        preference=2,
    )
    removed = _step("s.removed", "hypercalcaemia", description="Removed step", preference=3)
    standard = PlanComponent(
        modality="ablation", description="Thermal ablation", evidence=["hcc.tx.ablation"]
    )
    # when the plan is assembled
    outcome = abstain(
        case=case,
        units=[fluids, drug, removed],
        components=[standard],
        removed={"Removed step"},
    )
    # then the steps lead in their order, a drug not gated says so, the removed one stays out
    assert outcome is not None
    assert [c.description for c in outcome.components] == ["IV saline", "Zoledronic acid IV"]
    assert outcome.components[1].conditions
    assert "safety gate" in outcome.components[1].conditions[0]
    assert outcome.abstention.nearest_pathway == ["Thermal ablation"]
    assert outcome.summary.startswith("Outside the knowledge base: hypercalcaemia")
