"""The deterministic safety gate: always runs after the Coordinator, whatever the engine.

Every published contraindication, interaction and organ-function gate of the case's cancer
type is checked against the plan items (pathway and alternatives). When a rule fires: a
critical or major "remove" takes the item out of the pathway and every alternative, and the
next safe option becomes the pathway (unless the agent it names has an interchangeable
partner in the regimen, cisplatin -> carboplatin: then only that agent is withdrawn and the
item stays, saying so); a "condition" that ``demotes`` puts the item behind
every option that is not blocked; a plain "condition" stays attached as a precondition; an
"adjust" adds the dose adjustment (with its calculated value); a "flag" warns. Each decision
leaves a conflict record with the safety-first rationale. A rule whose inputs are missing
reports "unknown" and asks for the data; it never passes silently. Only rules that concern an
item of the plan (or the patient whatever the plan) are reported.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from consult.engine.consensus import conflict_record
from consult.engine.dosing import dose_note
from consult.engine.matching import SEVERITY_RISK, norm_name, substitution, targets, vetoes
from consult.engine.pathway import arrange
from consult.engine.protocols import Evidence
from consult.engine.schemas import (
    ConflictRecord,
    Flag,
    GateResult,
    PlanComponent,
    ProposedComponent,
    RejectedOption,
)


@dataclass
class GateOutcome:
    components: list[PlanComponent]
    gates: list[GateResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    rejected: list[RejectedOption] = field(default_factory=list)
    conflicts: list[ConflictRecord] = field(default_factory=list)
    needs_data: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)


def _as_plan(component: ProposedComponent, conditions: list[str], order: int) -> PlanComponent:
    return PlanComponent(
        role=component.role,
        order=order if component.role == "primary" else None,
        rank=component.rank if component.role == "alternative" else None,
        when=component.when if component.role == "alternative" else "",
        modality=component.modality,
        description=component.description,
        agents=list(component.agents),
        dose_adjustments=list(component.dose_adjustments),
        evidence=list(component.evidence),
        conditions=conditions,
        adjunct=component.adjunct,
        rationale=list(component.rationale),
    )


def _calculated(unit: Evidence, facts: Mapping[str, Any], component: ProposedComponent) -> str:
    name = unit.action.get("calculation")
    if not name:
        return ""
    # A dose is worked out for the regimen of this item (its AUC, its mg/m2), in words.
    note = dose_note(str(name), component, facts)
    if note is not None:
        return f": {note}"
    value = facts.get(str(name))
    label = str(name).removeprefix("derived.").replace("_", " ")
    return f" [{label}: {value}]" if value is not None else f" [{label}: not calculable]"


def safety_gate(
    components: Sequence[ProposedComponent],
    safety_units: Sequence[Evidence],
    *,
    facts: Mapping[str, Any] | None = None,
    declines: Collection[str] = (),
    ruled_out: Sequence[ProposedComponent] = (),
) -> GateOutcome:
    """``ruled_out``: items the board already withdrew (a member answering an objection):
    not planned again, but the rules about them are reported, so the plan shows why."""
    facts = facts or {}
    outcome = GateOutcome(components=[])
    items = [c.model_copy(deep=True) for c in components]
    removed: dict[str, str] = {}
    demoted: dict[str, str] = {}
    # Agents the gate withdrew from an item whose interchangeable partner took their place.
    withdrawn: dict[int, set[str]] = {}
    conditions: dict[str, list[str]] = {}
    for unit in sorted(safety_units, key=lambda u: u.unit_id):
        action = unit.action
        gate = str(action.get("gate") or unit.kind)
        effect = str(action.get("effect") or "flag")
        severity = str(action.get("severity") or "major")
        advice = str(action.get("advice") or "")
        hits = {
            i: [n for n in targets(action, c) if norm_name(n) not in withdrawn.get(i, set())]
            for i, c in enumerate(items)
        }
        hits = {i: h for i, h in hits.items() if h}
        earlier = {c.description: targets(action, c) for c in ruled_out}
        earlier = {d: h for d, h in earlier.items() if h}
        # A rule matters when it targets a plan item; a flag that names no agent and no
        # modality (e.g. antiviral prophylaxis) concerns the patient whatever the plan.
        general_flag = (
            effect == "flag" and not action.get("agents") and not action.get("modalities")
        )
        if not hits and not earlier and not general_flag:
            continue
        if not hits and not general_flag and not (unit.applies is True and vetoes(action)):
            continue  # about a withdrawn item only: just the rule that ruled it out counts
        touched = sorted({name for h in [*hits.values(), *earlier.values()] for name in h})
        applies_to = [items[i].description for i in hits] + list(earlier)
        what = ", ".join(touched) or "the patient"
        outcome.cited.append(unit.unit_id)
        if unit.applies is None:
            needs = list(unit.missing)
            outcome.gates.append(
                GateResult(
                    gate=gate,
                    status="unknown",
                    unit=unit.unit_id,
                    needs=needs,
                    applies_to=applies_to,
                    detail=f"{unit.title}: cannot be checked for {what}; needs "
                    + (", ".join(needs) or "data not in the dossier"),
                )
            )
            outcome.needs_data.extend(f"{fact} (for {unit.unit_id})" for fact in needs)
            continue
        if unit.applies is False:
            outcome.gates.append(
                GateResult(
                    gate=gate,
                    status="pass",
                    unit=unit.unit_id,
                    applies_to=applies_to,
                    detail=f"{unit.title}: not triggered for {what}",
                )
            )
            continue
        # The rule fires for this patient.
        outcome.flags.append(
            Flag(
                severity=severity,  # type: ignore[arg-type]
                text=f"{unit.title}. {advice}".strip(),
                evidence=[unit.unit_id],
            )
        )
        status = "fail"
        if vetoes(action) and hits:
            substituted_only = True
            for index, names in hits.items():
                description = items[index].description
                if description in removed:
                    continue
                withdraw = substitution(items[index], names)
                if withdraw is not None:
                    item = items[index]
                    item.agents = [a for a in item.agents if a not in withdraw]
                    item.interchangeable = [
                        [a for a in group if a not in withdraw] for group in item.interchangeable
                    ]
                    withdrawn.setdefault(index, set()).update(norm_name(n) for n in names)
                    item.dose_adjustments.append(
                        f"Without {', '.join(withdraw)}: {advice} ({unit.unit_id})"
                    )
                    outcome.conflicts.append(
                        conflict_record(
                            between=["treatment", "safety"],
                            semantic=0.5,
                            risk=SEVERITY_RISK.get(severity, 0.7),
                            implementation=0.5,
                            resolution=f"Safety gate withdrew {', '.join(withdraw)} from "
                            f"{description}: {severity} {unit.kind} {unit.unit_id}; the "
                            "interchangeable agent of the regimen takes its place.",
                        )
                    )
                    continue
                substituted_only = False
                removed[description] = f"{unit.title}: {advice} ({unit.unit_id})"
                outcome.conflicts.append(
                    conflict_record(
                        between=["treatment", "safety"],
                        semantic=1.0,
                        risk=SEVERITY_RISK.get(severity, 0.7),
                        implementation=0.0,
                        resolution=f"Safety gate removed {description} ({', '.join(names)}): "
                        f"{severity} {unit.kind} {unit.unit_id}; safety takes precedence over "
                        "efficacy; the next safe option takes its place.",
                    )
                )
            if substituted_only:
                status = "pass"  # the plan keeps every item, each without the agent
        elif hits and effect in ("remove", "condition"):
            for index in hits:
                description = items[index].description
                conditions.setdefault(description, []).append(f"{advice} ({unit.unit_id})")
                if action.get("demotes"):
                    demoted.setdefault(description, advice.rstrip("."))
            outcome.conflicts.append(
                conflict_record(
                    between=["treatment", "safety"],
                    semantic=0.5,
                    risk=SEVERITY_RISK.get(severity, 0.3),
                    implementation=0.5,
                    resolution=(
                        f"{what}: waits for a precondition, the next safe option goes first: "
                        if action.get("demotes")
                        else f"Kept {what} on condition: "
                    )
                    + f"{advice} ({unit.unit_id}).",
                )
            )
        elif not hits and earlier and vetoes(action):
            status = "fail"  # already withdrawn by the board for this rule
        elif hits and effect == "adjust":
            for index in hits:
                text = f"{advice}{_calculated(unit, facts, items[index])} ({unit.unit_id})"
                if text not in items[index].dose_adjustments:
                    items[index].dose_adjustments.append(text)
            status = "pass"
        else:
            # A flag asks for an action (e.g. antiviral prophylaxis); nothing is withheld.
            status = "pass"
        outcome.gates.append(
            GateResult(
                gate=gate,
                status=status,  # type: ignore[arg-type]
                unit=unit.unit_id,
                applies_to=applies_to,
                detail=f"{unit.title}: {advice}".strip(": "),
            )
        )
    arranged = arrange(items, removed=removed, demoted=demoted, declines=declines)
    outcome.rejected = arranged.rejected
    order = 0
    for component in arranged.components:
        if component.role == "primary":
            order += 1
        outcome.components.append(
            _as_plan(component, conditions.get(component.description, []), order)
        )
    outcome.needs_data = sorted(set(outcome.needs_data))
    return outcome
