"""Drug-specific care belongs to the plan whose pathway gives the drug.

A surveillance unit may name ``agents`` (full blood counts on a CDK4/6 inhibitor, liver tests
and heart rate on an ALK inhibitor, thyroid function on a checkpoint inhibitor): its interval is
kept only when a primary step of the pathway gives one of them, by name or as a member of a
class the step names; an interval without agents is kept whatever the pathway. A supportive
adjunct's ``with_agents`` (antiemetics, G-CSF) is read the same way (``gives_any``).
Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from clinical import lexicon

_GIVES_NO_DRUG = frozenset({"surveillance", "referral"})


class _Step(Protocol):
    role: Any
    modality: Any
    agents: list[str]
    description: str
    dose_adjustments: list[str]


class _Proposal(Protocol):
    evidence: list[str]


P = TypeVar("P", bound=_Proposal)


def monitored_agents(evidence: Iterable[str], units: Mapping[str, Any]) -> list[str]:
    """The drugs the surveillance units behind a proposal are specific to (none: any plan)."""
    agents: list[str] = []
    for unit_id in evidence:
        unit = units.get(unit_id)
        action = getattr(unit, "action", None) if unit is not None else None
        if isinstance(action, Mapping):
            agents += [str(a) for a in action.get("agents") or ()]
    return agents


def gives_agent(agent: str, given: Sequence[lexicon.Given]) -> bool:
    """Whether any of ``given`` gives ``agent`` (a drug, or a class by one of its members); a
    name the lexicon does not know is given by nothing."""
    resolved = lexicon.resolve(agent)
    if resolved is None:
        return False
    drugs, classes = resolved
    return any(
        any(g.gives(d) for d in drugs) or any(g.gives_class(c) for c in classes) for g in given
    )


def step_gives(entry: str, step: lexicon.Given, text: str) -> bool:
    """Whether one step gives ``entry``: a drug or class, "a + b" (all of them, in this one
    step: an anthracycline with cyclophosphamide), or words the lexicon does not know
    ("dose-dense"), matched as written in the step's description."""
    parts = [p.strip() for p in entry.split(" + ")] if " + " in entry else [entry.strip()]
    for part in parts:
        if lexicon.resolve(part) is not None:
            if not gives_agent(part, [step]):
                return False
        elif not lexicon.written(part, text):
            return False
    return True


def entries_given(entries: Iterable[str], steps: Sequence[_Step]) -> list[str]:
    """The ``entries`` a primary step of ``steps`` that gives drugs gives. Supportive steps do
    not count: care is triggered by the treatment, not by other care."""
    treating = [
        (step, given)
        for step, given in _given_by(steps)
        if str(getattr(step.modality, "value", step.modality)) != "supportive"
    ]
    return [
        entry
        for entry in entries
        if any(step_gives(entry, given, step.description) for step, given in treating)
    ]


def gives_any(entries: Iterable[str], steps: Sequence[_Step]) -> bool:
    """Whether a primary step of ``steps`` that gives drugs gives one of ``entries``."""
    return bool(entries_given(entries, steps))


def _given_by(steps: Sequence[_Step]) -> list[tuple[_Step, lexicon.Given]]:
    return [
        (s, lexicon.given(s.agents, s.description, notes=s.dose_adjustments))
        for s in steps
        if str(getattr(s.role, "value", s.role)) == "primary"
        # a surveillance or referral step that names a class ("while a CNS-active ALK
        # inhibitor is given") gives no drug
        and str(getattr(s.modality, "value", s.modality)) not in _GIVES_NO_DRUG
    ]


def for_pathway(
    proposals: Sequence[P], steps: Sequence[_Step], units: Mapping[str, Any]
) -> list[P]:
    """The proposals that belong to a plan with these steps: drug-specific ones only when a
    primary step gives the drug."""
    given = [g for _, g in _given_by(steps)]
    kept: list[P] = []
    for proposal in proposals:
        agents = monitored_agents(proposal.evidence, units)
        if not agents or any(gives_agent(a, given) for a in agents):
            kept.append(proposal)
    return kept
