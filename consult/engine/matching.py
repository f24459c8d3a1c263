"""Whether a safety rule targets a plan component: by drug name or class, or by modality."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from consult.engine.schemas import ProposedComponent

SEVERITY_RISK = {"critical": 1.0, "major": 0.7, "minor": 0.3}
VETO_SEVERITIES = ("critical", "major")


def vetoes(action: Mapping[str, Any]) -> bool:
    """Whether a safety action removes the plan items it targets: a "remove" rule of critical
    or major severity. A minor "remove" rule only conditions them. The one rule used by the
    weighted consensus, the safety gate, and Safety's review and vote, so that they agree.
    (The knowledge base requires a severity; a rule without one counts as major, as it
    always has in the gate: safety first.)"""
    severity = action.get("severity") or "major"
    return action.get("effect") == "remove" and severity in VETO_SEVERITIES


def drug_key(
    component: ProposedComponent,
) -> tuple[str, frozenset[str], frozenset[str]]:
    """Two components with the same key (modality, drugs and dose adjustments,
    case-insensitive) are one plan item, whatever their wording. A reduced-dose regimen is
    never folded into the full-dose one."""
    return (
        component.modality,
        frozenset(a.casefold() for a in component.agents),
        frozenset(_norm(d) for d in component.dose_adjustments),
    )


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("-", " ").split())


def agents_overlap(rule_agents: Iterable[str], component: ProposedComponent) -> list[str]:
    """Rule agents that name one of the component's agents (either way round, so a class name
    such as "anti-PD-1" in the rule and "pembrolizumab (anti-PD-1)" in the plan both match)."""
    names = [_norm(a) for a in component.agents] + [_norm(component.description)]
    hits = []
    for agent in rule_agents:
        wanted = _norm(agent)
        if wanted and any(
            wanted in name or (name and name in wanted and len(name) > 3) for name in names
        ):
            hits.append(agent)
    return hits


def targets(action: Mapping[str, Any], component: ProposedComponent) -> list[str]:
    """What of the component a safety action restricts (agent names or the modality)."""
    matched = agents_overlap(action.get("agents") or [], component)
    if component.modality in (action.get("modalities") or []):
        matched.append(component.modality)
    return matched


def norm_name(text: str) -> str:
    return " ".join(text.casefold().split())


def _names_agent(rule_name: str, agent: str) -> bool:
    wanted, name = norm_name(rule_name), norm_name(agent)
    return bool(wanted) and (wanted in name or (len(name) > 3 and name in wanted))


def substitution(component: ProposedComponent, names: Sequence[str]) -> list[str] | None:
    """The agents to withdraw when every agent the rule names has an interchangeable partner
    the rule leaves alone (cisplatin -> carboplatin); None when the whole item must go."""
    if component.modality in names:
        return None
    withdraw: list[str] = []
    for name in names:
        matched = [a for a in component.agents if _names_agent(name, a)]
        if not matched:
            return None  # named only in the description: nothing to withdraw it from
        withdraw.extend(a for a in matched if a not in withdraw)
    for agent in withdraw:
        partners = [
            other
            for group in component.interchangeable
            if agent in group
            for other in group
            if other not in withdraw
        ]
        if not partners:
            return None
    return withdraw
