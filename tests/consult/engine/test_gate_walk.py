"""Every gate of every plan of tests/cases and the public cases, read as a clinician reads the
safety section (FORMAT.md §4): a ``pass`` is backed by what the record holds, and no plan starts
with a drug whose critical safety rule could not be checked.

The test reads the plan's JSON and the knowledge base's rule, and decides from the case's
facts itself (``clinical.applicability``), not from what the engine says about them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from clinical.applicability import case_facts, condition_holds
from clinical.rules import SafetyAction, UnitSpec
from consult.casefile.validate import parse_case_bytes
from scripts.gate_goldens import case_files, case_key
from tests.consult.engine.offline_plans import offline_plan
from tests.fixtures.seed import seed_bundle

FILES = case_files()


@cache
def _units() -> dict[str, UnitSpec]:
    return {u.key: u for u in seed_bundle().units}


def _facts(path: Path) -> dict[str, Any]:
    parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
    assert parsed.data is not None
    return case_facts(parsed.data)


def _recorded(facts: dict[str, Any], fact: str) -> bool:
    return facts.get(fact) not in (None, "")


def _why_not_backed(gate: dict[str, Any], facts: dict[str, Any]) -> str:
    """ "" when the record backs the gate's pass, else why it does not."""
    if gate["gate"] == "allergy_check":
        return "" if facts.get("patient.allergies") is not None else "no allergy record"
    unit = _units().get(gate.get("unit") or "")
    if unit is None:
        return ""  # a gate the engine makes from the record itself (a recorded allergy)
    rule = unit.action
    assert isinstance(rule, SafetyAction)
    conditions = [*unit.context.all, *unit.context.any]
    if gate["effect"] == "clear" or (rule.check and gate["status"] == "pass"):
        # it does not apply: a condition the recorded facts make false
        decided = [
            c for c in conditions if _recorded(facts, c.fact) and condition_holds(c, facts) is False
        ]
        return "" if decided else "no recorded fact shows that it does not apply"
    if gate["effect"] == "precondition":
        if not rule.verified_by:
            return "a precondition whose result the record cannot hold"
        missing = [f for f in rule.verified_by if not _recorded(facts, f)]
        return f"its result is not recorded: {missing}" if missing else ""
    # it fired: on recorded facts, never on none
    if not conditions:
        return "it fires whatever the record says: nothing was checked"
    unrecorded = [c.fact for c in unit.context.all if not _recorded(facts, c.fact)]
    return f"fired on facts not recorded: {unrecorded}" if unrecorded else ""


@pytest.mark.parametrize("path", FILES, ids=case_key)
def test_no_gate_passes_on_what_was_not_recorded(path: Path) -> None:
    plan = offline_plan(path)
    facts = _facts(path)
    unbacked = {
        f"{g['gate']} [{g.get('unit')}] {g['effect']}": why
        for g in plan["safety"]["gates"]
        if g["status"] == "pass" and (why := _why_not_backed(g, facts))
    }
    assert unbacked == {}


def _critical_unknown(gate: dict[str, Any]) -> SafetyAction | None:
    unit = _units().get(gate.get("unit") or "")
    if gate["status"] != "unknown" or unit is None:
        return None
    rule = unit.action
    assert isinstance(rule, SafetyAction)
    return rule if rule.severity == "critical" and rule.restricts() else None


@pytest.mark.parametrize("path", FILES, ids=case_key)
def test_no_plan_starts_a_drug_whose_critical_precondition_is_unknown(path: Path) -> None:
    plan = offline_plan(path)
    primary = [c for c in plan["recommendation"]["components"] if c["role"] == "primary"]
    unconfirmed = []
    for gate in plan["safety"]["gates"]:
        rule = _critical_unknown(gate)
        if rule is None:
            continue
        confirm = " ".join(plan["recommendation"].get("confirm_first") or ()).casefold()
        for index, step in enumerate(primary):
            if step["description"] not in gate["applies_to"]:
                continue
            # a step before it asks to confirm, and the plan says what: what the rule needs
            before = [s["description"].casefold() for s in primary[:index]]
            asked = bool(confirm) and all(n.casefold() in confirm for n in gate["needs"])
            if not (any("confirm" in b for b in before) and asked):
                unconfirmed.append(f"{step['description']} ({gate['unit']}: {gate['needs']})")
    assert unconfirmed == []
