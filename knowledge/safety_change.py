"""Whether a change to a safety rule strengthens or weakens it, read from the typed rule.

Pure Python over the bundle's models (no Django). The knowledge base asks it before a safety
unit (contraindication, interaction, organ-function gate) changes: a version that weakens the
published rule, or a retirement, needs a second person; a hot-fix may only add or strengthen.

It fails closed. A difference is "strengthening" only when it provably makes the gate restrict
at least as much for every patient (severity raised, effect made stronger, agents or
modalities added, ``demotes`` turned on, applicability provably broadened, ``addressed_by`` or
``rechallenge`` phrases removed, ...). Every other difference that touches what the gate does,
or what the clinician is told, is "weakening", with its reason in words.

Wording, decided deliberately: the advice is what the clinician is told to do, and the title
is printed with it on every flag, so a changed advice or title weakens unless the old words
are kept whole and something is only added (and the added words do not qualify the rule:
"unless", "except", "optional", ...); the unit's text is held to the same rule. The anchor,
grade and source are provenance: they change nothing the gate does and are neither.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from clinical.rules import Condition, Context, SafetyAction, UnitSpec
from clinical.vocab import SAFETY_KINDS, UnitCancerType

Verdict = Literal["strengthens", "weakens", "unchanged"]

SEVERITY_ORDER = {"minor": 0, "major": 1, "critical": 2}

# How strongly a rule acts on the plan, when it fires. "remove_omit" is a remove rule that
# withdraws only its agents from a regimen that goes on without them; "condition_demotes"
# keeps the option but behind the next safe one until the condition is met. Pairs missing
# from the order (a condition against an adjustment) are not comparable: changing one into
# the other is not provably stronger, so it weakens.
_STRONGER_THAN: dict[str, frozenset[str]] = {
    "remove": frozenset({"remove_omit", "condition_demotes", "condition", "adjust", "flag"}),
    "remove_omit": frozenset({"adjust", "flag"}),
    "condition_demotes": frozenset({"condition", "flag"}),
    "condition": frozenset({"flag"}),
    "adjust": frozenset({"flag"}),
    "flag": frozenset(),
}
_EFFECT_WORDS = {
    "remove": "removes the drug from the plan",
    "remove_omit": "withdraws only the drug from its regimen",
    "condition_demotes": "holds the option back until its condition is met",
    "condition": "keeps the option on a condition",
    "adjust": "keeps the drug at an adjusted dose",
    "flag": "only flags it",
}

# Added words that may qualify a rule rather than add to it: an advice that gains "unless
# the transplant team agrees" is weaker, not stronger. Deliberately broad: a false alarm only
# costs a second reader.
_QUALIFIERS = re.compile(
    r"\b(?:unless|except|exception|exceptions|exempt|optional|optionally|discretion|"
    r"disregard|ignore|ignored|waive|waived|override|overridden|instead|rather than|"
    r"not (?:required|needed|necessary|mandatory)|no longer|no need|"
    r"only if|only when|if needed|if desired|if preferred|may|can|consider|acceptable|"
    r"allowed|permitted|safe)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SafetyChange:
    """What a change does to a safety rule: ``weakens`` (reasons a second person must see
    before it takes effect) and ``strengthens`` (what it provably adds), each in words."""

    weakens: tuple[str, ...] = ()
    strengthens: tuple[str, ...] = ()

    @property
    def verdict(self) -> Verdict:
        if self.weakens:
            return "weakens"
        return "strengthens" if self.strengthens else "unchanged"

    @property
    def needs_second_person(self) -> bool:
        return bool(self.weakens)


def is_safety(unit: UnitSpec) -> bool:
    return unit.kind in SAFETY_KINDS


def classify(published: UnitSpec | None, proposed: UnitSpec | None) -> SafetyChange:
    """How ``proposed`` changes the ``published`` safety rule. ``proposed`` None is a
    retirement; ``published`` None a rule that is not live (a new one, or one retired)."""
    if proposed is None:
        if published is None:
            raise ValueError("nothing to compare: neither a published nor a proposed rule")
        return SafetyChange(
            weakens=(
                "Retiring it takes the rule out of the safety gate: no patient is checked "
                "against it any more.",
            )
        )
    if published is None:
        if is_safety(proposed):
            return SafetyChange(strengthens=("A new safety rule: nothing it replaces is live.",))
        return SafetyChange()
    if not is_safety(published):
        return SafetyChange()  # not a rule of the gate: the ordinary review applies
    if not is_safety(proposed) or not isinstance(proposed.action, SafetyAction):
        return SafetyChange(weakens=(f"It is no longer a safety rule (now a {proposed.kind}).",))
    old_action = published.action
    assert isinstance(old_action, SafetyAction)  # noqa: S101 - UnitSpec ties action to kind
    weakens: list[str] = []
    strengthens: list[str] = []
    if proposed.kind != published.kind:
        weakens.append(
            f"Its kind changes from {published.kind} to {proposed.kind}, "
            "which is not provably stronger."
        )
    _compare_cancer_type(published, proposed, weakens, strengthens)
    _compare_context(published.context, proposed.context, weakens, strengthens)
    _compare_action(old_action, proposed.action, weakens, strengthens)
    for name, old, new in (
        ("title", published.title, proposed.title),
        ("text", published.text, proposed.text),
    ):
        _compare_words(name, old, new, weakens, strengthens, counts_as_strengthening=False)
    return SafetyChange(weakens=tuple(weakens), strengthens=tuple(strengthens))


# --- parts of the unit ----------------------------------------------------------------------


def _compare_cancer_type(
    published: UnitSpec, proposed: UnitSpec, weakens: list[str], strengthens: list[str]
) -> None:
    old, new = published.cancer_type, proposed.cancer_type
    if old == new:
        return
    if new == UnitCancerType.ANY:
        strengthens.append(f"It now applies to every cancer, not only {old}.")
    else:
        weakens.append(f"Its cancer type narrows from {old} to {new}.")


def _compare_action(
    old: SafetyAction, new: SafetyAction, weakens: list[str], strengthens: list[str]
) -> None:
    if new.gate != old.gate:
        weakens.append(
            f"Its gate is renamed from {old.gate} to {new.gate} (plans report and group "
            "checks by it)."
        )
    _compare_severity(old, new, weakens, strengthens)
    _compare_effect(old, new, weakens, strengthens)
    _compare_targets(old, new, weakens, strengthens)
    _compare_set(
        "phrases that let an alternative wait for the contraindication to pass (addressed_by)",
        old.addressed_by,
        new.addressed_by,
        weakens,
        strengthens,
        more_is_stronger=False,
    )
    _compare_set(
        "drugs re-used after progression (rechallenge)",
        old.rechallenge,
        new.rechallenge,
        weakens,
        strengthens,
        more_is_stronger=False,
    )
    if new.calculation != old.calculation:
        weakens.append(
            f"The dose calculation shown with it changes from {old.calculation or 'none'} to "
            f"{new.calculation or 'none'}."
        )
    if old.check and not new.check:
        weakens.append("It is no longer a patient-level check reported on every plan.")
    elif new.check and not old.check:
        strengthens.append("It is now a patient-level check reported on every plan.")
    _compare_set(
        "facts its result states (shows)",
        old.shows,
        new.shows,
        weakens,
        strengthens,
        more_is_stronger=True,
    )
    _compare_verified_by(old, new, weakens, strengthens)
    _compare_words("advice", old.advice, new.advice, weakens, strengthens)


def _compare_verified_by(
    old: SafetyAction, new: SafetyAction, weakens: list[str], strengthens: list[str]
) -> None:
    """Without ``verified_by`` a precondition is never met from the record; with it, it is met
    once those facts are recorded: giving it one weakens, asking for more strengthens."""
    if not old.verified_by and new.verified_by:
        weakens.append(
            f"Its precondition is now met once these are recorded: {', '.join(new.verified_by)}."
        )
        return
    _compare_set(
        "facts that must be recorded before the precondition is met (verified_by)",
        old.verified_by,
        new.verified_by,
        weakens,
        strengthens,
        more_is_stronger=True,
    )


def _compare_severity(
    old: SafetyAction, new: SafetyAction, weakens: list[str], strengthens: list[str]
) -> None:
    before, after = SEVERITY_ORDER[str(old.severity)], SEVERITY_ORDER[str(new.severity)]
    if after < before:
        weakens.append(f"Severity lowered from {old.severity} to {new.severity}.")
    elif after > before:
        strengthens.append(f"Severity raised from {old.severity} to {new.severity}.")


def effect_level(action: SafetyAction) -> str:
    if action.effect == "remove":
        return "remove_omit" if action.omit else "remove"
    if action.effect == "condition":
        return "condition_demotes" if action.demotes else "condition"
    return action.effect


def _compare_effect(
    old: SafetyAction, new: SafetyAction, weakens: list[str], strengthens: list[str]
) -> None:
    before, after = effect_level(old), effect_level(new)
    if before == after:
        return
    change = f"from one that {_EFFECT_WORDS[before]} to one that {_EFFECT_WORDS[after]}"
    if before in _STRONGER_THAN[after]:
        strengthens.append(f"Its effect is stronger: {change}.")
    elif after in _STRONGER_THAN[before]:
        weakens.append(f"Its effect is weaker: {change}.")
    else:
        weakens.append(f"Its effect changes {change}, which is not provably stronger.")


def _compare_targets(
    old: SafetyAction, new: SafetyAction, weakens: list[str], strengthens: list[str]
) -> None:
    # A flag that names no agent and no modality concerns every patient it applies to,
    # whatever the plan: naming agents would narrow it to the plans that give them.
    old_general = not (old.agents or old.modalities or old.agents_from)
    new_general = not (new.agents or new.modalities or new.agents_from)
    if old_general and not new_general:
        weakens.append(
            "It concerned every patient it applies to; naming agents or modalities limits it "
            "to the plans that give them."
        )
        return
    _compare_set("agents", old.agents, new.agents, weakens, strengthens, more_is_stronger=True)
    _compare_set(
        "modalities",
        [str(m) for m in old.modalities],
        [str(m) for m in new.modalities],
        weakens,
        strengthens,
        more_is_stronger=True,
    )
    if old.agents_from != new.agents_from:
        if old.agents_from is None:
            strengthens.append(f"It now also restricts the drugs named in {new.agents_from}.")
        else:
            weakens.append(
                f"It no longer restricts the drugs named in {old.agents_from}"
                + (f" (now {new.agents_from})." if new.agents_from else ".")
            )


def _compare_set(
    what: str,
    old: Iterable[str],
    new: Iterable[str],
    weakens: list[str],
    strengthens: list[str],
    *,
    more_is_stronger: bool,
) -> None:
    before, after = set(old), set(new)
    added, removed = sorted(after - before), sorted(before - after)
    if more_is_stronger:
        if removed:
            weakens.append(f"No longer in its {what}: {', '.join(removed)}.")
        if added:
            strengthens.append(f"Added to its {what}: {', '.join(added)}.")
    else:
        if added:
            weakens.append(f"Added to its {what}: {', '.join(added)}.")
        if removed:
            strengthens.append(f"No longer in its {what}: {', '.join(removed)}.")


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _compare_words(
    name: str,
    old: str,
    new: str,
    weakens: list[str],
    strengthens: list[str],
    *,
    counts_as_strengthening: bool = True,
) -> None:
    before, after = _normal(old), _normal(new)
    if before == after:
        return
    if before and before in after:
        start = after.index(before)
        added = f"{after[:start]} {after[start + len(before) :]}".strip()
        qualifier = _QUALIFIERS.search(added)
        if qualifier is not None:
            weakens.append(
                f"Its {name} gains words that may qualify the rule ({qualifier.group(0)!r}): "
                f"{added!r}."
            )
        elif counts_as_strengthening:
            strengthens.append(f"Its {name} only gains words: {added!r}.")
        return
    weakens.append(f"Its {name} is reworded or shortened (what the clinician reads changes).")


# --- applicability --------------------------------------------------------------------------


def _value_key(value: Any) -> str:
    if isinstance(value, str):
        value = value.casefold()  # applicability compares text case-insensitively
    return json.dumps(value, sort_keys=True)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def condition_implies(old: Condition, new: Condition) -> bool:
    """True when ``new`` holds wherever ``old`` holds and is unknown only where ``old`` is: a
    relaxation of the same test on the same fact (a wider list, a looser threshold)."""
    if old.fact != new.fact:
        return False
    if old == new:
        return True
    membership = ("eq", "in")
    if old.op in membership and new.op in membership:
        return _members(old) <= _members(new)
    exclusion = ("ne", "not_in")
    if old.op in exclusion and new.op in exclusion:
        return _members(new) <= _members(old)
    if old.op == new.op == "contains_any":
        return set(map(str, old.value)) <= set(map(str, new.value))
    before, after = _number(old.value), _number(new.value)
    if before is None or after is None:
        return False
    upper = {"lt": False, "le": True}  # is the bound included
    lower = {"gt": False, "ge": True}
    if old.op in upper and new.op in upper:
        return after > before or (after == before and (upper[new.op] or not upper[old.op]))
    if old.op in lower and new.op in lower:
        return after < before or (after == before and (lower[new.op] or not lower[old.op]))
    return False


def _members(condition: Condition) -> set[str]:
    values = condition.value if condition.op in ("in", "not_in") else [condition.value]
    return {_value_key(v) for v in values}


def context_broadens(old: Context, new: Context) -> bool:
    """True when ``new`` provably applies wherever ``old`` applies, and is unknown at most
    where ``old`` was unknown or false (three-valued: see clinical.applicability).

    Every condition every patient must meet (``all``) must be a relaxation of one of the old
    ones; the old ``any`` group must be dropped or each of its conditions relaxed within the
    new one. A condition on a fact the rule did not test before is never proof: the gate
    treats some facts specially (a pregnancy rule is skipped for a patient who cannot be
    pregnant), so a new one could take the rule away from some patients. Conditions only
    ever name facts the old rule named."""
    old_facts = {c.fact for c in (*old.all, *old.any)}
    if not all(any(condition_implies(o, n) for o in old.all) for n in new.all):
        return False
    if not new.any:
        return True
    if not old.any:
        return False  # a new "at least one of" group is a new requirement
    if not all(any(condition_implies(o, n) for n in new.any) for o in old.any):
        return False
    return all(n.fact in old_facts for n in new.any)


def condition_text(condition: Condition) -> str:
    value = condition.value
    shown = ", ".join(str(v) for v in value) if isinstance(value, list) else value
    return " ".join(str(p) for p in (condition.fact, condition.op, shown) if p is not None)


def _conditions_text(conditions: Sequence[Condition]) -> str:
    return "; ".join(condition_text(c) for c in conditions) or "none"


def _compare_context(
    old: Context, new: Context, weakens: list[str], strengthens: list[str]
) -> None:
    wider, narrower = context_broadens(old, new), context_broadens(new, old)
    if not (wider and narrower):
        where = (
            f"every patient must meet: {_conditions_text(old.all)} -> "
            f"{_conditions_text(new.all)}; at least one of: {_conditions_text(old.any)} -> "
            f"{_conditions_text(new.any)}"
        )
        if wider:
            strengthens.append(f"It applies to more patients ({where}).")
        else:
            weakens.append(
                "It may apply to fewer patients, or to others: the new conditions cannot be "
                f"shown to cover everyone the old ones did ({where})."
            )
    _compare_set(
        "exceptions stated for the clinician",
        old.exceptions,
        new.exceptions,
        weakens,
        strengthens,
        more_is_stronger=False,
    )
