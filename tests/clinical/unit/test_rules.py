"""The safety policy of a knowledge-base rule, defined once (clinical.rules.SafetyAction): which
rules veto, omit, condition or restrict the drugs they name."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clinical.rules import SafetyAction


def _rule(effect: str, severity: str, **more: Any) -> SafetyAction:
    targets: dict[str, Any] = {"agents": ["vincristine"]}
    return SafetyAction.model_validate(
        {"gate": "g", "effect": effect, "severity": severity, "advice": "Act.", **targets, **more}
    )


@pytest.mark.parametrize(
    ("effect", "severity", "vetoes", "restricts"),
    [
        ("remove", "critical", True, True),
        ("remove", "major", True, True),
        ("remove", "minor", False, True),  # too minor to veto: it conditions
        ("condition", "critical", False, True),
        ("adjust", "critical", True, True),  # a critical hazard is not dosed around
        ("adjust", "major", False, False),
        ("flag", "critical", False, False),
    ],
)
def test_rule_vetoes_and_restricts_by_effect_and_severity(
    effect: str, severity: str, vetoes: bool, restricts: bool
) -> None:
    rule = _rule(effect, severity)
    assert rule.vetoes() is vetoes
    assert rule.restricts() is restricts
    assert rule.conditions() is (restricts and not vetoes)


def test_rule_omits_only_what_it_names_when_marked_or_critical_adjust() -> None:
    assert _rule("remove", "major", omit=True).omits()
    assert _rule("adjust", "critical").omits()
    assert not _rule("remove", "critical").omits()


def test_rule_risk_follows_its_severity() -> None:
    assert [_rule("remove", s).risk for s in ("critical", "major", "minor")] == [1.0, 0.7, 0.3]


def test_rule_refuses_an_effect_it_does_not_know() -> None:
    with pytest.raises(ValidationError, match="effect"):
        _rule("ban", "critical")
