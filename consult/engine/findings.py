"""The safety gate's evaluation: one safety rule against the plan items and the patient's facts,
as a finding — what the gate must do, decided before anything is done (``gate`` applies it).

A finding says whether the rule concerns this plan at all, which items (and which of their
drugs) it targets, and its *kind*:

- ``check``: a patient-level check (the HCC liver-function gate), reported whatever it finds;
- ``clear``: the recorded facts show it does not apply to this patient (a fact that is not
  recorded never does: a rule whose only false condition is "the patient takes a QT-prolonging
  drug" on a dossier without a medication list is ``unknown``, not clear);
  ``moot`` when it is about a state the patient is known not to be in (breastfeeding, frailty):
  cited, not shown;
- ``unknown``: its inputs are missing, it cannot be checked;
- when it fires (applies to this patient), what it asks of the items it targets:
  ``veto`` (they leave the plan, lose the drug, or stay an alternative held until the
  contraindication passes), ``wait`` (they wait behind the next safe option for a
  precondition), ``precondition`` (they go ahead with the action the rule requires, which
  is not recorded as done: the test result it asks for — ``verified_by`` — is missing, or it
  has none) or ``met`` (the result it asks for is recorded),
  ``dose`` (at an adjusted dose), ``warn`` (with a warning), or ``recorded`` (the board had
  already withdrawn them, the rule is reported as the reason).

Pure: no finding changes the items; the same rule, items and facts give the same finding.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from clinical import lexicon
from clinical.applicability import condition_holds
from clinical.rules import Condition, Context, SafetyAction
from clinical.vocab import SafetyEffect
from consult.engine.matching import norm_name, targets
from consult.engine.protocols import Evidence
from consult.engine.schemas import ProposedComponent

# Facts that only concern a patient who can be pregnant or breastfeed.
REPRODUCTIVE_FACTS = (
    "patient.pregnant",
    "patient.breastfeeding",
    "patient.lactating",
    "patient.gestational_age_weeks",
)
# Above this age (and after the menopause, or for a man) the pregnancy and breastfeeding rules
# are not reported; a recorded pregnancy is always checked. The knowledge base uses the same
# age in its own pregnancy rules.
REPRODUCTIVE_AGE_LIMIT = 55

# Facts that describe a state of the patient (breastfeeding, frailty): a rule about that state
# is not shown as "passed" to a patient who is known not to be in it.
STATE_FACTS = (
    "patient.breastfeeding",
    "patient.lactating",
    "patient.frailty",
    "derived.frailty",
)


class Kind(StrEnum):
    """What the gate does with a rule (see the module's docstring)."""

    CHECK = "check"
    CLEAR = "clear"
    MOOT = "moot"
    UNKNOWN = "unknown"
    VETO = "veto"
    WAIT = "wait"
    PRECONDITION = "precondition"
    MET = "met"
    DOSE = "dose"
    WARN = "warn"
    RECORDED = "recorded"


# The kinds of a rule that fires for this patient.
FIRES = frozenset({Kind.VETO, Kind.WAIT, Kind.PRECONDITION, Kind.DOSE, Kind.WARN, Kind.RECORDED})


@dataclass(frozen=True)
class Finding:
    unit: Evidence
    rule: SafetyAction
    kind: Kind
    # plan item index -> the rule's agents (or modality) it gives, less those already withdrawn
    hits: Mapping[int, list[str]]
    # description of an item the board withdrew -> what of it the rule targets
    earlier: Mapping[str, list[str]]
    # the plan items it concerns, by description (those withdrawn by the board included)
    applies_to: list[str]
    # the drugs it was checked for, by name ("the patient" when it names none)
    what: str
    # it fires and vetoes: what it names is excluded for this patient, in any item's words
    excludes: bool
    # whether the plan shows it (a vetoing rule about nothing planned only excludes)
    reported: bool = True
    # the facts it still needs: its missing inputs (unknown), the result a precondition asks
    # for (precondition)
    missing: tuple[str, ...] = ()


def _conditions(unit: Evidence) -> list[Mapping[str, Any]]:
    context = unit.content.get("context") or {}
    return [*(context.get("all") or ()), *(context.get("any") or ())]


def cannot_be_pregnant(facts: Mapping[str, Any]) -> bool:
    """A man, a postmenopausal woman or a woman over the age limit, with no pregnancy or
    breastfeeding recorded."""
    if any(facts.get(fact) is True for fact in REPRODUCTIVE_FACTS):
        return False
    age = facts.get("patient.age_years")
    return (
        facts.get("patient.sex") == "male"
        or facts.get("patient.menopausal_status") == "postmenopausal"
        or (isinstance(age, int | float) and age > REPRODUCTIVE_AGE_LIMIT)
    )


def relevant(unit: Evidence, facts: Mapping[str, Any]) -> bool:
    """Whether a rule concerns this patient at all: a pregnancy or breastfeeding rule does not
    concern a patient who cannot be pregnant."""
    reproductive = any(c.get("fact") in REPRODUCTIVE_FACTS for c in _conditions(unit))
    return not (reproductive and cannot_be_pregnant(facts))


def concerns_patient(unit: Evidence, facts: Mapping[str, Any]) -> bool:
    """Whether a rule that does not apply is still worth showing as passed: not when it is
    about a state (breastfeeding, frailty) the patient is known not to be in."""
    for condition in _conditions(unit):
        fact = condition.get("fact")
        if fact not in STATE_FACTS:
            continue
        value = facts.get(fact)
        if value is None:
            continue
        if fact in ("patient.breastfeeding", "patient.lactating") and value is False:
            return False
        if fact.endswith("frailty") and value == "fit":
            return False
    return True


def readable(names: Sequence[str]) -> list[str]:
    """The drugs a rule was checked for, by name: the class names it also lists ("anti-PD-1")
    only when no drug of the plan is named."""
    named = [n for n in names if (found := lexicon.resolve(n)) is None or found[0]]
    return named or list(names)


def not_recorded(facts: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    return tuple(f for f in names if facts.get(f) is None or facts.get(f) == "")


def recorded_clear(unit: Evidence, facts: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """Whether a rule that does not apply is shown not to by recorded facts, and if not, the
    facts it needs. The applicability reads "present" as false when the fact is missing (a
    therapy step "if HBsAg is known"); for a safety rule a missing fact decides nothing."""
    context = Context.model_validate(unit.content.get("context") or {})

    def holds(condition: Condition) -> bool | None:
        if condition.op == "present" and facts.get(condition.fact) is None:
            return None
        return condition_holds(condition, facts)

    parts: list[bool | None] = []
    all_of = [holds(c) for c in context.all]
    parts.append(False if False in all_of else None if None in all_of else True)
    if context.any:
        any_of = [holds(c) for c in context.any]
        parts.append(True if True in any_of else None if None in any_of else False)
    if None not in parts or False in parts:
        return True, ()
    needed = [c.fact for c in (*context.all, *context.any) if holds(c) is None]
    return False, tuple(sorted(set(needed)))


def _fires(
    rule: SafetyAction,
    hits: Mapping[int, list[str]],
    earlier: Mapping[str, Any],
    facts: Mapping[str, Any],
) -> Kind:
    effect = rule.effect
    restricting = effect in (SafetyEffect.REMOVE, SafetyEffect.CONDITION)
    if rule.vetoes() and hits:
        return Kind.VETO
    if hits and restricting and rule.demotes:
        return Kind.WAIT
    if hits and restricting:
        if rule.verified_by and not not_recorded(facts, rule.verified_by):
            return Kind.MET
        return Kind.PRECONDITION
    if not hits and earlier and rule.vetoes():
        return Kind.RECORDED
    if hits and effect is SafetyEffect.ADJUST:
        return Kind.DOSE
    return Kind.WARN


def evaluate(
    unit: Evidence,
    items: Sequence[ProposedComponent],
    *,
    facts: Mapping[str, Any],
    ruled_out: Sequence[ProposedComponent] = (),
    withdrawn: Mapping[int, Collection[str]] | None = None,
) -> Finding | None:
    """The finding of one rule about the plan ``items``, or None when the rule concerns
    neither this patient nor this plan. ``withdrawn``: item index -> the drugs earlier rules
    took out of it (normalised names), which no longer count as given."""
    rule = unit.safety
    if rule is None or not relevant(unit, facts):
        return None
    withdrawn = withdrawn or {}
    excludes = unit.applies is True and rule.vetoes()
    hits = {
        i: [n for n in targets(rule, c) if norm_name(n) not in withdrawn.get(i, ())]
        for i, c in enumerate(items)
    }
    hits = {i: h for i, h in hits.items() if h}
    earlier = {c.description: targets(rule, c) for c in ruled_out}
    earlier = {d: h for d, h in earlier.items() if h}
    touched = readable(sorted({n for h in [*hits.values(), *earlier.values()] for n in h}))
    applies_to = [items[i].description for i in hits] + list(earlier)

    def finding(kind: Kind, *, reported: bool = True, missing: tuple[str, ...] = ()) -> Finding:
        return Finding(
            reported=reported,
            missing=missing,
            unit=unit,
            rule=rule,
            kind=kind,
            hits=hits,
            earlier=earlier,
            applies_to=applies_to,
            what=", ".join(touched) or "the patient",
            excludes=excludes,
        )

    if rule.check:
        return finding(Kind.CHECK)
    # A rule matters when it targets a plan item; a flag that names no agent and no modality
    # (e.g. antiviral prophylaxis) concerns the patient whatever the plan, when it fires or
    # cannot be decided. A vetoing rule about an item the board withdrew only is the reason
    # it went.
    general_flag = (
        rule.effect is SafetyEffect.FLAG
        and not rule.agents
        and not rule.modalities
        and unit.applies is not False
    )
    if not (hits or general_flag or (earlier and excludes)):
        # Not about the plan: not shown, but what a vetoing rule names stays excluded.
        return finding(Kind.VETO, reported=False) if excludes else None
    if unit.applies is None:
        return finding(Kind.UNKNOWN, missing=tuple(unit.missing))
    if unit.applies is False:
        if not concerns_patient(unit, facts):
            # a breastfeeding check for a patient who is not, frail surgery for a fit one
            return finding(Kind.MOOT)
        clear, needed = recorded_clear(unit, facts)
        return finding(Kind.CLEAR) if clear else finding(Kind.UNKNOWN, missing=needed)
    kind = _fires(rule, hits, earlier, facts)
    return finding(kind, missing=not_recorded(facts, rule.verified_by))
