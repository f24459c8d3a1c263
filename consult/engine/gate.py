"""The deterministic safety gate: always runs after the Coordinator, whatever the engine.

Every published contraindication, interaction and organ-function gate of the case's cancer
type is checked against the plan: a critical or major violation removes the offending item
(a "condition" rule keeps it with the condition attached), each decision leaves a conflict
record with the safety-first rationale, and a rule whose inputs are missing reports "unknown"
and asks for the data; it never passes silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from consult.engine.consensus import conflict_record
from consult.engine.matching import SEVERITY_RISK, targets, vetoes
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


def _as_plan(component: ProposedComponent) -> PlanComponent:
    return PlanComponent(
        modality=component.modality,
        description=component.description,
        agents=list(component.agents),
        evidence=list(component.evidence),
    )


def safety_gate(
    components: Sequence[ProposedComponent], safety_units: Sequence[Evidence]
) -> GateOutcome:
    outcome = GateOutcome(components=[])
    removed: set[int] = set()
    conditions: dict[int, list[str]] = {}
    for unit in sorted(safety_units, key=lambda u: u.unit_id):
        action = unit.action
        gate = str(action.get("gate") or unit.kind)
        effect = str(action.get("effect") or "flag")
        severity = str(action.get("severity") or "major")
        advice = str(action.get("advice") or "")
        hits = {i: targets(action, c) for i, c in enumerate(components)}
        hits = {i: h for i, h in hits.items() if h}
        # A rule matters when it targets a plan item; a flag that names no agent and no
        # modality (e.g. antiviral prophylaxis) concerns the patient whatever the plan.
        # A flag naming drugs the plan does not contain is not relevant.
        general_flag = (
            effect == "flag" and not action.get("agents") and not action.get("modalities")
        )
        relevant = bool(hits) or general_flag
        if not relevant:
            continue
        touched = ", ".join(sorted({name for h in hits.values() for name in h})) or "the plan"
        if unit.applies is None:
            needs = list(unit.missing)
            outcome.gates.append(
                GateResult(
                    gate=gate,
                    status="unknown",
                    unit=unit.unit_id,
                    needs=needs,
                    detail=f"{unit.title}: cannot be checked for {touched}; needs "
                    + (", ".join(needs) or "data not in the dossier"),
                )
            )
            outcome.needs_data.extend(f"{fact} (for {unit.unit_id})" for fact in needs)
            outcome.cited.append(unit.unit_id)
            continue
        if unit.applies is False:
            outcome.gates.append(
                GateResult(
                    gate=gate,
                    status="pass",
                    unit=unit.unit_id,
                    detail=f"{unit.title}: not triggered for {touched}",
                )
            )
            outcome.cited.append(unit.unit_id)
            continue
        # The rule applies to this patient.
        outcome.cited.append(unit.unit_id)
        outcome.flags.append(
            Flag(
                severity=severity,  # type: ignore[arg-type]
                text=f"{unit.title}. {advice}".strip(),
                evidence=[unit.unit_id],
            )
        )
        if vetoes(action) and hits:
            for index, names in hits.items():
                if index in removed:
                    continue
                removed.add(index)
                description = components[index].description
                outcome.rejected.append(
                    RejectedOption(
                        option=description, reason=f"{unit.title}: {advice} ({unit.unit_id})"
                    )
                )
                outcome.conflicts.append(
                    conflict_record(
                        between=["treatment", "safety"],
                        semantic=1.0,
                        risk=SEVERITY_RISK.get(severity, 0.7),
                        implementation=0.0,
                        resolution=f"Safety gate removed {description} ({', '.join(names)}): "
                        f"{severity} {unit.kind} {unit.unit_id}; safety takes precedence over "
                        "efficacy.",
                    )
                )
            status = "fail"
        elif hits and effect in ("remove", "condition"):
            for index in hits:
                conditions.setdefault(index, []).append(f"{advice} ({unit.unit_id})")
            outcome.conflicts.append(
                conflict_record(
                    between=["treatment", "safety"],
                    semantic=0.5,
                    risk=SEVERITY_RISK.get(severity, 0.3),
                    implementation=0.5,
                    resolution=f"Kept {touched} on condition: {advice} ({unit.unit_id}).",
                )
            )
            status = "fail"
        else:
            # A flag asks for an action (e.g. antiviral prophylaxis); nothing is withheld.
            status = "pass"
        outcome.gates.append(
            GateResult(
                gate=gate,
                status=status,  # type: ignore[arg-type]
                unit=unit.unit_id,
                detail=f"{unit.title}: {advice}".strip(": "),
            )
        )
    for index, component in enumerate(components):
        if index in removed:
            continue
        plan_component = _as_plan(component)
        plan_component.conditions = conditions.get(index, [])
        outcome.components.append(plan_component)
    outcome.needs_data = sorted(set(outcome.needs_data))
    return outcome
