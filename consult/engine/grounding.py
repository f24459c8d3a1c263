"""Grounding (a citation must name a unit retrieved for that role) and the evidence tree
(question → hypothesis → analysis → evidence, Tree-of-Reasoning)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clinical import lexicon
from clinical.vocab import ComponentRole
from consult.engine.drug_monitoring import gives_any
from consult.engine.matching import REFERENCE_MODALITIES, given
from consult.engine.protocols import Evidence
from consult.engine.schemas import ProposedComponent, RoleReport


def supports(unit: Evidence, component: ProposedComponent) -> bool:
    """Whether a cited unit can support this plan item: it applies to the patient and it is
    about the item - a therapy unit that gives one of its drugs (by generic or brand name,
    regimen or class: ``lexicon``), or, for an item without drugs, a therapy unit of the same
    modality (a resection is not backed by the chemoembolisation unit); a safety or
    surveillance unit only backs an item it names (a contraindication is no evidence for
    giving the drug)."""
    if unit.applies is not True:
        return False
    action = unit.action
    if action.get("type") == "therapy":
        modality = str(action.get("modality") or "")
        theirs = lexicon.given(
            [str(a) for a in action.get("agents") or []],
            str(action.get("description") or ""),
            read_description=modality not in REFERENCE_MODALITIES,
        )
        mine = given(component)
        if mine.drugs or mine.open_classes:
            return any(theirs.gives(d) for d in mine.drugs) or any(
                theirs.gives_class(c) for c in mine.open_classes
            )
        return modality == component.modality
    return action.get("type") != "safety"


def _joins_as_its_unit_says(component: ProposedComponent, cited: Sequence[Evidence]) -> None:
    """A member's item takes its place in a pathway from the therapy step it cites, whoever
    proposed it, as the guideline engine's items do (guideline.component_from_unit): whether
    it is an option or an adjunct (oncofertility counselling goes with a pathway, never leads
    one), its guideline preference, the pathways it follows (radiotherapy after surgery), the
    preferences that decline it and the agents that can stand in for one another. Care that
    follows the drugs (a unit with ``with_agents``: antiemetics, G-CSF) joins as an adjunct of
    the drugs it names, one per care class. The member's own words stay: the description, the
    drugs, the dose adjustments."""
    for unit in cited:
        action = unit.action
        if action.get("type") != "therapy":
            continue
        # Read from the unit's action as stored (a curated unit may carry only some fields).
        with_agents = [str(a) for a in action.get("with_agents") or ()]
        component.adjunct = action.get("role") == "adjunct" or bool(with_agents)
        component.preference = int(action.get("preference") or component.preference)
        component.with_modalities = (
            list(action.get("with_modalities") or ()) or component.with_modalities
        )
        component.declined_if = list(
            dict.fromkeys([*component.declined_if, *(action.get("declined_if") or ())])
        )
        component.interchangeable = component.interchangeable or [
            [str(a) for a in group] for group in action.get("interchangeable") or ()
        ]
        if with_agents:
            component.with_agents = with_agents
            component.care_class = str(action.get("care_class") or "")
        return


def ground_report(
    report: RoleReport, evidence: Sequence[Evidence]
) -> tuple[RoleReport, list[dict[str, Any]]]:
    """Strip citations of units the role was not given, and say which were stripped. Only
    cited, retrieved units stay in the consultation's evidence memory."""
    allowed = {e.unit_id for e in evidence}
    ungrounded: list[dict[str, Any]] = []
    grounded = report.model_copy(deep=True)
    for index, claim in enumerate(grounded.claims):
        bad = [ref for ref in claim.evidence if ref not in allowed]
        if bad:
            ungrounded.append({"claim": index, "text": claim.text, "cited": bad})
            claim.evidence = [ref for ref in claim.evidence if ref in allowed]
    units = {e.unit_id: e for e in evidence}
    for component in grounded.components:
        bad = [
            ref
            for ref in component.evidence
            if ref not in allowed or not supports(units[ref], component)
        ]
        if bad or not component.evidence:
            ungrounded.append({"component": component.description, "cited": bad})
            component.evidence = [ref for ref in component.evidence if ref not in bad]
        _joins_as_its_unit_says(component, [units[ref] for ref in component.evidence])
    # Care for drugs the report gives nowhere (antiemetics beside an endocrine therapy) could
    # join none of its pathways: it is left out, not carried through the reviews.
    treatments = [
        c.model_copy(update={"role": ComponentRole.PRIMARY})
        for c in grounded.components
        if not c.with_agents
    ]
    grounded.components = [
        c for c in grounded.components if not c.with_agents or gives_any(c.with_agents, treatments)
    ]
    for constraint in grounded.constraints:
        constraint.evidence = [ref for ref in constraint.evidence if ref in allowed]
    for proposal in grounded.monitoring:
        proposal.evidence = [ref for ref in proposal.evidence if ref in allowed]
    return grounded, ungrounded


def tree_nodes(
    role: str,
    round_no: int,
    report: RoleReport,
    evidence: Sequence[Evidence],
    ungrounded: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    memory = {e.unit_id: e for e in evidence}
    bad_claims = {u["claim"] for u in ungrounded if "claim" in u}
    bad_components = {u["component"] for u in ungrounded if "component" in u}
    root = f"r{round_no}.{role}.h"
    nodes: list[dict[str, Any]] = [
        {
            "id": root,
            "parent": "question",
            "kind": "hypothesis",
            "text": report.conclusion,
            "refs": [],
            "author": role,
            "status": "proposed",
        }
    ]

    def evidence_nodes(parent: str, refs: Sequence[str]) -> None:
        for j, ref in enumerate(refs):
            unit = memory[ref]
            nodes.append(
                {
                    "id": f"{parent}.e{j}",
                    "parent": parent,
                    "kind": "evidence",
                    "text": unit.title,
                    "author": role,
                    "status": "supported",
                    "refs": [
                        {
                            "unit_id": unit.unit_id,
                            "anchor": unit.anchor,
                            "version": unit.version,
                            "version_id": unit.version_id,
                            "source": unit.source,
                            "grade": unit.grade,
                        }
                    ],
                }
            )

    for i, claim in enumerate(report.claims):
        node = f"{root}.c{i}"
        nodes.append(
            {
                "id": node,
                "parent": root,
                "kind": "analysis",
                "text": claim.text,
                "refs": [],
                "author": role,
                "status": "contested"
                if i in bad_claims
                else ("supported" if claim.evidence else "proposed"),
            }
        )
        evidence_nodes(node, claim.evidence)
    for i, component in enumerate(report.components):
        node = f"{root}.p{i}"
        nodes.append(
            {
                "id": node,
                "parent": root,
                "kind": "analysis",
                "text": f"Proposes {component.description}",
                "refs": [],
                "author": role,
                "status": "contested" if component.description in bad_components else "supported",
            }
        )
        evidence_nodes(node, component.evidence)
    return nodes
