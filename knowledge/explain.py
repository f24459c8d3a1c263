"""Which of a unit's conditions hold for a case, with the patient's value: the "why it
applies" shown beside each plan item (BCLC B ✓, Child-Pugh score 6 ✓)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowledge.applicability import condition_holds
from knowledge.bundle import Context


def held_conditions(context: Context, facts: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """(fact, the patient's value) for every condition of the context that holds, in the
    unit's order, each fact once."""
    held: dict[str, Any] = {}
    for condition in (*context.all, *context.any):
        if condition_holds(condition, facts) is True and condition.fact not in held:
            value = facts.get(condition.fact)
            held[condition.fact] = value if not isinstance(value, list) else list(value)
    return tuple(held.items())
