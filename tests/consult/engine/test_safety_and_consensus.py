"""The rules the consensus, the safety gate and the guideline engine's Safety member share,
merged plan items, staging citations, and what the final plan records."""

from __future__ import annotations

from typing import Any

from clinical.calculators import derive_all, staging_summary
from clinical.vocab import SAFETY_KINDS
from consult.engine import guideline
from consult.engine.aio import run_coroutine
from consult.engine.consensus import weighted_consensus
from consult.engine.context import RoleInput, VoteInput
from consult.engine.gate import safety_gate
from consult.engine.protocols import Evidence, MemoryStore
from consult.engine.providers import Answer, Delta, GuidelineProvider, LLMProvider
from consult.engine.schemas import CrossReview, DraftPlan, ProposedComponent, RoleReport
from tests.consult.engine.support import (
    BundleRetriever,
    ScriptedLLM,
    deliberation,
    evidence_unit,
    llm_answers,
    load_case,
    safety_rule,
)
from tests.paths import PUBLIC_CASES

NO_ADJUVANT = "hcc.ci.no-adjuvant-systemic"  # a minor "remove" rule: BCLC 0/A, no adjuvant TKI


def _safety_units(retriever: BundleRetriever, case: dict[str, Any]) -> list[Evidence]:
    return retriever.applicable(cancer_type=str(case["cancer_type"]), kinds=SAFETY_KINDS, case=case)


def _adjuvant_sorafenib(evidence: list[str]) -> ProposedComponent:
    return ProposedComponent(
        modality="systemic",
        description="Adjuvant sorafenib after resection",
        agents=["sorafenib"],
        evidence=evidence,
    )


# --- 1. one veto rule ------------------------------------------------------------------------


def test_minor_remove_rule_conditions_the_item_everywhere_and_safety_votes_agree(
    retriever: BundleRetriever,
) -> None:
    # given an early HCC (BCLC A), where adjuvant systemic therapy is a minor "remove" rule
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-01.json")
    units = _safety_units(retriever, case)
    rule = next(u for u in units if u.unit_id == NO_ADJUVANT)
    assert rule.applies is True
    assert rule.action["severity"] == "minor"
    item = _adjuvant_sorafenib(["hcc.tx.resection"])
    # the consensus keeps the item
    consensus = weighted_consensus(
        reports={"treatment": RoleReport(conclusion="", confidence=0.9, components=[item])},
        critiques=[],
        weights={"treatment": 1.0},
        safety_evidence=units,
    )
    assert [c.description for c in consensus.components] == [item.description]
    # the gate keeps it on the rule's condition
    outcome = safety_gate([item], units)
    assert [c.description for c in outcome.components] == [item.description]
    assert any(NO_ADJUVANT in condition for condition in outcome.components[0].conditions)
    # and the guideline engine's Safety member agrees with a draft that contains it
    vote = guideline.vote(
        VoteInput(
            role="safety",
            round=1,
            case=case,
            report=RoleReport(conclusion="", confidence=0.9),
            draft=DraftPlan(summary="", intent="curative", components=[item]),
            evidence=units,
        )
    )
    assert vote.agree, vote.advice


def test_major_remove_rule_still_makes_safety_vote_remove() -> None:
    rule = safety_rule(
        "x.ci.major", agents=["sorafenib"], severity="major", effect="remove", advice="Do not give."
    )
    vote = guideline.vote(
        VoteInput(
            role="safety",
            round=1,
            case={},
            report=RoleReport(conclusion="", confidence=0.9),
            draft=DraftPlan(summary="", intent="curative", components=[_adjuvant_sorafenib([])]),
            evidence=[rule],
        )
    )
    assert not vote.agree
    assert "Adjuvant sorafenib" in vote.advice


class _ProposesAdjuvantSorafenib(GuidelineProvider):
    """The guideline engine, with Treatment also proposing adjuvant sorafenib."""

    async def report(self, inp: RoleInput, on_delta: Delta = None) -> Answer:
        answer = await super().report(inp, on_delta)
        if inp.role == "treatment":
            report: RoleReport = answer.value
            cited = report.components[0].evidence
            report.components.append(_adjuvant_sorafenib(list(cited)))
        return answer


def test_board_agrees_in_the_first_round_when_only_a_minor_remove_rule_applies(
    retriever: BundleRetriever,
) -> None:
    # given an early HCC whose Treatment member also proposes adjuvant sorafenib (a minor
    # "remove" rule: kept on condition, not vetoed)
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-01.json")
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=_ProposesAdjuvantSorafenib()
        ).run()
    )
    # then the board agrees in round 1 instead of running to the round limit
    consensus = [e.payload for e in store.events if e.kind == "consensus"]
    assert [c["stop"] for c in consensus] == [True]
    assert plan.rounds == 1
    # and the item, which cites only the resection unit (no unit backs adjuvant sorafenib
    # at BCLC A), is not kept on the tie of its half-weight support: it is rejected, saying so
    assert all("sorafenib" not in c.agents for c in plan.recommendation.components)
    [rejected] = [r for r in plan.rejected_options if "sorafenib" in r.option]
    assert "citing no knowledge unit" in rejected.reason


# --- 2. merged plan items --------------------------------------------------------------------


def _atezo_bev_reports() -> dict[str, RoleReport]:
    return {
        "hepatology": RoleReport(
            conclusion="",
            confidence=0.8,
            components=[
                ProposedComponent(
                    modality="systemic",
                    description="Atezo-bev (IMbrave150)",
                    agents=["Atezolizumab", "bevacizumab"],
                    evidence=["hcc.tx.a"],
                )
            ],
        ),
        "treatment": RoleReport(
            conclusion="",
            confidence=0.8,
            components=[
                ProposedComponent(
                    modality="systemic",
                    description="Atezolizumab + bevacizumab",
                    agents=["atezolizumab", "Bevacizumab"],
                    evidence=["hcc.tx.b"],
                )
            ],
        ),
        "safety": RoleReport(conclusion="", confidence=0.8),
    }


WEIGHTS = {"hepatology": 0.5, "treatment": 1.0, "safety": 2.0}


def test_objection_to_a_merged_wording_counts_against_the_item() -> None:
    # given hepatology and treatment proposing the same drugs in different words, and
    # Safety (weight 2) objecting to Treatment's wording
    objection = CrossReview(
        agree=False, critique="Varices", concerns=["Atezolizumab + bevacizumab"]
    )
    consensus = weighted_consensus(
        reports=_atezo_bev_reports(),
        critiques=[("safety", "treatment", objection)],
        weights=WEIGHTS,
        safety_evidence=[],
    )
    # then the one plan item carries both supporters and the objection:
    # (0.5·0.8 + 1·0.8 - 2·0.8) / (0.5·0.8 + 1·0.8 + 2·0.8) = -0.143
    assert consensus.support == {"Atezo-bev (IMbrave150)": -0.143}
    assert consensus.components == []
    assert [r.option for r in consensus.rejected] == ["Atezo-bev (IMbrave150)"]


def test_merged_member_supports_the_item_with_its_own_grounding() -> None:
    # given the same two wordings, Treatment's citing no retrieved unit
    consensus = weighted_consensus(
        reports=_atezo_bev_reports(),
        critiques=[],
        weights=WEIGHTS,
        safety_evidence=[],
        ungrounded={"treatment": {"Atezolizumab + bevacizumab"}},
    )
    # then Treatment counts as a supporter at half weight: (0.4 + 0.5·0.8) / (0.4 + 0.8)
    assert consensus.support == {"Atezo-bev (IMbrave150)": 0.667}
    [item] = consensus.components
    assert item.description == "Atezo-bev (IMbrave150)"
    assert item.evidence == ["hcc.tx.a", "hcc.tx.b"]


# --- 3. staging citations --------------------------------------------------------------------


def test_staging_claim_cites_only_units_that_test_that_score(retriever: BundleRetriever) -> None:
    # given a DLBCL case with both IPI and CNS-IPI derived
    case, _ = load_case(PUBLIC_CASES / "pub-lymph-01.json")
    staging = staging_summary(derive_all(case))
    assert staging["ipi"] is not None
    assert staging["cns_ipi"] is not None
    evidence = retriever.applicable(cancer_type="lymphoma", kinds=("staging_rule",), case=case)
    report = guideline.diagnostic(
        RoleInput(
            role="diagnostic", round=1, case=case, facts={}, staging=staging, evidence=evidence
        )
    )
    claims = {c.text.split(":")[0]: c.evidence for c in report.claims}
    # then the IPI claim does not cite the CNS-IPI unit (whose fact merely contains "ipi")
    assert claims["IPI"] == ["lymph.staging.ipi"]
    assert claims["CNS-IPI"] == ["lymph.staging.cns-ipi"]


def test_staging_citation_reads_any_conditions_and_ignores_exception_words() -> None:
    def staging_unit(unit_id: str, context: dict[str, Any]) -> Evidence:
        return evidence_unit(
            unit_id,
            kind="staging_rule",
            cancer_type="lymphoma",
            content={"context": context, "action": {"type": "staging", "statement": unit_id}},
        )

    nested = staging_unit(
        "t.nested", {"all": [], "any": [{"fact": "derived.ipi", "op": "present", "value": None}]}
    )
    words = staging_unit(
        "t.words", {"all": [], "any": [], "exceptions": ["derived.ipi not used in children"]}
    )
    report = guideline.diagnostic(
        RoleInput(
            role="diagnostic",
            round=1,
            case={"cancer_type": "lymphoma"},
            facts={},
            staging={"ann_arbor_stage": None, "ipi": 3, "cns_ipi": None},
            evidence=[nested, words],
        )
    )
    ipi = next(c for c in report.claims if c.text.startswith("IPI:"))
    assert ipi.evidence == ["t.nested"]


# --- 4. flags that name drugs ----------------------------------------------------------------


def test_flag_naming_a_drug_absent_from_the_plan_is_not_raised(
    retriever: BundleRetriever,
) -> None:
    # given a patient on warfarin, where the sorafenib-warfarin flag applies
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    case["patient"]["medications"] = ["warfarin"]
    units = _safety_units(retriever, case)
    warfarin = "hcc.int.sorafenib-warfarin"
    assert any(u.unit_id == warfarin and u.applies is True for u in units)
    lenvatinib = ProposedComponent(
        modality="systemic", description="Lenvatinib 12 mg daily", agents=["lenvatinib"]
    )
    sorafenib = ProposedComponent(
        modality="systemic", description="Sorafenib 400 mg twice daily", agents=["sorafenib"]
    )
    # when the plan has no sorafenib, the flag is neither raised nor reported as a gate
    outcome = safety_gate([lenvatinib], units)
    assert all(warfarin not in f.evidence for f in outcome.flags)
    assert all(g.unit != warfarin for g in outcome.gates)
    assert warfarin not in outcome.cited
    # when it has, the flag is raised
    outcome = safety_gate([sorafenib], units)
    assert any(warfarin in f.evidence for f in outcome.flags)


def test_flag_naming_no_drug_or_modality_concerns_any_plan() -> None:
    general = safety_rule(
        "x.flag.general", severity="minor", effect="flag", advice="Check hepatitis B"
    )
    unknown = safety_rule(
        "x.flag.needs", applies=None, severity="minor", effect="flag", advice="Ask"
    )
    outcome = safety_gate(
        [ProposedComponent(modality="surgery", description="Resection")], [general, unknown]
    )
    assert [f.evidence for f in outcome.flags] == [["x.flag.general"]]
    assert {g.unit: g.status for g in outcome.gates} == {
        "x.flag.general": "pass",
        "x.flag.needs": "unknown",
    }


# --- 5, 6. the final plan --------------------------------------------------------------------


def test_plan_needs_data_lists_patient_data_not_missing_plan_sections(
    retriever: BundleRetriever,
) -> None:
    # given a case whose plan lacks monitoring phases (watchful waiting)
    case, _ = load_case(PUBLIC_CASES / "pub-lymph-02.json")
    store = MemoryStore()
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever, store=store).run())
    # the final review names the missing phases
    [review] = [e.payload for e in store.events if e.kind == "review"]
    assert any(m.startswith("monitoring phase") for m in review["missing"])
    # but the plan's data request is about the patient only
    assert not any(n.startswith("monitoring phase") for n in plan.needs_data)
    assert not any(n.startswith("a treatment recommendation") for n in plan.needs_data)


def test_a_conflict_standing_for_several_rounds_is_recorded_once(
    retriever: BundleRetriever,
) -> None:
    # given an LLM board that proposes a vetoed drug and disagrees in round 1
    case, _ = load_case(PUBLIC_CASES / "pub-lung-02.json")
    case["diagnosis"]["transplant_history"] = "liver"
    llm = ScriptedLLM(
        llm_answers(
            disagree_rounds=1,
            propose={
                "modality": "systemic",
                "description": "Pembrolizumab monotherapy",
                "agents": ["pembrolizumab"],
                "evidence": [],
            },
        )
    )
    store = MemoryStore()
    plan = run_coroutine(
        lambda: deliberation(
            case, retriever=retriever, store=store, provider=LLMProvider(llm)
        ).run()
    )
    # the LLM insists on the vetoed drug, so the standing risk conflict (at or above the
    # conflict threshold) earns a round each time, up to the round limit
    assert plan.rounds == 3
    vetoed = [
        e.payload
        for e in store.events
        if e.kind == "conflict"
        and e.role == "coordinator"
        and "safety first" in e.payload["resolution"]
    ]
    assert len(vetoed) == 3
    assert vetoed[0] == vetoed[1] == vetoed[2]
    # and the plan lists it once, in order
    records = [c.model_dump_json() for c in plan.conflicts]
    assert len(records) == len(set(records))
    assert sum(1 for c in plan.conflicts if c.model_dump() == vetoed[0]) == 1


# --- interchangeable agents ----------------------------------------------------------------------
def _salvage(*interchangeable: list[str]) -> ProposedComponent:
    return ProposedComponent(
        modality="systemic",
        description="Salvage R-ICE, R-DHAP or R-GDP, then autologous transplant",
        agents=["rituximab", "ifosfamide", "carboplatin", "cytarabine", "cisplatin"],
        interchangeable=[list(g) for g in interchangeable],
    )


def test_a_veto_of_an_agent_with_an_interchangeable_partner_withdraws_only_that_agent() -> None:
    # given a salvage regimen in which cisplatin or carboplatin will do, and CrCl < 60
    renal = safety_rule(
        "x.ci.cisplatin",
        agents=["cisplatin"],
        severity="major",
        effect="remove",
        advice="no cisplatin; use carboplatin",
    )
    outcome = safety_gate([_salvage(["carboplatin", "cisplatin"])], [renal])
    # then the regimen stays in the pathway without cisplatin, and says so
    [item] = outcome.components
    assert item.role == "primary"
    assert "cisplatin" not in item.agents
    assert "carboplatin" in item.agents
    assert any(d.startswith("Without cisplatin: no cisplatin") for d in item.dose_adjustments)
    assert outcome.rejected == []
    assert {g.unit: g.status for g in outcome.gates} == {"x.ci.cisplatin": "pass"}
    # and neither the Safety member's review nor the consensus removes it either
    remove, _, _ = guideline.restrictions([renal], [_salvage(["carboplatin", "cisplatin"])])
    assert remove == {}


def test_a_veto_removes_the_item_when_no_interchangeable_partner_is_left() -> None:
    renal = safety_rule(
        "x.ci.cisplatin",
        agents=["cisplatin"],
        severity="major",
        effect="remove",
        advice="Do not give.",
    )
    both = safety_rule(
        "x.ci.platinum",
        agents=["carboplatin"],
        severity="critical",
        effect="remove",
        advice="platinum allergy",
    )
    # without a declared partner the whole regimen goes, as before
    assert safety_gate([_salvage()], [renal]).components == []
    # with one, a second rule against the partner takes the regimen out after all
    outcome = safety_gate([_salvage(["carboplatin", "cisplatin"])], [renal, both])
    assert outcome.components == []
    assert [r.option for r in outcome.rejected] == [_salvage().description]
