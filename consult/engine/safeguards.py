"""The knowledge base's safety rules inside the deliberation, whatever the members say.

An LLM seat may agree to a contraindicated drug: the deterministic rules of its domain still
object (in its cross-review of Treatment and in its vote), with their reasons, and Treatment
must answer them in the next round. And when the members propose nothing the safety gate lets
lead the pathway, the plan falls back to the next safe option the knowledge base offers (the
guideline engine's arrangement of the applicable therapy steps) instead of abstaining, and
says so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from clinical.vocab import ComponentRole
from consult.engine import guideline
from consult.engine.consensus import conflict_record
from consult.engine.context import ReviewInput, RoleInput, VoteInput
from consult.engine.gate import GateOutcome, safety_gate
from consult.engine.matching import given
from consult.engine.pathway import is_adjunct
from consult.engine.protocols import Evidence
from consult.engine.schemas import CrossReview, ProposedComponent, Vote

# Roles whose review or vote is not a safety judgement.
NOT_SAFETY = ("diagnostic", "treatment", "monitoring")
FALLBACK_NOTE = (
    "Offered by the knowledge base: no option the members proposed could lead the pathway "
    "(ruled out, without supporting evidence, or waiting for a precondition)"
)


def _joined(first: str, second: str) -> str:
    if not first.strip() or first.strip() in ("No objection.", "Looks right."):
        return second
    if second in first:
        return first
    return f"{first} Knowledge-base rules: {second}"


def review_with_rules(inp: ReviewInput, review: CrossReview) -> CrossReview:
    """A reviewer's critique of Treatment, with the objections the rules of its domain raise
    added (the reviewer agreeing or not)."""
    if inp.target != "treatment" or inp.reviewer in NOT_SAFETY:
        return review
    rules = guideline.review(inp)
    if rules.agree:
        return review
    concerns = sorted(set(review.concerns) | set(rules.concerns))
    return CrossReview(
        agree=False,
        critique=_joined(review.critique if not review.agree else "", rules.critique),
        concerns=concerns,
        demote=sorted((set(review.demote) | set(rules.demote)) - set(concerns)),
        reasons={**review.reasons, **rules.reasons},
    )


def vote_with_rules(inp: VoteInput, vote: Vote) -> Vote:
    """A vote on the draft, turned into a request for revision when the rules of the voter's
    domain still object to it; the rules' advice goes to Treatment's next turn."""
    if inp.role in NOT_SAFETY:
        return vote
    rules = guideline.vote(inp)
    if rules.agree:
        return vote
    return Vote(
        agree=False,
        advice=_joined(vote.advice if not vote.agree else "", rules.advice),
        concerns=sorted(set(vote.concerns) | set(rules.concerns)),
    )


def _overlaps(candidate: ProposedComponent, present: Sequence[ProposedComponent]) -> bool:
    """Whether a candidate repeats an item already in the plan: the same wording, or the same
    modality with the same drugs (one option, written twice)."""
    drugs = given(candidate).drugs
    for item in present:
        if item.description == candidate.description:
            return True
        if item.modality == candidate.modality and drugs and drugs == given(item).drugs:
            return True
        if not drugs and item.modality == candidate.modality and not given(item).drugs:
            return True  # the same procedure
    return False


def gate_with_fallback(
    components: Sequence[ProposedComponent],
    units: Sequence[Evidence],
    *,
    options: Callable[[], Sequence[ProposedComponent]],
    withdrawn: Collection[str] = (),
    facts: Mapping[str, Any] | None = None,
    declines: Collection[str] = (),
    ruled_out: Sequence[ProposedComponent] = (),
    labels: Mapping[str, str] | None = None,
) -> tuple[GateOutcome, list[str]]:
    """The safety gate; when it leaves no option that can start now, the knowledge base's
    options (``options()``, not those the board ``withdrew``) join as alternatives and the gate
    runs again, so the next safe one leads. Returns the outcome and the options that joined."""
    kwargs: dict[str, Any] = {
        "facts": facts,
        "declines": declines,
        "ruled_out": ruled_out,
        "labels": labels,
    }
    # Care that follows the drugs (antiemetics, G-CSF) is chosen by the gate's own arrangement,
    # from the drugs the rules leave: every such adjunct of the knowledge base is offered to it,
    # not only the level the draft kept (cisplatin withdrawn for the kidneys leaves carboplatin,
    # which takes the moderate level, not none).
    care = [c for c in options() if c.with_agents]
    components = [_as_care(c, care) for c in components]
    present = {c.description for c in components}
    components += [
        c for c in care if c.description not in present and c.description not in withdrawn
    ]
    outcome = safety_gate(components, units, **kwargs)
    if outcome.safe_pathway:
        return outcome, []
    extra: list[ProposedComponent] = []
    for candidate in options():
        if candidate.description in withdrawn or _overlaps(candidate, [*components, *extra]):
            continue
        joined = candidate.model_copy(deep=True)
        if not is_adjunct(joined):
            joined.role = ComponentRole.ALTERNATIVE
            joined.rank = len(extra) + 1
        joined.rationale = [FALLBACK_NOTE, *joined.rationale]
        extra.append(joined)
    if not any(not is_adjunct(c) for c in extra):
        return outcome, []
    second = safety_gate([*components, *extra], units, **kwargs)
    if not second.safe_pathway and outcome.option is not None:
        return outcome, []  # the knowledge base has nothing safer either
    joined_names = {c.description for c in extra}
    used = [c.description for c in second.components if c.description in joined_names]
    leading = second.option.description if second.option is not None else "no option"
    second.conflicts.append(
        conflict_record(
            between=["coordinator", "safety_gate"],
            semantic=0.5,
            risk=0.7,
            implementation=0.5,
            resolution="No option the members proposed could lead the pathway (ruled out, "
            "without supporting evidence, or waiting for a precondition); the knowledge base's "
            f"next safe options were considered (guideline engine): {leading} leads.",
        )
    )
    return second, used


def _as_care(component: ProposedComponent, care: Sequence[ProposedComponent]) -> ProposedComponent:
    """An item citing a unit of care that follows the drugs (a Coordinator's own wording of
    it) joins as that unit says: an adjunct of the drugs it names."""
    if component.with_agents:
        return component
    unit = next((c for c in care if set(c.evidence) & set(component.evidence)), None)
    if unit is None:
        return component
    return component.model_copy(
        update={
            "adjunct": True,
            "with_agents": list(unit.with_agents),
            "care_class": unit.care_class,
            "preference": unit.preference,
        }
    )


def guideline_options(evidence: Sequence[Evidence], **role_input: Any) -> list[ProposedComponent]:
    """The guideline engine's arrangement of the applicable therapy steps (its Treatment
    role's proposal), for the fallback and the care that follows the drugs."""
    report = guideline.treatment(RoleInput(role="treatment", evidence=evidence, **role_input))
    # and every adjunct that follows drugs (``with_agents``), joined or not: the gate decides
    # which goes with the pathway it leaves
    listed = {c.description for c in report.components}
    care = [
        c
        for c in guideline.adjuncts_applying(evidence, role_input.get("labels") or {})
        if c.with_agents and c.description not in listed
    ]
    return [*report.components, *care]
