"""The safety gate as a clinician reads it: every rule checked for the drugs and procedures of
the plan, passed, failed or unknown, with what it did (removed, held, demoted, a required
action, a dose) in clinical words; critical hazards never left in a regimen."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from consult.engine.aio import run_coroutine
from consult.engine.consensus import weighted_consensus
from consult.engine.gate import safety_gate
from consult.engine.protocols import Evidence
from consult.engine.safeguards import FALLBACK_NOTE, gate_with_fallback
from consult.engine.schemas import ProposedComponent, RoleReport
from tests.consult.engine.support import (
    BundleRetriever,
    deliberation,
    evidence_unit,
    load_case,
    safety_rule,
)
from tests.paths import PUBLIC_CASES


def _option(description: str, *agents: str, **fields: Any) -> ProposedComponent:
    fields.setdefault("modality", "systemic")
    return ProposedComponent(description=description, agents=list(agents), **fields)


def _statuses(outcome: Any) -> dict[str, tuple[str, str]]:
    return {g.unit: (g.status, g.effect) for g in outcome.gates}


def _pregnancy_rule() -> Evidence:
    return evidence_unit(
        "x.ci.pregnancy",
        kind="contraindication",
        content={
            "context": {"all": [{"fact": "patient.pregnant", "op": "is_true", "value": None}]},
            "action": {
                "type": "safety",
                "gate": "pregnancy",
                "agents": ["pemetrexed"],
                "severity": "critical",
                "effect": "remove",
                "advice": "no pemetrexed in pregnancy",
            },
        },
        applies=None,
        missing=("patient.pregnant",),
    )


PEMETREXED = _option("Carboplatin-pemetrexed", "carboplatin", "pemetrexed")


def test_a_routine_pretreatment_action_goes_with_the_item_and_is_not_a_pass() -> None:
    premedication = safety_rule(
        "x.premedication",
        agents=["pemetrexed"],
        severity="major",
        effect="condition",
        advice="folic acid and vitamin B12 before pemetrexed",
    )
    outcome = safety_gate([PEMETREXED], [premedication])
    [gate] = outcome.gates
    # nothing in the dossier says it was done: not a pass, the action is what it needs
    assert (gate.status, gate.effect) == ("unknown", "precondition")
    assert gate.action == "folic acid and vitamin B12 before pemetrexed"
    assert "not recorded" in gate.detail
    assert outcome.components[0].role == "primary"
    assert outcome.components[0].conditions  # the action goes with the item


def _dpd_rule() -> Evidence:
    return safety_rule(
        "x.dpd",
        agents=["capecitabine"],
        severity="critical",
        effect="condition",
        advice="Before capecitabine: DPD testing (DPYD genotype)",
        verified_by=["biomarkers.dpd_status"],
    )


CAPECITABINE = _option("Capecitabine", "capecitabine")


def test_a_test_before_a_drug_passes_only_once_its_result_is_recorded() -> None:
    # given the DPD status recorded, the precondition is met, with the value it read
    done = safety_gate([CAPECITABINE], [_dpd_rule()], facts={"biomarkers.dpd_status": "normal"})
    [gate] = done.gates
    assert (gate.status, gate.effect) == ("pass", "precondition")
    assert "normal" in gate.detail
    assert done.confirm_first == []
    # without it, the gate asks for it and the pathway must confirm it before the drug starts
    pending = safety_gate([CAPECITABINE], [_dpd_rule()], facts={})
    [gate] = pending.gates
    assert (gate.status, gate.effect) == ("unknown", "precondition")
    assert gate.needs_facts == ["biomarkers.dpd_status"]
    assert "biomarkers.dpd_status (for x.dpd)" in pending.needs_data
    assert "capecitabine" in " ".join(pending.confirm_first)
    # and the pathway's first step is to confirm it, before the drug
    first, drug = pending.components
    assert first.description.startswith("Before starting capecitabine: confirm")
    assert "capecitabine: dpd status, not recorded" in pending.confirm_first[0]
    assert (first.role, first.order, drug.order) == ("primary", 1, 2)
    assert drug.description == "Capecitabine"


def test_a_rule_is_not_clear_because_a_list_it_reads_was_never_recorded() -> None:
    qt = dataclasses.replace(
        safety_rule(
            "x.qt",
            applies=False,
            agents=["capecitabine"],
            severity="major",
            effect="condition",
            advice="replace the QT-prolonging co-medication",
        ),
        content={
            "context": {"all": [{"fact": "derived.qt_prolonging_drugs", "op": "present"}]},
            "action": {
                "type": "safety",
                "gate": "qt",
                "agents": ["capecitabine"],
                "severity": "major",
                "effect": "condition",
                "advice": "replace the QT-prolonging co-medication",
            },
        },
    )
    # no medication list: the interaction cannot be excluded
    [gate] = safety_gate([CAPECITABINE], [qt], facts={}).gates
    assert (gate.status, gate.needs_facts) == ("unknown", ["derived.qt_prolonging_drugs"])
    # a medication list without such a drug: checked, clear
    [gate] = safety_gate([CAPECITABINE], [qt], facts={"derived.qt_prolonging_drugs": []}).gates
    assert (gate.status, gate.effect) == ("pass", "clear")


def test_a_failed_gate_demotes_the_option_and_a_lone_one_waits_visibly() -> None:
    varices = safety_rule(
        "x.varices",
        agents=["bevacizumab"],
        severity="major",
        effect="condition",
        demotes=True,
        advice="the large varices have been treated",
    )
    atezo_bev = _option("Atezolizumab-bevacizumab", "atezolizumab", "bevacizumab")
    outcome = safety_gate([atezo_bev], [varices])
    assert _statuses(outcome) == {"x.varices": ("fail", "demoted")}
    # nothing safer is on offer: it leads, saying what it waits for
    [item] = outcome.components
    assert item.role == "primary"
    assert item.waits_for == "the large varices have been treated"
    assert not outcome.safe_pathway


def test_a_critical_failed_gate_never_leads_the_pathway() -> None:
    lvef = safety_rule(
        "x.lvef",
        agents=["trastuzumab"],
        severity="critical",
        effect="condition",
        demotes=True,
        advice="LVEF has recovered to 50% or more",
    )
    outcome = safety_gate([_option("Trastuzumab", "trastuzumab")], [lvef])
    assert _statuses(outcome) == {"x.lvef": ("fail", "held")}
    [item] = outcome.components
    assert item.role == "alternative"
    assert item.when == "once LVEF has recovered to 50% or more"
    assert outcome.option is None


def test_an_alternative_whose_when_addresses_a_critical_rule_is_held_not_removed() -> None:
    pregnancy = safety_rule(
        "x.her2-pregnancy",
        agents=["trastuzumab"],
        severity="critical",
        effect="remove",
        advice="no HER2 therapy in pregnancy",
        addressed_by=["after delivery"],
    )
    chemo = _option("Epirubicin-cyclophosphamide from week 14", "epirubicin", "cyclophosphamide")
    later = _option("Trastuzumab", "trastuzumab", role="alternative", rank=1, when="after delivery")
    now = _option("Trastuzumab now", "trastuzumab", role="alternative", rank=2, when="if HER2+")
    outcome = safety_gate([chemo, later, now], [pregnancy])
    roles = {c.description: (c.role, c.when) for c in outcome.components}
    assert roles == {
        "Epirubicin-cyclophosphamide from week 14": ("primary", ""),
        "Trastuzumab": ("alternative", "after delivery"),
    }
    assert [r.option for r in outcome.rejected] == ["Trastuzumab now"]
    # and the consensus keeps the addressed alternative too
    consensus = weighted_consensus(
        reports={"treatment": RoleReport(conclusion="", confidence=0.9, components=[chemo, later])},
        critiques=[],
        weights={"treatment": 1.0},
        safety_evidence=[pregnancy],
    )
    assert "Trastuzumab" not in {r.option for r in consensus.rejected}


def test_a_critical_dose_rule_does_not_keep_the_drug_in_the_regimen() -> None:
    # given Charcot-Marie-Tooth disease, coded as a critical "adjust" (omit vincristine)
    cmt = safety_rule(
        "x.cmt",
        agents=["vincristine"],
        severity="critical",
        effect="adjust",
        advice="omit vincristine",
    )
    rchop = _option(
        "R-CHOP-21 x6", "rituximab", "cyclophosphamide", "doxorubicin", "vincristine", "prednisone"
    )
    outcome = safety_gate([rchop], [cmt])
    [item] = outcome.components
    # then the regimen goes on without vincristine, and says so
    assert "vincristine" not in item.agents
    assert any(d.startswith("Without vincristine") for d in item.dose_adjustments)
    assert _statuses(outcome) == {"x.cmt": ("pass", "withdrawn")}


@pytest.mark.parametrize(
    ("patient", "shown"),
    [
        ({"patient.sex": "male", "patient.age_years": 40}, False),
        ({"patient.sex": "female", "patient.age_years": 68}, False),
        ({"patient.sex": "female", "patient.menopausal_status": "postmenopausal"}, False),
        ({"patient.sex": "female", "patient.age_years": 34}, True),
        ({"patient.sex": "female", "patient.age_years": 68, "patient.pregnant": True}, True),
    ],
)
def test_pregnancy_rules_are_shown_only_for_a_patient_who_can_be_pregnant(
    patient: dict[str, Any], shown: bool
) -> None:
    outcome = safety_gate([PEMETREXED], [_pregnancy_rule()], facts=patient)
    assert bool(outcome.gates) is shown
    assert bool(outcome.needs_data) is shown


def test_unknown_gates_ask_for_the_data_in_clinical_words() -> None:
    outcome = safety_gate(
        [PEMETREXED],
        [_pregnancy_rule()],
        facts={"patient.sex": "female", "patient.age_years": 30},
        labels={"patient.pregnant": "Pregnant"},
    )
    [gate] = outcome.gates
    assert gate.needs == ["Pregnant"]
    assert gate.needs_facts == ["patient.pregnant"]
    assert "patient.pregnant" not in gate.detail
    assert gate.detail.endswith("needs Pregnant")


def test_the_knowledge_base_fallback_joins_only_when_no_option_can_lead() -> None:
    transplant = safety_rule(
        "x.transplant",
        agents=["pembrolizumab", "anti-PD-1"],
        severity="critical",
        effect="remove",
        advice="no checkpoint inhibitor after a kidney transplant",
    )
    keytruda = _option("Keytruda", "Keytruda")
    chemo = _option("Carboplatin-pemetrexed", "carboplatin", "pemetrexed", preference=3)
    # when the members proposed only the forbidden drug, the knowledge base's option leads
    outcome, joined = gate_with_fallback([keytruda], [transplant], options=lambda: [chemo])
    assert joined == ["Carboplatin-pemetrexed"]
    [item] = outcome.components
    assert (item.role, item.description) == ("primary", "Carboplatin-pemetrexed")
    assert item.rationale[0] == FALLBACK_NOTE
    assert any("knowledge base" in c.resolution for c in outcome.conflicts)
    # when a safe option was proposed, nothing joins
    _, joined = gate_with_fallback([keytruda, chemo], [transplant], options=lambda: [chemo])
    assert joined == []


def test_a_tace_plan_shows_the_rules_it_passed(retriever: BundleRetriever) -> None:
    # given an intermediate HCC (BCLC B) whose pathway is chemoembolisation
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-02.json")
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    # then the chemoembolisation rules were checked and passed, and each says for what
    gates = {g.unit: g for g in plan.safety.gates}
    for unit in ("hcc.gate.tace-decompensation", "hcc.ci.tace-macrovascular-invasion"):
        assert gates[unit].status == "pass"
        assert gates[unit].effect == "clear"
        assert gates[unit].applies_to
    # and no rule about a drug that is not in the plan is shown
    assert not [g for g in plan.safety.gates if "anthracycline" in g.unit or "dpd" in g.unit]
    # and every unit a gate names is in the plan's evidence, with its provenance
    cited = {e.unit_id for e in plan.evidence}
    assert {g.unit for g in plan.safety.gates if g.unit} <= cited
    # (the allergy check sums up the allergy rules and names no unit of its own)
    assert [g.gate for g in plan.safety.gates if not g.unit] == ["allergy_check"]


def test_an_ungrounded_component_is_not_kept_on_a_tie() -> None:
    # given one member proposing an item it cites no supporting unit for
    item = _option("Sorafenib", "sorafenib")
    report = RoleReport(conclusion="", confidence=0.9, components=[item])
    consensus = weighted_consensus(
        reports={"treatment": report},
        critiques=[],
        weights={"treatment": 1.0},
        safety_evidence=[],
        ungrounded={"treatment": {"Sorafenib"}},
    )
    # then its support is exactly the threshold, and it is not kept
    assert consensus.support == {"Sorafenib": 0.5}
    assert consensus.components == []
    assert "citing no knowledge unit" in consensus.rejected[0].reason


def test_a_critical_rule_that_cannot_be_checked_makes_the_pathway_conditional() -> None:
    # given a pathway with pemetrexed and a critical pregnancy rule whose input is missing
    outcome = safety_gate([PEMETREXED, _option("Docetaxel", "docetaxel")], [_pregnancy_rule()])
    # then the rule is unknown (not a pass), the pathway's first step confirms what it needs,
    # the drug comes next, and the missing fact is the first data request
    assert _statuses(outcome) == {"x.ci.pregnancy": ("unknown", "needs_data")}
    check, first = outcome.components[:2]
    assert (check.role, check.order) == ("primary", 1)
    assert check.description.startswith("Before starting pemetrexed: confirm the safety")
    assert (first.description, first.role, first.order) == ("Carboplatin-pemetrexed", "primary", 2)
    assert outcome.option is first  # the confirmation is a step, not the treatment
    assert outcome.confirm_first == [
        "Confirm before starting pemetrexed: pregnant, not recorded "
        "(x.ci.pregnancy (x.ci.pregnancy))"
    ]
    assert outcome.confirm_needs == ["patient.pregnant (for x.ci.pregnancy)"]


def test_an_unchecked_critical_rule_that_other_facts_make_likely_demotes_the_item() -> None:
    # given the same rule when the record makes a pregnancy likely (obstetric care)
    facts = {"derived.likely_missing": {"patient.pregnant": "obstetric care on record"}}
    outcome = safety_gate(
        [PEMETREXED, _option("Docetaxel", "docetaxel")], [_pregnancy_rule()], facts=facts
    )
    # then the next option leads and pemetrexed waits for the fact
    assert outcome.option is not None
    assert outcome.option.description == "Docetaxel"
    assert "Carboplatin-pemetrexed" in outcome.blocked


def test_a_minor_rule_that_cannot_be_checked_does_not_make_the_pathway_conditional() -> None:
    minor = dataclasses.replace(
        safety_rule(
            "x.minor",
            agents=["pemetrexed"],
            severity="minor",
            effect="condition",
            advice="Check first.",
        ),
        applies=None,
        missing=("organ_function.qtc_ms",),
    )
    outcome = safety_gate([PEMETREXED], [minor])
    assert outcome.confirm_first == []


def _breastfeeding_rule() -> Evidence:
    return evidence_unit(
        "x.breastfeeding",
        kind="organ_function_gate",
        content={
            "context": {"all": [{"fact": "patient.breastfeeding", "op": "is_true", "value": None}]},
            "action": {
                "type": "safety",
                "gate": "breastfeeding",
                "modalities": ["systemic"],
                "severity": "major",
                "effect": "condition",
                "advice": "stop breastfeeding",
            },
        },
        applies=False,
    )


def test_a_check_about_a_state_the_patient_is_known_not_to_be_in_is_not_shown() -> None:
    rule = _breastfeeding_rule()
    hidden = safety_gate([PEMETREXED], [rule], facts={"patient.breastfeeding": False})
    assert hidden.gates == []
    # breastfeeding not recorded: never a pass, the gate asks for it
    shown = safety_gate([PEMETREXED], [rule], facts={"patient.breastfeeding": None})
    assert _statuses(shown) == {"x.breastfeeding": ("unknown", "needs_data")}
    assert shown.gates[0].needs_facts == ["patient.breastfeeding"]
    # recorded as not breastfeeding in a form the state check does not hide: a pass
    seen = safety_gate([PEMETREXED], [rule], facts={"patient.breastfeeding": "no"})
    assert _statuses(seen) == {"x.breastfeeding": ("pass", "clear")}


def test_a_clear_check_about_an_item_the_plan_no_longer_holds_is_not_shown() -> None:
    removal = safety_rule(
        "x.remove",
        agents=["pemetrexed"],
        severity="critical",
        effect="remove",
        advice="Do not give.",
    )
    clear = safety_rule(
        "x.clear", applies=False, agents=["carboplatin"], severity="major", effect="remove"
    )
    outcome = safety_gate([PEMETREXED, _option("Docetaxel", "docetaxel")], [removal, clear])
    assert "x.clear" not in _statuses(outcome)
    assert _statuses(outcome)["x.remove"][0] == "fail"


def _ovarian_suppression_rule(applies: bool | None = True) -> Evidence:
    return safety_rule(
        "x.ai-premenopausal",
        applies,
        agents=["letrozole", "anastrozole", "exemestane"],
        severity="major",
        effect="partner",
        partners=["goserelin", "triptorelin", "ovarian function suppression"],
        advice="Before the menopause an aromatase inhibitor goes only with ovarian suppression",
    )


def test_a_required_partner_drug_is_added_to_the_item_that_lacks_it() -> None:
    # given an aromatase inhibitor named only in the description, for a premenopausal woman
    letrozole = _option("Letrozole 2.5 mg daily for 5 years")
    outcome = safety_gate([letrozole], [_ovarian_suppression_rule()])
    # then the item is given with goserelin, and the plan says why
    [item] = outcome.components
    assert item.agents == ["goserelin"]
    assert any(c.startswith("With goserelin: Before the menopause") for c in item.conditions)
    assert _statuses(outcome) == {"x.ai-premenopausal": ("pass", "partner")}
    assert "added by the safety gate" in outcome.gates[0].detail


def test_a_partner_already_given_is_not_added_twice() -> None:
    combined = _option("Ovarian function suppression plus exemestane", "exemestane")
    [item] = safety_gate([combined], [_ovarian_suppression_rule()]).components
    assert item.agents == ["exemestane"]
    # a rule that does not fire (postmenopausal) adds nothing
    alone = _option("Letrozole", "letrozole")
    [item] = safety_gate([alone], [_ovarian_suppression_rule(applies=False)]).components
    assert item.agents == ["letrozole"]
