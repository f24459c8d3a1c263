"""Whether a safety rule targets a plan component: by drug name or class, or by modality."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from clinical import lexicon
from clinical.rules import SafetyAction
from consult.engine.schemas import ProposedComponent

# Care that goes alongside a treatment: its description names the treatment it accompanies
# ("entecavir from before the first anti-CD20 dose"), so only its listed agents count.
REFERENCE_MODALITIES = ("antiviral", "supportive", "referral", "surveillance")


def given(component: ProposedComponent) -> lexicon.Given:
    """What a plan item gives: its agents and, for a treatment, what its description names
    (brand names, regimens, class phrases), less what it names only to exclude."""
    return lexicon.given(
        component.agents,
        component.description,
        read_description=component.modality not in REFERENCE_MODALITIES,
        notes=component.dose_adjustments,
    )


def drug_key(
    component: ProposedComponent,
) -> tuple[str, frozenset[str], frozenset[str]]:
    """Two components with the same key (modality, drugs and dose adjustments,
    case-insensitive, brand and generic names alike) are one plan item, whatever their
    wording. A reduced-dose regimen is never folded into the full-dose one."""
    names: set[str] = set()
    for agent in component.agents:
        drugs = lexicon.given([agent], "", read_description=False).drugs
        names |= drugs or {agent.casefold()}
    return (
        component.modality,
        frozenset(names),
        frozenset(_norm(d) for d in component.dose_adjustments),
    )


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("-", " ").split())


def _names(rule_agent: str, gives: lexicon.Given, texts: Sequence[str]) -> bool:
    resolved = lexicon.resolve(rule_agent)
    if resolved is None:
        # A phrase the lexicon does not know ("full dose", "transplant"): by its words.
        return any(lexicon.written(rule_agent, text) for text in texts)
    drugs, classes = resolved
    return any(gives.gives(d) for d in drugs) or any(gives.gives_class(c) for c in classes)


def agents_overlap(rule_agents: Iterable[str], component: ProposedComponent) -> list[str]:
    """The rule agents the component gives: by generic or brand name, as a member of a class
    the rule or the component names ("anti-PD-1", "checkpoint inhibitor"), or within a regimen
    ("R-CHOP"); a negated mention ("anthracycline-free", "in place of doxorubicin") is not
    giving the drug."""
    gives = given(component)
    texts = list(component.agents)
    if component.modality not in REFERENCE_MODALITIES:
        texts.append(component.description)
    return [agent for agent in rule_agents if _names(agent, gives, texts)]


def targets(rule: SafetyAction, component: ProposedComponent) -> list[str]:
    """What of the component a safety rule restricts (agent names or the modality). A rule
    about systemic therapy also concerns drugs given within another modality (the
    chemotherapy of chemoradiation)."""
    matched = agents_overlap(rule.agents, component)
    modalities = rule.modalities
    if component.modality in modalities:
        matched.append(str(component.modality))
    elif "systemic" in modalities and component.modality not in REFERENCE_MODALITIES:
        gives = given(component)
        if gives.drugs or gives.open_classes:
            matched.append("systemic")
    return matched


def addressed(rule: SafetyAction, component: ProposedComponent) -> str:
    """The phrase of an alternative's ``when`` that addresses the rule ("after delivery" for
    a pregnancy rule): such an alternative keeps the drug for when the contraindication no
    longer holds, and is never the pathway. "" when it does not."""
    if component.role != "alternative" or not component.when:
        return ""
    when = _norm(component.when)
    for phrase in rule.addressed_by:
        if _norm(phrase) in when:
            return phrase
    return ""


def norm_name(text: str) -> str:
    return " ".join(text.casefold().split())


def _names_agent(rule_name: str, agent: str) -> bool:
    gives = lexicon.given([agent], "", read_description=False)
    return _names(rule_name, gives, [agent])


def substitution(
    component: ProposedComponent,
    names: Sequence[str],
    rule: SafetyAction | None = None,
) -> list[str] | None:
    """The agents to withdraw when every agent the rule names has an interchangeable partner
    the rule leaves alone (cisplatin -> carboplatin), or the rule ``omit``s the agent and the
    regimen goes on without it (vincristine in Charcot-Marie-Tooth disease); None when the
    whole item must go."""
    if component.modality in names or "systemic" in names:
        return None
    withdraw: list[str] = []
    for name in names:
        matched = [a for a in component.agents if _names_agent(name, a)]
        if not matched:
            return None  # named only in the description: nothing to withdraw it from
        withdraw.extend(a for a in matched if a not in withdraw)
    if rule is not None and rule.omits():
        remaining = [a for a in component.agents if a not in withdraw]
        return withdraw if remaining else None
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
