"""The gate's evaluation alone (consult/engine/findings.py): one rule against the plan items and
the patient's facts gives one finding — which items and drugs it targets and what the gate must
do — without changing anything."""

from __future__ import annotations

from typing import Any

import pytest

from consult.engine.findings import Kind, evaluate
from consult.engine.schemas import ProposedComponent
from tests.consult.engine.support import safety_rule

FOLFOX = ProposedComponent(
    description="FOLFOX", modality="systemic", agents=["oxaliplatin", "fluorouracil"]
)
CAPOX = ProposedComponent(description="CAPOX", modality="systemic", agents=["capecitabine"])
RESECTION = ProposedComponent(description="Liver resection", modality="surgery")


@pytest.mark.parametrize(
    ("applies", "action", "kind"),
    [
        (False, {"effect": "remove", "severity": "critical"}, Kind.CLEAR),
        (None, {"effect": "remove", "severity": "critical"}, Kind.UNKNOWN),
        (True, {"effect": "remove", "severity": "critical"}, Kind.VETO),
        (True, {"effect": "remove", "severity": "minor"}, Kind.PRECONDITION),
        (True, {"effect": "condition", "severity": "major"}, Kind.PRECONDITION),
        (True, {"effect": "condition", "severity": "major", "demotes": True}, Kind.WAIT),
        (True, {"effect": "adjust", "severity": "major"}, Kind.DOSE),
        (True, {"effect": "adjust", "severity": "critical"}, Kind.VETO),
        (True, {"effect": "flag", "severity": "major"}, Kind.WARN),
    ],
)
def test_a_rule_about_a_drug_of_the_plan_gives_its_kind(
    applies: bool | None, action: dict[str, Any], kind: Kind
) -> None:
    rule = safety_rule("x.rule", applies=applies, agents=["fluorouracil"], **action)
    finding = evaluate(rule, [RESECTION, FOLFOX], facts={})
    assert finding is not None
    assert finding.kind is kind
    # it targets the item that gives the drug, by its index, with the drug's name
    assert dict(finding.hits) == {1: ["fluorouracil"]}
    assert finding.applies_to == ["FOLFOX"]


@pytest.mark.parametrize("applies", [True, False, None])
def test_a_rule_that_conditions_no_drug_of_the_plan_is_no_finding(applies: bool | None) -> None:
    rule = safety_rule(
        "x.rule", applies, agents=["trastuzumab"], effect="condition", severity="major"
    )
    assert evaluate(rule, [FOLFOX, CAPOX], facts={}) is None


def test_a_drug_withdrawn_by_an_earlier_rule_no_longer_counts() -> None:
    rule = safety_rule("x.rule", agents=["fluorouracil"], effect="adjust", severity="major")
    assert evaluate(rule, [FOLFOX], facts={}, withdrawn={0: {"fluorouracil"}}) is None


def test_a_vetoing_rule_about_nothing_planned_still_excludes_its_drug_by_name() -> None:
    rule = safety_rule("x.rule", agents=["trastuzumab"], effect="remove", severity="critical")
    # fires for the patient: no item may name trastuzumab, but no gate line is shown
    finding = evaluate(rule, [RESECTION], facts={})
    assert finding is not None
    assert (finding.excludes, finding.reported) == (True, False)


def test_a_rule_about_an_item_the_board_withdrew_is_its_recorded_reason() -> None:
    rule = safety_rule("x.rule", agents=["capecitabine"], effect="remove", severity="critical")
    finding = evaluate(rule, [FOLFOX], facts={}, ruled_out=[CAPOX])
    assert finding is not None
    assert finding.kind is Kind.RECORDED
    assert finding.applies_to == ["CAPOX"]


def test_a_pregnancy_rule_does_not_concern_a_man() -> None:
    rule = safety_rule("x.rule", agents=["capecitabine"], effect="remove", severity="critical")
    rule.content["context"] = {"all": [{"fact": "patient.pregnant", "op": "is_true"}]}  # type: ignore[index]
    assert evaluate(rule, [CAPOX], facts={"patient.sex": "male"}) is None
    assert evaluate(rule, [CAPOX], facts={"patient.sex": "female"}) is not None


def test_evaluating_changes_nothing() -> None:
    rule = safety_rule(
        "x.rule", agents=["fluorouracil"], effect="remove", severity="critical", omit=True
    )
    items = [FOLFOX.model_copy(deep=True)]
    evaluate(rule, items, facts={})
    assert items == [FOLFOX]
