"""The curator's retrieval diagnostics settle a disagreement between a therapy step and a safety
rule by the gate's own policy (clinical.rules.SafetyAction.restricts), so the page cannot say a
drug stands where the plan would withdraw it."""

from __future__ import annotations

from typing import Any

from knowledge.selectors import Hit, arbitrate


def _hit(key: str, kind: str, action: dict[str, Any]) -> Hit:
    return Hit(
        version_id=1,
        unit_key=key,
        version_number=1,
        content_hash="0" * 64,
        kind=kind,
        cancer_type="lymphoma",
        title=key,
        text="",
        anchor="a",
        source_key="s",
        source="S",
        jurisdiction="EU",
        year=2024,
        grade_system="ESMO",
        grade_native="I, A",
        grade_ordinal=1,
        content={"action": action},
        dense=0.0,
        keyword=0.0,
        score=1.0,
    )


R_CHOP = _hit(
    "lymphoma.tx.r-chop",
    "therapy_step",
    {
        "type": "therapy",
        "modality": "systemic",
        "description": "R-CHOP",
        "agents": ["rituximab", "vincristine"],
        "intent": "curative",
    },
)


def _rule(effect: str, severity: str) -> Hit:
    return _hit(
        f"common.{effect}-{severity}",
        "contraindication",
        {
            "type": "safety",
            "gate": "neuropathy",
            "agents": ["vincristine"],
            "severity": severity,
            "effect": effect,
            "advice": "Charcot-Marie-Tooth disease: no vincristine.",
        },
    )


def test_arbitrate_lets_a_critical_adjust_rule_win_as_the_gate_withdraws_the_drug() -> None:
    # given a critical "adjust" rule: the gate withdraws vincristine (it omits it)
    rule = _rule("adjust", "critical")
    assert rule.safety is not None
    assert rule.safety.vetoes()
    # when the diagnostics arbitrate it against R-CHOP
    decisions = arbitrate([R_CHOP, rule]).decisions
    # then safety wins on vincristine, as in the plan
    assert [(d.winner, d.losers, d.agents) for d in decisions] == [
        (rule.unit_key, (R_CHOP.unit_key,), ("vincristine",))
    ]


def test_arbitrate_leaves_a_dose_adjustment_or_a_flag_alone() -> None:
    for effect, severity in (("adjust", "major"), ("flag", "critical")):
        assert arbitrate([R_CHOP, _rule(effect, severity)]).decisions == []
