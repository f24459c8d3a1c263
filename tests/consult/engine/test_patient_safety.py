"""Patient-level safety checks a clinician must always see: the allergy check (failed, passed,
not checked) and the HCC liver-function gate with its values, whatever the plan."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consult.engine.aio import run_coroutine
from consult.engine.gate import safety_gate, with_allergy_check
from consult.engine.schemas import ProposedComponent
from tests.consult.engine.support import (
    BundleRetriever,
    deliberation,
    evidence_unit,
    load_case,
)
from tests.paths import PUBLIC_CASES, REPO

CASES = REPO / "tests" / "cases"


def _option(description: str, *agents: str, **fields: Any) -> ProposedComponent:
    fields.setdefault("modality", "systemic")
    return ProposedComponent(description=description, agents=list(agents), **fields)


def _gate(outcome: Any, name: str) -> Any:
    return next(g for g in outcome.gates if g.gate == name)


def test_allergy_check_is_not_checked_without_an_allergy_record() -> None:
    # given a plan and a dossier with no allergy record
    outcome = with_allergy_check(safety_gate([_option("R-CHOP x6", "rituximab")], [], facts={}), {})
    # then the allergy check is shown as not checked and asks for the record
    check = _gate(outcome, "allergy_check")
    assert check.status == "unknown"
    assert check.needs_facts == ["patient.allergies"]


def test_allergy_check_passes_when_no_recorded_allergy_touches_the_plan() -> None:
    # given an allergy to penicillin and a plan without any penicillin
    facts = {"patient.allergies": ["Penicillin (rash)"], "derived.allergy_classes": ["penicillin"]}
    outcome = safety_gate([_option("R-CHOP x6", "rituximab")], [], facts=facts)
    outcome = with_allergy_check(outcome, facts)
    # then the check passed and says what it compared
    check = _gate(outcome, "allergy_check")
    assert check.status == "pass"
    assert "Penicillin (rash)" in check.detail
    assert [c.description for c in outcome.components if c.role == "primary"] == ["R-CHOP x6"]


def test_a_drug_named_in_the_allergies_leaves_the_plan_even_without_a_rule() -> None:
    # given an allergy to a drug no class rule names, and a plan that gives it first
    facts = {"patient.allergies": ["bleomycin (fever, rigors)"], "derived.allergy_classes": []}
    first = _option("ABVD x6", "doxorubicin", "bleomycin", "vinblastine", "dacarbazine")
    second = _option("AVD x6", "doxorubicin", "vinblastine", "dacarbazine")
    second.role, second.rank, second.when = "alternative", 1, "if bleomycin cannot be given"
    outcome = with_allergy_check(safety_gate([first, second], [], facts=facts), facts)
    # then the bleomycin regimen is ruled out with the allergy as reason, the next safe one leads
    primary = [c.description for c in outcome.components if c.role == "primary"]
    assert primary == ["AVD x6"]
    assert any("bleomycin" in r.reason for r in outcome.rejected)
    assert _gate(outcome, "allergy_check").status == "fail"


def test_an_allergy_written_at_the_longest_a_case_allows_still_removes_the_drug() -> None:
    # given an allergy entry of 400 characters (the case file's limit) naming a drug: found by
    # the text-reader harness, whose long allergy text made the gate's advice too long to build
    allergy = "bleomycin: " + "fever, rigors and a rash after the first dose; " * 8
    allergy = allergy[:400]
    facts = {"patient.allergies": [allergy], "derived.allergy_classes": []}
    first = _option("ABVD x6", "doxorubicin", "bleomycin", "vinblastine", "dacarbazine")
    second = _option("AVD x6", "doxorubicin", "vinblastine", "dacarbazine")
    second.role, second.rank = "alternative", 1
    # when the gate reads it, then it does not fail: the bleomycin regimen goes
    outcome = with_allergy_check(safety_gate([first, second], [], facts=facts), facts)
    assert [c.description for c in outcome.components if c.role == "primary"] == ["AVD x6"]
    assert _gate(outcome, "allergy_check").status == "fail"


def _liver_check(applies: bool | None) -> Any:
    return evidence_unit(
        "hcc.gate.liver",
        kind="organ_function_gate",
        cancer_type="hcc",
        content={
            "action": {
                "type": "safety",
                "gate": "liver_function",
                "severity": "major",
                "effect": "flag",
                "check": True,
                "shows": ["derived.child_pugh_class", "derived.albi_grade"],
                "advice": "Liver function not preserved.",
            }
        },
        applies=applies,
        missing=() if applies is not None else ("derived.child_pugh_class",),
    )


@pytest.mark.parametrize(
    ("applies", "child_pugh", "status", "words"),
    [
        (False, "A", "pass", "passed (Child-Pugh A; ALBI 1)"),
        (True, "C", "fail", "failed (Child-Pugh C; ALBI 1)"),
        (None, None, "unknown", "not checked (Child-Pugh: not available; ALBI 1)"),
    ],
)
def test_a_check_rule_is_shown_with_its_values_whatever_it_finds(
    applies: bool | None, child_pugh: str | None, status: str, words: str
) -> None:
    # given a patient-level check and a plan it does not target
    facts = {"derived.child_pugh_class": child_pugh, "derived.albi_grade": 1}
    labels = {"derived.child_pugh_class": "Child-Pugh", "derived.albi_grade": "ALBI"}
    outcome = safety_gate(
        [_option("Best supportive care", modality="supportive")],
        [_liver_check(applies)],
        facts=facts,
        labels=labels,
    )
    # then it is reported with its result and the values it read
    gate = _gate(outcome, "liver_function")
    assert gate.status == status
    assert words in gate.detail


@pytest.mark.parametrize(
    ("path", "status"),
    [(PUBLIC_CASES / "pub-hcc-02.json", "pass"), (CASES / "hcc-21.json", "fail")],
)
def test_every_hcc_plan_shows_the_liver_function_gate(
    path: Any, status: str, retriever: BundleRetriever
) -> None:
    # given an HCC case (Child-Pugh A, or C), deliberated by the guideline engine
    case, _ = load_case(path)
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    # then its safety section shows the liver-function gate with Child-Pugh and ALBI values
    gate = next(g for g in plan.safety.gates if g.gate == "liver_function")
    assert gate.status == status
    detail = gate.detail.casefold()
    assert "pugh class" in detail
    assert "albi score" in detail


def test_every_pregnant_patient_gets_obstetric_and_fetal_monitoring(
    retriever: BundleRetriever,
) -> None:
    # given pregnant patients with four different cancers
    for name in ("lymph-23", "breast-20", "lung-21"):
        case, _ = load_case(CASES / f"{name}.json")
        plan = run_coroutine(lambda case=case: deliberation(case, retriever=retriever).run())
        monitoring = json.dumps([m.model_dump() for m in plan.monitoring]).casefold()
        # then the schedule holds fetal growth ultrasound and delivery planning
        assert "fetal growth" in monitoring, name
        assert "delivery" in monitoring, name
    # and a patient recorded as not pregnant gets neither
    case, _ = load_case(PUBLIC_CASES / "pub-breast-01.json")
    case["patient"]["pregnant"] = False
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    assert "fetal" not in json.dumps([m.model_dump() for m in plan.monitoring]).casefold()


def test_a_pregnant_woman_with_intermediate_hcc_gets_no_chemoembolisation(
    retriever: BundleRetriever,
) -> None:
    # given a BCLC B HCC (chemoembolisation is the standard) in a woman 20 weeks pregnant
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-02.json")
    case["patient"].update(
        sex="female", age_years=36, pregnant=True, gestational_age_weeks=20, menopausal_status=None
    )
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    components = plan.recommendation.components
    # then no item of any role is a chemoembolisation; TACE is ruled out with the reason
    assert not [c for c in components if c.modality == "locoregional"]
    assert any("pregnan" in r.reason.casefold() for r in plan.rejected_options)
    # and the pathway is the joint decision with maternal-fetal medicine, with fetal monitoring
    primary = [c for c in components if c.role == "primary"]
    assert "maternal-fetal" in primary[0].description
    assert "fetal growth" in json.dumps([m.model_dump() for m in plan.monitoring]).casefold()
