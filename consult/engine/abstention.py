"""Abstention with content: when the case is outside what the knowledge base models, the plan
says so first and does not present the nearest standard pathway as the recommendation.

The case's situations (clinical/calculators/situations.py) are read against the coverage map
of the units the retriever gave the engine (clinical/coverage.py). When one is not covered -
a variant histology, a site that needs other drugs, an emergency, a newer biopsy that reads
another histology, a transformation, a collision tumour - the plan's pathway becomes the
immediate steps and referrals the knowledge base writes for it (each a unit with its source,
already through the safety gate), it lists what the board must decide and whom it involves,
and names the nearest standard pathway only as not recommended here. Never silent
surveillance. The guideline engine and the LLM path both end in the same assembly, so both
honour it. Pure Python.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from clinical.calculators.situations import Situation, recognise
from clinical.coverage import UnitRef, coverage_map, uncovered
from clinical.plan import Abstention, AbstentionItem, AbstentionSituation, PlanComponent
from clinical.vocab import ComponentRole
from consult.engine.protocols import Evidence

# Emergencies first: their steps cannot wait for the board.
_KIND_ORDER: Final = {
    "emergency": 0,
    "site": 1,
    "histology_change": 2,
    "transformation": 3,
    "collision": 4,
    "histology_variant": 5,
}
_NOT_CHECKED: Final = "not yet checked by the safety gate: check before giving"
# Where a situation was read, in words.
_WHERE: Final = {
    "notes": "the notes",
    "diagnosis.histology": "the histology",
    "diagnosis.subtype": "the histological subtype",
    "index_lesion.description": "the lesion description",
    "patient.comorbidities": "the comorbidities",
    "organ_function.autoimmune_disease": "the autoimmune-disease field",
}


def _where(source: str) -> str:
    return _WHERE.get(source, "the case record")


@dataclass(frozen=True)
class Outcome:
    """What the plan becomes when it abstains."""

    abstention: Abstention
    components: list[PlanComponent]
    summary: str


def _ref(unit: Evidence) -> UnitRef:
    return UnitRef(
        key=unit.unit_id, cancer_type=unit.cancer_type, kind=unit.kind, content=unit.content
    )


def _situation_ids(unit: Evidence) -> set[str]:
    ids: set[str] = set()
    for condition in _ref(unit).conditions:
        if condition.get("fact") == "derived.situations":
            value = condition.get("value")
            ids.update(str(v) for v in (value if isinstance(value, list | tuple) else [value]))
    return ids


def _quote(situation: Situation) -> str:
    phrase = " ".join(situation.phrase.split())
    if len(phrase) > 160:
        phrase = phrase[:157] + "..."
    return f"{situation.label} ('{phrase}', in {_where(situation.source)})"


def _reason(outside: Sequence[Situation], case: Mapping[str, Any]) -> str:
    reason = "Outside the knowledge base: " + "; ".join(_quote(s) for s in outside) + "."
    changed = [s for s in outside if s.kind in ("histology_change", "transformation")]
    if changed:
        diagnosis = case.get("diagnosis") if isinstance(case.get("diagnosis"), Mapping) else {}
        recorded = (diagnosis or {}).get("histology") or "not recorded"
        reason += (
            f" Two readings of the case point to different situations: the recorded histology "
            f"is '{recorded}', the newer finding reads otherwise."
        )
    return reason


def abstain(
    *,
    case: Mapping[str, Any],
    units: Sequence[Evidence],
    components: Sequence[PlanComponent],
    removed: Collection[str] = (),
) -> Outcome | None:
    """The abstention, or None when every situation of the case is covered.

    ``units``: the therapy steps the engine saw (applicable and considered); ``components``:
    the plan's components after the safety gate; ``removed``: the descriptions the gate took
    out (a step it removed is not put back)."""
    cancer = str(case.get("cancer_type") or "")
    situations = recognise(case)
    if not situations:
        return None
    coverage = coverage_map(_ref(u) for u in units).get(cancer)
    outside = sorted(uncovered(situations, coverage), key=lambda s: _KIND_ORDER.get(s.kind, 9))
    if not outside:
        return None
    ids = {s.id for s in outside}
    steps = [
        u
        for u in units
        if u.applies is True and _ref(u).is_situation_step and _situation_ids(u) & ids
    ]
    # The steps in the order of the situations they are for (emergencies first).
    rank = {s.id: i for i, s in enumerate(outside)}
    steps.sort(
        key=lambda u: (
            min(rank.get(i, 99) for i in _situation_ids(u) or {""}),
            u.therapy.preference if u.therapy is not None else 9,
            u.unit_id,
        )
    )
    step_ids = {u.unit_id for u in steps}
    kept: list[PlanComponent] = []
    nearest: list[str] = []
    for component in components:
        if step_ids & set(component.evidence):
            kept.append(component.model_copy(deep=True))
        elif component.role is ComponentRole.PRIMARY:
            nearest.append(component.description)
    present = {e for c in kept for e in c.evidence}
    for unit in steps:
        step = unit.therapy
        if unit.unit_id in present or step is None or step.description in removed:
            continue
        # A step no member proposed (an LLM seat left it out): added from its unit; a drug in
        # it has not been through the gate, and says so.
        kept.append(
            PlanComponent(
                modality=step.modality,
                description=step.description,
                agents=list(step.agents),
                evidence=[unit.unit_id],
                adjunct=True,
                conditions=[_NOT_CHECKED] if step.agents else [],
            )
        )
    kept.sort(key=lambda c: next((i for i, u in enumerate(steps) if u.unit_id in c.evidence), 99))
    for order, component in enumerate(kept, start=1):
        component.role, component.order, component.rank, component.when = (
            ComponentRole.PRIMARY,
            order,
            None,
            "",
        )
    decides = [
        AbstentionItem(text=text, unit=u.unit_id)
        for u in steps
        if u.therapy is not None
        for text in u.therapy.board_decides
    ]
    specialists = list(
        dict.fromkeys(s for u in steps if u.therapy is not None for s in u.therapy.specialists)
    )
    covered_ids = {s.id for s in situations} - ids
    abstention = Abstention(
        reason=_reason(outside, case),
        emergency=any(s.kind == "emergency" for s in outside),
        situations=[
            AbstentionSituation(
                id=s.id,
                kind=s.kind,
                label=s.label,
                phrase=" ".join(s.phrase.split())[:600],
                source=s.source,
                where=_where(s.source),
                covered=s.id in covered_ids,
            )
            for s in [*outside, *(s for s in situations if s.id in covered_ids)]
        ],
        immediate_steps=[
            AbstentionItem(text=c.description, unit=(c.evidence or [""])[0]) for c in kept
        ],
        board_decides=decides,
        specialists=specialists,
        nearest_pathway=list(dict.fromkeys(nearest)),
    )
    return Outcome(abstention=abstention, components=kept, summary=summary(abstention))


def summary(abstention: Abstention) -> str:
    """The plan's answer when it abstains: what was recognised first, then what to do now,
    what the board decides and whom it involves, and the pathway it does not recommend."""
    parts = [
        abstention.reason,
        "The knowledge base has no pathway for this situation, so no "
        "treatment pathway is recommended.",
    ]
    if abstention.immediate_steps:
        label = (
            "Immediate steps, safe whatever the final plan"
            if abstention.emergency
            else ("Before any treatment")
        )
        parts.append(f"{label}: " + "; ".join(s.text for s in abstention.immediate_steps) + ".")
    if abstention.board_decides:
        parts.append(
            "The board decides: " + "; ".join(d.text for d in abstention.board_decides) + "."
        )
    if abstention.specialists:
        parts.append("Involve: " + ", ".join(abstention.specialists) + ".")
    if abstention.nearest_pathway:
        parts.append(
            "Not recommended here: the nearest standard pathway of the knowledge base ("
            + "; ".join(abstention.nearest_pathway)
            + "), which was written for the common situation; the board decides whether any "
            "of it applies."
        )
    text = " ".join(parts)
    return text if len(text) <= 4000 else text[:3997] + "..."
