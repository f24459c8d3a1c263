"""Which of a unit's conditions hold for a case, with the patient's value: the "why it
applies" shown beside each plan item (BCLC B ✓, Child-Pugh score 6 ✓)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clinical.applicability import condition_holds
from clinical.rules import Context


def held_conditions(context: Context, facts: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """(fact, the patient's value) for every condition of the context that holds, in the
    unit's order, each fact once."""
    held: dict[str, Any] = {}
    for condition in (*context.all, *context.any):
        if condition_holds(condition, facts) is True and condition.fact not in held:
            value = facts.get(condition.fact)
            held[condition.fact] = value if not isinstance(value, list) else list(value)
    return tuple(held.items())


def failed_conditions(
    context: Context, facts: Mapping[str, Any]
) -> tuple[tuple[str, str, Any, Any, str], ...]:
    """Why a unit does not apply: (fact, operator, the value the unit needs, the patient's
    value, "all" or "any") for every condition of ``all`` that is false, and for every
    condition of ``any`` when none of them holds (each is then false or unknown). Empty when
    the unit applies or cannot be decided."""
    failed: list[tuple[str, str, Any, Any, str]] = []

    def row(condition: Any, group: str) -> tuple[str, str, Any, Any, str]:
        value = facts.get(condition.fact)
        return (
            condition.fact,
            condition.op,
            list(condition.value) if isinstance(condition.value, list | tuple) else condition.value,
            list(value) if isinstance(value, list) else value,
            group,
        )

    for condition in context.all:
        if condition_holds(condition, facts) is False:
            failed.append(row(condition, "all"))
    if context.any:
        truths = [condition_holds(c, facts) for c in context.any]
        if not any(t is True for t in truths) and any(t is False for t in truths):
            failed += [
                row(c, "any") for c, t in zip(context.any, truths, strict=True) if t is False
            ]
    return tuple(failed)
