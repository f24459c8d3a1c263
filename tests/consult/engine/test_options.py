"""The plan answers the MDT question: the main options of the case's cancer and setting that do
not apply are named in rejected_options with the patient facts that rule them out."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from clinical.plan import PlanComponent, RejectedOption
from consult.bundle_retriever import BundleRetriever
from consult.engine.options import condition_words, not_advised
from consult.engine.protocols import Evidence
from tests.consult.engine.offline_plans import offline_plan
from tests.consult.engine.support import deliberation, seed_bundle
from tests.paths import PUBLIC_CASES


def _unit(
    unit_id: str,
    option: str,
    failed: tuple[tuple[str, str, Any, Any, str], ...],
    *,
    modality: str = "surgery",
    agents: tuple[str, ...] = (),
    preference: int = 1,
) -> Evidence:
    action = {
        "type": "therapy",
        "modality": modality,
        "description": f"{option} ({unit_id})",
        "agents": list(agents),
        "role": "option",
        "option": option,
        "preference": preference,
    }
    return Evidence(
        unit_id=unit_id,
        kind="therapy_step",
        cancer_type="hcc",
        title=option,
        text="",
        anchor="",
        version="v1",
        version_id=0,
        source="",
        grade="",
        grade_ordinal=2,
        content={"action": action},
        applies=False,
        failed=failed,
    )


def _component(description: str, evidence: list[str], **kwargs: Any) -> PlanComponent:
    return PlanComponent(
        role="primary", order=1, modality=kwargs.get("modality", "surgery"),
        description=description, agents=kwargs.get("agents", []), evidence=evidence,
    )  # fmt: skip


LABELS = {"derived.bclc": "BCLC stage", "staging.nodules_count": "Number of liver nodules"}


def test_options_names_an_option_that_does_not_apply_with_its_reason() -> None:
    # given resection in the plan and transplantation ruled out by the number of nodules
    resection = _unit("hcc.tx.resection", "liver resection", ())
    transplant = _unit(
        "hcc.tx.transplant",
        "liver transplantation",
        (("staging.nodules_count", "gt", 1, 1, "any"),),
        modality="transplant",
    )
    plan = [_component("Resection", ["hcc.tx.resection"])]
    # when
    rejected = not_advised([transplant], plan, known={"hcc.tx.resection": resection}, labels=LABELS)
    # then the plan says why transplantation is not advised, in clinical words
    assert [r.option for r in rejected] == ["Liver transplantation"]
    assert "Number of liver nodules 1 (needs > 1)" in rejected[0].reason


def test_options_leaves_out_options_of_another_disease_line_or_setting() -> None:
    # given a second-line option (fails on the line) and one for another histology
    second_line = _unit(
        "x.second", "systemic therapy", (("derived.line", "ge", 2, 1, "all"),), modality="systemic"
    )
    other_histology = _unit(
        "x.fl", "watchful waiting", (("diagnosis.histology", "contains_any", ["follicular"],
                                      "diffuse large B-cell lymphoma", "all"),),
    )  # fmt: skip
    # then neither is part of this board's question
    assert not_advised([second_line, other_histology], [], known={}, labels=LABELS) == []


def test_options_leaves_out_an_option_for_after_an_operation_not_done() -> None:
    # given surveillance after resection, for a patient with no operation of the tumour on
    # record, and TACE ruled out by the stage
    surveillance = _unit(
        "hcc.surv", "surveillance after resection",
        (("derived.primary_operation_done", "eq", "liver_resection", "none_recorded", "all"),),
        modality="surveillance",
    )  # fmt: skip
    tace = _unit("t.1", "chemoembolisation", (("derived.bclc", "eq", "B", "C", "all"),))
    rejected = not_advised([surveillance, tace], [], known={}, labels=LABELS)
    # then only TACE is named: surveillance after a resection never applied to this patient,
    # and no reason reads "Primary operation done none recorded"
    assert [r.option for r in rejected] == ["Chemoembolisation"]


@pytest.mark.parametrize("name", ["pub-hcc-01", "pub-hcc-03"])
def test_options_hcc_plans_do_not_rule_out_surveillance_after_a_resection_not_done(
    name: str,
) -> None:
    plan = offline_plan(PUBLIC_CASES / f"{name}.json")
    listed = [f"{r['option']}: {r['reason']}" for r in plan["rejected_options"]]
    assert listed, "the MDT options that do not apply are still named"
    assert not any("after resection" in r or "none recorded" in r for r in listed), listed


def test_options_does_not_name_an_option_the_plan_holds_or_already_rules_out() -> None:
    # given two steps of one option, one of them planned, and a third already vetoed
    ablation_a = _unit("a.1", "thermal ablation", ())
    ablation_b = _unit("a.2", "thermal ablation", (("derived.bclc", "eq", "0", "A", "all"),))
    tace = _unit("t.1", "chemoembolisation", (("derived.bclc", "eq", "B", "A", "all"),))
    plan = [_component("Ablation", ["a.1"])]
    vetoed = [RejectedOption(option=str(tace.action["description"]), reason="contraindicated")]
    # when
    rejected = not_advised(
        [ablation_b, tace], plan, known={"a.1": ablation_a, "t.1": tace}, labels=LABELS,
        rejected=vetoed,
    )  # fmt: skip
    # then nothing is named twice
    assert rejected == []


def test_options_an_unlabelled_llm_item_counts_by_agents() -> None:
    # given an LLM plan item that cites nothing but names the drug of an option
    systemic = _unit(
        "s.1", "systemic therapy", (("derived.bclc", "eq", "C", "B", "all"),),
        modality="systemic", agents=("atezolizumab", "bevacizumab"),
    )  # fmt: skip
    plan = [
        _component("Atezolizumab-bevacizumab", [], modality="systemic", agents=["atezolizumab"])
    ]
    assert not_advised([systemic], plan, known={}, labels=LABELS) == []


def test_options_keeps_the_list_short_and_closest_first() -> None:
    far = _unit("f", "far option", tuple(("derived.bclc", "eq", "X", "A", "all") for _ in range(3)))
    near = [
        _unit(f"n{i}", f"option {i}", (("derived.bclc", "eq", "B", "A", "all"),)) for i in range(6)
    ]
    rejected = not_advised([far, *near], [], known={}, labels=LABELS)
    assert len(rejected) == 4
    assert "Far option" not in {r.option for r in rejected}


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (("derived.bclc", "in", ["0", "A"], "C", "all"), "BCLC stage C (needs 0 or A)"),
        (("patient.age_years", "le", 70, 75, "all"), "Age 75 (needs ≤ 70)"),
        (("flag", "is_true", None, False, "all"), "Flag: no (needs yes)"),
        (("diagnosis.setting", "eq", "progressive", "newly_diagnosed", "all"),
         "Setting newly diagnosed (needs progressive)"),
    ],
)  # fmt: skip
def test_options_condition_words(row: tuple[Any, ...], words: str) -> None:
    labels = {**LABELS, "patient.age_years": "Age", "diagnosis.setting": "Setting"}
    assert condition_words(row, labels) == words


def _plan(name: str) -> dict[str, Any]:
    case = json.loads((PUBLIC_CASES / f"{name}.json").read_text())
    case.pop("expected")
    run = deliberation(case, retriever=BundleRetriever(seed_bundle()))
    return asyncio.run(run.run()).model_dump(mode="json")


def test_options_resection_plan_answers_transplant_and_systemic_therapy() -> None:
    # given a solitary BCLC A tumour with preserved liver function and no portal hypertension
    plan = _plan("pub-hcc-01")
    # then the plan says why transplantation and systemic therapy are not advised
    rejected = {r["option"]: r["reason"] for r in plan["rejected_options"]}
    assert "portal hypertension" in rejected["Liver transplantation"]
    assert "BCLC stage A" in rejected["Systemic therapy"]
    # and the summary answers the question with it
    summary = plan["recommendation"]["summary"]
    assert "Not advised: Liver transplantation" in summary


def test_options_plan_intent_follows_the_option_that_leads_after_the_gate() -> None:
    from consult.engine.deliberation import final_intent

    # given a pathway led by a curative CAR-T step after the gate demoted a palliative one
    car_t = _unit("car-t", "CAR T-cell therapy", (), modality="systemic")
    car_t = Evidence(
        **{**car_t.__dict__, "content": {"action": {**car_t.action, "intent": "curative"}}}
    )
    antiviral = PlanComponent(
        role="primary", order=1, modality="antiviral", description="Entecavir", evidence=[]
    )
    lead = _component("CAR-T", ["car-t"], modality="systemic")
    # then the plan's intent is the leading option's, whatever comes before it
    assert final_intent([antiviral, lead], {"car-t": car_t}) == "curative"
    assert final_intent([antiviral], {}) is None
