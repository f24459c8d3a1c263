"""Issue 23, supportive care: concurrent steps read "alongside" in the summary, supportive care
a regimen already includes is not given twice, and drug-specific monitoring belongs only to a
plan whose pathway gives the drug."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.template.loader import render_to_string

from clinical.plan import Plan
from clinical.vocab import Phase, ResponseAnchor
from consult.engine.drug_monitoring import for_pathway
from consult.engine.guideline import plan_summary
from consult.engine.pathway_pass import SUPPORTIVE_ALREADY_INCLUDED, pathway_pass
from consult.engine.schemas import MonitoringProposal, ProposedComponent
from consult.plan_view import plan_view
from tests.consult.engine.offline_plans import offline_plan
from tests.paths import REPO


def _plan(*items: dict[str, Any], summary: str = "s") -> Plan:
    components = [
        {"agents": [], "when": "", "role": "primary", "order": i, **item}
        for i, item in enumerate(items, start=1)
    ]
    return Plan.model_validate(
        {"recommendation": {"summary": summary, "intent": "curative", "components": components}}
    )


def _summary(*items: dict[str, Any]) -> str:
    return plan_summary(
        question="",
        case={"cancer_type": "lymphoma"},
        staging={},
        components=[ProposedComponent.model_validate({"role": "primary", **i}) for i in items],
        rejected=[],
        intent="palliative",
    )


def test_supportive_care_given_with_a_treatment_reads_alongside_not_then() -> None:
    # given a regimen, the beta-blocker that goes with it, then a later operation
    text = _summary(
        {"modality": "systemic", "description": "Durvalumab every 4 weeks"},
        {
            "modality": "supportive",
            "description": "Variceal-bleeding prophylaxis with carvedilol",
            "adjunct": True,
        },
        {"modality": "radiotherapy", "description": "After 4 cycles: palliative radiotherapy"},
    )
    # then the concurrent step is joined by "alongside", the sequential one by "then"
    assert (
        "Durvalumab every 4 weeks; alongside: Variceal-bleeding prophylaxis with carvedilol; "
        "then After 4 cycles: palliative radiotherapy" in text
    )


def test_prophylaxis_before_the_first_cycle_precedes_the_regimen() -> None:
    text = _summary(
        {
            "modality": "supportive",
            "description": "Before the first cycle: hydration and allopurinol",
            "adjunct": True,
        },
        {"modality": "systemic", "description": "R-CHOP-21 x6"},
    )
    assert "Before the first cycle: hydration and allopurinol; then R-CHOP-21 x6" in text


def test_a_repaired_order_is_the_order_the_summary_gives() -> None:
    # given a summary written with HBV prophylaxis after R-CHOP
    summary = "Recommended pathway (curative): R-CHOP x6; then Entecavir before the first cycle."
    plan = _plan(
        {"modality": "systemic", "description": "R-CHOP x6"},
        {
            "modality": "antiviral",
            "description": "Entecavir before the first cycle",
            "adjunct": True,
        },
        summary=summary,
    )
    # when the pathway pass moves the prophylaxis first
    repaired = pathway_pass(plan, {})
    # then the summary says so too
    assert repaired.recommendation.summary == (
        "Recommended pathway (curative): Entecavir before the first cycle; then R-CHOP x6."
    )


def test_a_steroid_prephase_the_regimen_includes_is_not_a_second_step() -> None:
    plan = _plan(
        {"modality": "systemic", "description": "R-mini-CHOP x6, after a steroid pre-phase"},
        {
            "modality": "supportive",
            "description": "Before the first cycle: steroid prephase, prednisone 100 mg daily",
            "adjunct": True,
        },
    )
    repaired = pathway_pass(plan, {})
    assert [c.description for c in repaired.recommendation.components] == [
        "R-mini-CHOP x6, after a steroid pre-phase"
    ]
    assert [n.property for n in repaired.coherence] == [SUPPORTIVE_ALREADY_INCLUDED]


def test_a_prephase_before_full_dose_r_chop_stays() -> None:
    plan = _plan(
        {
            "modality": "supportive",
            "description": "Before the first cycle: steroid prephase, prednisone 100 mg daily",
            "adjunct": True,
        },
        {"modality": "systemic", "description": "R-CHOP-21 x6, full dose"},
    )
    repaired = pathway_pass(plan, {})
    assert len(repaired.recommendation.components) == 2
    assert repaired.recommendation.components[0].timing == "before"


def _unit(*agents: str) -> Any:
    return SimpleNamespace(action={"type": "surveillance", "agents": list(agents)})


def _proposal(unit_id: str) -> MonitoringProposal:
    return MonitoringProposal(
        phase=Phase.ACUTE, what="x", interval="y", anchor=ResponseAnchor.OTHER, evidence=[unit_id]
    )


def _step(description: str, *agents: str, modality: str = "systemic", role: str = "primary") -> Any:
    return SimpleNamespace(
        role=role,
        modality=modality,
        agents=list(agents),
        description=description,
        dose_adjustments=[],
    )


def test_drug_specific_monitoring_follows_the_drugs_of_the_pathway() -> None:
    units = {
        "cdk": _unit("palbociclib"),
        "ici": _unit("pembrolizumab", "durvalumab"),
        "any": _unit(),
    }
    proposals = [_proposal("cdk"), _proposal("ici"), _proposal("any")]
    # a pathway giving letrozole with palbociclib, pembrolizumab only as an alternative
    steps = [
        _step("Letrozole plus palbociclib 125 mg days 1-21", "letrozole", "palbociclib"),
        _step("Pembrolizumab 200 mg", "pembrolizumab", role="alternative"),
    ]
    kept = [p.evidence[0] for p in for_pathway(proposals, steps, units)]
    assert kept == ["cdk", "any"]


def test_a_class_named_by_a_surveillance_step_gives_no_drug() -> None:
    units = {"lorlatinib": _unit("lorlatinib")}
    steps = [
        _step("Alectinib 600 mg twice daily", "alectinib"),
        _step(
            "Brain MRI every 2-3 months while a CNS-active ALK inhibitor is given",
            modality="surveillance",
        ),
    ]
    assert for_pathway([_proposal("lorlatinib")], steps, units) == []


def test_a_regimen_naming_a_drug_class_keeps_that_class_monitoring() -> None:
    units = {"ribociclib": _unit("ribociclib")}
    steps = [_step("Aromatase inhibitor plus a CDK4/6 inhibitor (ribociclib or palbociclib)")]
    assert len(for_pathway([_proposal("ribociclib")], steps, units)) == 1


def test_the_plan_of_a_case_reads_concurrent_and_prior_steps_as_a_board_would() -> None:
    # given an HCC plan with HBV prophylaxis, durvalumab-tremelimumab and a beta-blocker
    plan = offline_plan(REPO / "tests" / "cases" / "care-14.json")
    summary = plan["recommendation"]["summary"]
    # then the prophylaxis comes first, the beta-blocker goes alongside the regimen
    assert "with hepatology co-management; then Tremelimumab" in summary
    assert "every 4 weeks; alongside: Primary variceal-bleeding prophylaxis" in summary
    # and the plan page marks both
    html = render_to_string("consult/partials/_recommendation.html", {"view": plan_view(plan)})
    assert html.count("(alongside the step before)") == 1
    assert html.count("(before the next step)") == 1


def test_tumour_lysis_prophylaxis_and_its_monitoring_lead_the_plan_at_high_risk() -> None:
    plan = offline_plan(REPO / "tests" / "cases" / "care-01.json")
    first = plan["recommendation"]["components"][0]
    assert first["role"] == "primary"
    assert first["timing"] == "before"
    assert "rasburicase" in first["description"]
    # no CDK4/6 or checkpoint-inhibitor monitoring on a lymphoma pathway without them
    whats = " ".join(m["what"] for m in plan["monitoring"])
    assert "checkpoint" not in whats
    assert "palbociclib" not in whats
