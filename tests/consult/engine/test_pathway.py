"""One recommended pathway: ranking, hard safety, demotion, declined options, adjuncts and
dose-adjusted regimens, in the arrangement, the gate and whole deliberations of both engines."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from consult.engine.aio import run_coroutine
from consult.engine.consensus import weighted_consensus
from consult.engine.gate import safety_gate
from consult.engine.pathway import arrange, modalities_done
from consult.engine.protocols import MemoryStore
from consult.engine.providers import LLMProvider
from consult.engine.schemas import (
    CrossReview,
    DraftPlan,
    ProposedComponent,
    ResidualContext,
    RoleReport,
    Synthesis,
    Vote,
)
from tests.consult.engine.support import (
    BundleRetriever,
    ScriptedLLM,
    deliberation,
    load_case,
    safety_rule,
)
from tests.paths import PUBLIC_CASES

CHECKPOINT_INHIBITORS = ("pembrolizumab", "nivolumab", "atezolizumab", "cemiplimab", "ipilimumab")


def _option(description: str, *agents: str, **fields: Any) -> ProposedComponent:
    fields.setdefault("modality", "systemic")
    return ProposedComponent(description=description, agents=list(agents), **fields)


def _roles(components: list[Any]) -> list[tuple[str, str]]:
    return [(c.role, c.description) for c in components]


# --- the arrangement ----------------------------------------------------------------------------


def test_arrange_makes_the_preferred_option_the_pathway_and_ranks_the_rest() -> None:
    # given three options of different guideline preference and an antiviral adjunct
    arranged = arrange(
        [
            _option("Sorafenib", "sorafenib", preference=3, when="if immunotherapy is unsuitable"),
            _option("Atezolizumab-bevacizumab", "atezolizumab", "bevacizumab", preference=1),
            _option("Entecavir prophylaxis", "entecavir", modality="antiviral", adjunct=True),
            _option("Durvalumab-tremelimumab", "durvalumab", "tremelimumab", preference=1),
        ]
    )
    # then one pathway: the preferred option, then what goes with it; the rest ranked
    assert _roles(arranged.components) == [
        ("primary", "Atezolizumab-bevacizumab"),
        ("primary", "Entecavir prophylaxis"),
        ("alternative", "Durvalumab-tremelimumab"),
        ("alternative", "Sorafenib"),
    ]
    assert [c.rank for c in arranged.alternatives] == [1, 2]
    assert arranged.alternatives[1].when == "if immunotherapy is unsuitable"
    assert arranged.alternatives[0].when  # every alternative says when


def test_arrange_removed_option_leaves_pathway_and_alternatives_with_its_reason() -> None:
    arranged = arrange(
        [_option("Pembrolizumab", "pembrolizumab", preference=1), _option("Carboplatin", "x")],
        removed={"Pembrolizumab": "prior kidney transplant (common.ci.x)"},
    )
    assert _roles(arranged.components) == [("primary", "Carboplatin")]
    assert arranged.rejected[0].option == "Pembrolizumab"
    assert "kidney transplant" in arranged.rejected[0].reason


def test_arrange_demoted_option_waits_behind_the_next_safe_one() -> None:
    arranged = arrange(
        [_option("Atezo-bev", "bevacizumab", preference=1), _option("STRIDE", "durvalumab")],
        demoted={"Atezo-bev": "large varices are treated"},
    )
    assert _roles(arranged.components) == [("primary", "STRIDE"), ("alternative", "Atezo-bev")]
    assert arranged.alternatives[0].when == "once large varices are treated"


def test_arrange_keeps_a_demoted_option_first_when_nothing_safer_exists() -> None:
    arranged = arrange([_option("Atezo-bev", "bevacizumab")], demoted={"Atezo-bev": "x"})
    assert _roles(arranged.components) == [("primary", "Atezo-bev")]


def test_arrange_declined_option_is_ruled_out_with_the_patients_decision() -> None:
    arranged = arrange(
        [
            _option("Resection", modality="surgery", preference=1, declined_if=["surgery"]),
            _option("Ablation", modality="ablation", preference=2),
        ],
        declines=["surgery"],
    )
    # then it is not recommended to her in any role, and the reason says whose decision it was
    assert _roles(arranged.components) == [("primary", "Ablation")]
    assert [r.option for r in arranged.rejected] == ["Resection"]
    assert "declined by the patient (surgery)" in arranged.rejected[0].reason


def test_arrange_an_operation_on_record_is_not_offered_again_and_its_adjuvant_steps_lead() -> None:
    # given a patient referred after breast-conserving surgery: the operation, the adjuvant
    # endocrine therapy and radiotherapy that follow it, and nothing else applies
    facts = {"derived.breast_surgery_done": "breast_conserving"}
    arranged = arrange(
        [
            _option("Breast-conserving surgery with sentinel node biopsy", modality="surgery"),
            _option(
                "Letrozole 2.5 mg daily", "letrozole", adjunct=True, with_modalities=["surgery"]
            ),
            _option(
                "Whole-breast radiotherapy",
                modality="radiotherapy",
                adjunct=True,
                with_modalities=["surgery"],
            ),
        ],
        done=modalities_done(facts),
    )
    # then the pathway is the adjuvant therapy, and the operation is ruled out as done
    assert _roles(arranged.components) == [
        ("primary", "Letrozole 2.5 mg daily"),
        ("primary", "Whole-breast radiotherapy"),
    ]
    assert [(r.option, r.reason) for r in arranged.rejected] == [
        (
            "Breast-conserving surgery with sentinel node biopsy",
            "already done: breast-conserving surgery on record",
        )
    ]
    # and with no operation on record, the operation leads and the same steps follow it
    before = arrange(
        [
            _option("Breast-conserving surgery with sentinel node biopsy", modality="surgery"),
            _option(
                "Letrozole 2.5 mg daily", "letrozole", adjunct=True, with_modalities=["surgery"]
            ),
        ],
        done=modalities_done({"derived.breast_surgery_done": "none_recorded"}),
    )
    assert _roles(before.components) == [
        ("primary", "Breast-conserving surgery with sentinel node biopsy"),
        ("primary", "Letrozole 2.5 mg daily"),
    ]


def test_arrange_adjunct_follows_only_the_modalities_it_names() -> None:
    adjuvant = _option(
        "Adjuvant osimertinib", "osimertinib", adjunct=True, with_modalities=["surgery"]
    )
    after_surgery = arrange([_option("Lobectomy", modality="surgery"), adjuvant])
    after_sbrt = arrange([_option("SBRT", modality="radiotherapy"), adjuvant])
    assert _roles(after_surgery.components) == [
        ("primary", "Lobectomy"),
        ("primary", "Adjuvant osimertinib"),
    ]
    assert _roles(after_sbrt.components) == [("primary", "SBRT")]


# --- the gate ---------------------------------------------------------------------------------


def test_gate_critical_rule_removes_the_drug_and_promotes_the_next_safe_option() -> None:
    # given a draft that leads with an anthracycline and a patient whose LVEF rule fires
    draft = [
        _option("R-CHOP", "rituximab", "doxorubicin", preference=1),
        _option("R-CEOP", "rituximab", "etoposide", preference=3, role="alternative", rank=1),
    ]
    rule = safety_rule(
        "common.gate.anthracycline-lvef",
        agents=["doxorubicin"],
        severity="critical",
        effect="remove",
        advice="no anthracycline with LVEF below 50 %",
    )
    outcome = safety_gate(draft, [rule])
    # then the anthracycline regimen is nowhere in the plan and the safe one leads
    assert _roles(outcome.components) == [("primary", "R-CEOP")]
    assert outcome.components[0].order == 1
    assert outcome.rejected[0].option == "R-CHOP"
    assert outcome.gates[0].status == "fail"
    assert outcome.gates[0].applies_to == ["R-CHOP"]
    assert "safety takes precedence" in outcome.conflicts[0].resolution


def test_gate_demoting_condition_puts_the_option_behind_the_next_one() -> None:
    draft = [_option("Atezo-bev", "atezolizumab", "bevacizumab"), _option("STRIDE", "durvalumab")]
    rule = safety_rule(
        "hcc.ci.varices",
        agents=["bevacizumab"],
        severity="major",
        effect="condition",
        demotes=True,
        advice="untreated large varices are treated first.",
    )
    outcome = safety_gate(draft, [rule])
    assert _roles(outcome.components) == [("primary", "STRIDE"), ("alternative", "Atezo-bev")]
    assert outcome.components[1].when == "once untreated large varices are treated first"
    assert outcome.components[1].conditions  # the precondition stays visible


def test_gate_adjust_rule_adds_the_calculated_dose() -> None:
    draft = [_option("Carboplatin-paclitaxel", "carboplatin", "paclitaxel")]
    rule = safety_rule(
        "common.gate.carboplatin-calvert",
        agents=["carboplatin"],
        severity="minor",
        effect="adjust",
        advice="dose by Calvert",
        calculation="derived.carboplatin_auc5_mg",
    )
    outcome = safety_gate(draft, [rule], facts={"derived.carboplatin_auc5_mg": 450})
    assert outcome.components[0].dose_adjustments == [
        "dose by Calvert [carboplatin auc5 mg: 450] (common.gate.carboplatin-calvert)"
    ]


def test_gate_reports_pass_fail_and_unknown_for_the_items_of_the_plan_only() -> None:
    draft = [_option("Doxorubicin", "doxorubicin")]
    rules = [
        safety_rule(
            "a.pass",
            applies=False,
            agents=["doxorubicin"],
            severity="major",
            effect="remove",
        ),
        safety_rule(
            "b.unknown",
            applies=None,
            agents=["doxorubicin"],
            severity="major",
            effect="remove",
        ),
        safety_rule(
            "c.other-drug",
            agents=["bevacizumab"],
            severity="major",
            effect="remove",
        ),
    ]
    outcome = safety_gate(draft, rules)
    assert [(g.unit, g.status) for g in outcome.gates] == [
        ("a.pass", "pass"),
        ("b.unknown", "unknown"),
    ]
    assert outcome.needs_data == ["organ_function.lvef_pct (for b.unknown)"]


def test_reduced_dose_regimen_is_not_merged_into_the_full_dose_one() -> None:
    full = _option("R-CHOP", "rituximab", "cyclophosphamide", "doxorubicin")
    reduced = _option(
        "R-mini-CHOP",
        "rituximab",
        "cyclophosphamide",
        "doxorubicin",
        dose_adjustments=["CHOP at about half dose for age over 80"],
    )
    report = RoleReport(conclusion="", components=[full, reduced], confidence=0.9)
    consensus = weighted_consensus(
        reports={"treatment": report}, critiques=[], weights={"treatment": 1.0}, safety_evidence=[]
    )
    assert [c.description for c in consensus.components] == ["R-CHOP", "R-mini-CHOP"]
    assert consensus.components[1].dose_adjustments


# --- whole deliberations --------------------------------------------------------------------


def _lung_after_kidney_transplant() -> dict[str, Any]:
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["diagnosis"]["transplant_history"] = "kidney"
    return case


def _agents_in_plan(plan: Any) -> str:
    """Every plan item of any role (the summary may name a rejected option, with why)."""
    return json.dumps([c.model_dump() for c in plan.recommendation.components]).casefold()


def test_guideline_board_answers_safety_objection_in_the_next_round(
    retriever: BundleRetriever,
) -> None:
    # given a stage IV lung cancer (PD-L1 high) after a kidney transplant
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            _lung_after_kidney_transplant(), retriever=retriever, store=store
        ).run()
    )
    # then Safety objected in round 1, Treatment withdrew the checkpoint inhibitors in round 2
    # and said so, and the board agreed
    objections = [
        e.payload
        for e in store.events
        if e.kind == "critique"
        and e.round == 1
        and e.payload["reviewer"] == "safety"
        and not e.payload["review"]["agree"]
    ]
    assert objections
    answers = [
        e.payload["report"]["answers"]
        for e in store.events
        if e.kind == "message" and e.role == "treatment" and e.round == 2
    ]
    assert answers
    assert any("withdrew" in a["response"] for a in answers[0])
    assert plan.rounds == 2
    # and no checkpoint inhibitor is anywhere in the recommendation
    text = _agents_in_plan(plan)
    assert not [drug for drug in CHECKPOINT_INHIBITORS if drug in text]
    assert any("pembrolizumab" in r.option.casefold() for r in plan.rejected_options)


def _insisting_llm(forbidden: dict[str, Any]) -> ScriptedLLM:
    """An LLM that proposes the forbidden regimen as the pathway in every role, agrees with
    every review and vote, and writes it into the Coordinator's draft."""

    def answer(role: str, schema: type[BaseModel], user: dict[str, Any]) -> Any:
        if schema is RoleReport:
            return RoleReport(
                conclusion="Give the checkpoint inhibitor.",
                components=[ProposedComponent(**forbidden)],
                confidence=0.99,
            ).model_dump()
        if schema is CrossReview:
            return {"agree": True, "critique": "Looks right."}
        if schema is Vote:
            return {"agree": True, "advice": ""}
        if schema is Synthesis:
            return Synthesis(
                residual=ResidualContext(
                    consistency="all agree", conflict="none", independence="", integration=""
                ),
                draft=DraftPlan(
                    summary="Pembrolizumab.",
                    intent="palliative",
                    components=[ProposedComponent(**forbidden)],
                ),
                confidence=0.99,
            ).model_dump()
        raise AssertionError(schema)

    return ScriptedLLM(answer)


@pytest.mark.parametrize("agent", ["pembrolizumab", "nivolumab"])
def test_llm_that_insists_on_a_forbidden_drug_never_gets_it_into_the_plan(
    retriever: BundleRetriever, agent: str
) -> None:
    # given an LLM that proposes a checkpoint inhibitor in every role, after a kidney transplant
    forbidden = {
        "modality": "systemic",
        "description": f"{agent.title()} monotherapy",
        "agents": [agent],
        "evidence": ["lung.tx.pdl1-high-immunotherapy"],
        "role": "primary",
    }
    llm = _insisting_llm(forbidden)
    plan = run_coroutine(
        lambda: deliberation(
            _lung_after_kidney_transplant(), retriever=retriever, provider=LLMProvider(llm)
        ).run()
    )
    # then the drug is in no component of any role, and the plan says why it was ruled out
    assert agent not in _agents_in_plan(plan)
    assert any(agent in r.option.casefold() for r in plan.rejected_options)
    assert any(f.severity == "critical" for f in plan.safety.flags)


def test_arrange_declined_adjunct_leaves_the_pathway() -> None:
    # given a surgical pathway whose adjuvant chemotherapy the patient declines
    arranged = arrange(
        [
            _option("Surgery", modality="surgery"),
            _option(
                "Adjuvant docetaxel-cyclophosphamide",
                "docetaxel",
                adjunct=True,
                with_modalities=["surgery"],
                declined_if=["chemotherapy"],
            ),
        ],
        declines=["chemotherapy"],
    )
    # then the chemotherapy is in no component: it is ruled out as declined
    assert _roles(arranged.components) == [("primary", "Surgery")]
    assert [r.option for r in arranged.rejected] == ["Adjuvant docetaxel-cyclophosphamide"]
    assert "declined by the patient (chemotherapy)" in arranged.rejected[0].reason


def test_arrange_adjunct_follows_a_step_another_adjunct_brought_in() -> None:
    # given neoadjuvant therapy, surgery after it, and endocrine therapy after surgery
    neoadjuvant = _option("Neoadjuvant chemotherapy", "paclitaxel")
    surgery = _option(
        "Surgery after neoadjuvant", modality="surgery", adjunct=True, with_modalities=["systemic"]
    )
    endocrine = _option(
        "Adjuvant letrozole", "letrozole", adjunct=True, with_modalities=["surgery"]
    )
    arranged = arrange([neoadjuvant, endocrine, surgery])
    assert _roles(arranged.components) == [
        ("primary", "Neoadjuvant chemotherapy"),
        ("primary", "Surgery after neoadjuvant"),
        ("primary", "Adjuvant letrozole"),
    ]
    # and without surgery in the pathway (primary endocrine therapy), no adjuvant therapy
    primary_endocrine = _option("Primary letrozole", "letrozole", modality="systemic")
    alone = arrange(
        [
            primary_endocrine,
            _option("Adjuvant AI", "anastrozole", adjunct=True, with_modalities=["surgery"]),
        ]
    )
    assert _roles(alone.components) == [("primary", "Primary letrozole")]
