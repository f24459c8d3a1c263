"""Issue 23: the pathway checked as a whole after the gate - two backbones of one class, a
baseline step after the treatment it protects, an alternative whose `when` already holds,
wording for the other sex - found, repaired where certain, and every later step timed."""

from __future__ import annotations

from typing import Any

from clinical.plan import Plan
from consult.engine.coherence import (
    ALTERNATIVE_ALREADY_TRUE,
    BASELINE_AFTER_TREATMENT,
    PATHWAY_CHECKS,
    TWO_BACKBONES,
    WRONG_SEX_WORDING,
    plan_findings,
)
from consult.engine.pathway_pass import pathway_pass, when_holds


def make_plan(*items: dict[str, Any], intent: str = "palliative") -> Plan:
    order = rank = 0
    components = []
    for item in items:
        component = {"agents": [], "when": "", **item}
        component.setdefault("role", "primary")
        if component["role"] == "primary":
            order += 1
            component["order"] = order
        else:
            rank += 1
            component["rank"] = rank
        components.append(component)
    return Plan.model_validate(
        {"recommendation": {"summary": "s", "intent": intent, "components": components}}
    )


def step(modality: str, description: str, **more: Any) -> dict[str, Any]:
    return {"modality": modality, "description": description, **more}


def properties(plan: Plan) -> list[str]:
    return [n.property for n in plan.coherence]


def test_two_endocrine_backbones_side_by_side_are_found_and_one_becomes_an_alternative() -> None:
    # given a pathway with letrozole-palbociclib and, as a second step, tamoxifen
    plan = make_plan(
        step("systemic", "Letrozole 2.5 mg daily plus palbociclib 125 mg days 1-21"),
        step("systemic", "Tamoxifen 20 mg daily"),
    )
    assert TWO_BACKBONES in [f.property for f in plan_findings(plan.model_dump(), PATHWAY_CHECKS)]
    # when the pathway pass runs
    repaired = pathway_pass(plan, {})
    # then one backbone leads and the other is an alternative to it
    primary = [c for c in repaired.recommendation.components if c.role == "primary"]
    alternatives = [c for c in repaired.recommendation.components if c.role == "alternative"]
    assert [c.description for c in primary] == [
        "Letrozole 2.5 mg daily plus palbociclib 125 mg days 1-21"
    ]
    assert alternatives[0].description == "Tamoxifen 20 mg daily"
    assert alternatives[0].when.startswith("instead of")
    assert properties(repaired) == [TWO_BACKBONES]
    assert repaired.coherence[0].repaired


def test_a_sequence_of_endocrine_therapies_is_not_two_backbones() -> None:
    plan = make_plan(
        step("systemic", "Tamoxifen 20 mg daily for 2-3 years"),
        step("systemic", "then switch to an aromatase inhibitor to complete 5 years"),
    )
    assert plan_findings(plan.model_dump(), PATHWAY_CHECKS) == []


def test_hbv_prophylaxis_after_r_chop_moves_before_it_and_supportive_care_is_concurrent() -> None:
    # given R-CHOP, then antiemetics, then entecavir prophylaxis
    plan = make_plan(
        step("systemic", "R-CHOP every 21 days x6"),
        step("supportive", "Antiemetic prophylaxis with a 5-HT3 antagonist and dexamethasone"),
        step("antiviral", "Entecavir 0.5 mg daily as HBV prophylaxis, continued 12 months after"),
    )
    found = plan_findings(plan.model_dump(), PATHWAY_CHECKS)
    assert BASELINE_AFTER_TREATMENT in [f.property for f in found]
    # when the pathway pass runs
    repaired = pathway_pass(plan, {})
    steps = sorted(repaired.recommendation.components, key=lambda c: c.order or 0)
    # then the prophylaxis comes first, R-CHOP follows, and the rest is marked concurrent
    assert [c.modality for c in steps] == ["antiviral", "systemic", "supportive"]
    assert [c.timing for c in steps] == ["before", "then", "with"]
    assert plan_findings(repaired.model_dump(), PATHWAY_CHECKS) == []
    assert repaired.coherence[0].property == BASELINE_AFTER_TREATMENT
    assert repaired.coherence[0].repaired


def test_an_alternative_whose_when_already_holds_is_reported() -> None:
    plan = make_plan(
        step("systemic", "Carboplatin AUC 5 plus pemetrexed every 3 weeks"),
        step(
            "systemic",
            "Carboplatin AUC 5 plus weekly paclitaxel",
            role="alternative",
            when="ECOG 2, age 80 or over, or frail",
        ),
    )
    repaired = pathway_pass(plan, {"patient.ecog": 2, "patient.age_years": 66})
    assert ALTERNATIVE_ALREADY_TRUE in properties(repaired)
    fit = pathway_pass(plan, {"patient.ecog": 1, "patient.age_years": 66})
    assert ALTERNATIVE_ALREADY_TRUE not in properties(fit)


def test_when_holds_reads_only_what_it_understands() -> None:
    facts = {"patient.ecog": 1, "patient.age_years": 82, "derived.frailty": "fit"}
    assert when_holds("age 80 or over", facts) is True
    assert when_holds("ECOG 2-3", facts) is False
    assert when_holds("ECOG 2 or more", {"patient.ecog": 3}) is True
    assert when_holds("PD-L1 50% or more with high tumour burden", facts) is None
    assert when_holds("if the patient declines surgery", facts) is None
    assert when_holds("ECOG 2", {}) is None


def test_pregnancy_wording_for_a_man_is_reported() -> None:
    plan = make_plan(
        step("systemic", "Capecitabine 1000 mg/m2 twice daily; avoid during pregnancy"),
    )
    assert WRONG_SEX_WORDING in properties(pathway_pass(plan, {"patient.sex": "male"}))
    assert WRONG_SEX_WORDING not in properties(pathway_pass(plan, {"patient.sex": "female"}))
    assert WRONG_SEX_WORDING not in properties(pathway_pass(plan, {}))


def test_curative_intent_for_primary_endocrine_therapy_becomes_palliative() -> None:
    # given primary endocrine therapy alone, labelled curative (a frail 88-year-old)
    plan = make_plan(step("systemic", "Primary endocrine therapy: letrozole 2.5 mg daily"))
    plan.recommendation.intent = "curative"  # type: ignore[assignment]
    plan.recommendation.summary = "Recommended pathway (curative): letrozole."
    # when the pathway pass runs, the intent follows the steps and says so
    repaired = pathway_pass(plan, {})
    assert repaired.recommendation.intent == "palliative"
    assert "Recommended pathway (palliative)" in repaired.recommendation.summary
    assert repaired.coherence[0].repaired
