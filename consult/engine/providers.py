"""Who answers for a role: the guideline engine, or an LLM with the guideline engine as its
fallback when a reply stays invalid after repair (the fallback is recorded on the message)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from consult.engine import guideline, prompting
from consult.engine.accounting import fallback_text
from consult.engine.consensus import Consensus
from consult.engine.context import (
    SPECIALIST_MODALITIES,
    SPECIALISTS,
    ReviewInput,
    RoleInput,
    SynthesisInput,
    VoteInput,
)
from consult.engine.protocols import LLM, Usage
from consult.engine.schemas import (
    CoordinatorNote,
    CrossReview,
    CrossReviews,
    Synthesis,
    Vote,
    report_schema,
)

T = TypeVar("T", bound=BaseModel)
# _ask's "fallback" when the answer is one given earlier in the run (no call, no fallback).
CARRIED = "carried"
UNPOLLED_ADVICE = (
    "Not polled: the draft carries this member's items as proposed and it objected to nothing "
    "this round"
)
logger = logging.getLogger(__name__)
Delta = Callable[[str], Awaitable[None]] | None


@dataclass
class Answer:
    value: Any
    usage: Usage | None = None
    fallback: str = ""
    # The member was asked nothing new (no critique addressed to it; the same question as in an
    # earlier round): its earlier answer stands, and no LLM call was made for it.
    carried: bool = False
    # A vote not asked for: the member has nothing at stake in the draft (prompting.at_stake),
    # so its agreement is recorded by rule, with no LLM call.
    unpolled: bool = False
    # A specialist's check of Treatment's proposal made by its domain's rules, with no LLM call
    # (``by_rules``).
    unasked: bool = False


def _filled(user: dict[str, Any]) -> dict[str, Any]:
    """A user message without its empty parts (a part not sent is not available)."""
    return {k: v for k, v in user.items() if v not in (None, "", [], {})}


def by_rules(inp: ReviewInput) -> bool:
    """Whether a review is the reviewer's domain rules alone: a specialist's check of
    Treatment's proposal. Its advice is its own first-round report, written independently, and
    it is polled on the draft when the draft gives a drug its report constrains or leaves out
    an item it proposed (``prompting.at_stake``); what its rules forbid or defer is objected to
    here as an LLM reviewer's rules would object (``review_with_rules``). Safety and
    Diagnostic, whose remit is the proposal itself, are asked."""
    return inp.reviewer in SPECIALISTS and inp.target == "treatment"


class GuidelineProvider:
    name = guideline.ENGINE_NAME

    def budget_left(self) -> int | None:
        """No LLM, no budget."""
        return None

    async def report(self, inp: RoleInput, on_delta: Delta = None) -> Answer:
        return Answer(guideline.role_report(inp))

    async def review(self, inp: ReviewInput) -> Answer:
        return Answer(guideline.review(inp))

    async def review_many(self, inps: Sequence[ReviewInput]) -> list[Answer]:
        return [Answer(guideline.review(inp)) for inp in inps]

    async def synthesize(
        self, inp: SynthesisInput, consensus: Consensus, conflicts_text: str
    ) -> Answer:
        return Answer(
            guideline.synthesis(
                inp,
                components=consensus.components,
                rejected=consensus.rejected,
                intent=consensus.intent,
                confidence=consensus.confidence,
                conflicts_text=conflicts_text,
            )
        )

    async def vote(self, inp: VoteInput) -> Answer:
        return Answer(guideline.vote(inp))


def _agrees(value: BaseModel) -> bool:
    """Whether an answer raises no objection (a report or a note has no say: it agrees)."""
    if isinstance(value, CrossReviews):
        return all(r.agree for r in value.reviews.values())
    return bool(getattr(value, "agree", True))


def _usage(usage: Any) -> Usage:
    """The client's usage record as the engine keeps it."""
    return Usage(
        model=usage.model,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        latency_ms=usage.latency_ms,
        cost_usd=usage.cost_usd,
    )


class LLMProvider:
    """Every role through the LLM. Any failure of a turn (invalid after repair, endpoint
    unavailable, budget spent) falls back to the guideline engine for that turn only."""

    def __init__(
        self,
        llm: LLM,
        *,
        fallback: GuidelineProvider | None = None,
        addenda: Mapping[str, str] | None = None,
    ) -> None:
        self.llm = llm
        self.fallback = fallback or GuidelineProvider()
        # Prompt name -> the admin-approved addendum in force when the consultation started.
        self.addenda = dict(addenda or {})
        self.name = f"llm:{llm.model_for('coordinator')}"
        # Every question answered in this run (by prompt, role, schema and content, the round
        # number aside) and its answer: a review of an unchanged report, or a vote on an
        # unchanged draft by a member whose report is unchanged, is the same question again;
        # an agreement stands, an objection is asked again.
        self._answered: dict[str, BaseModel] = {}

    def budget_left(self) -> int | None:
        """The LLM tokens this consultation may still spend (None: not known)."""
        left = getattr(self.llm, "budget_left", None)
        return left() if callable(left) else None

    def _carried(self, key: str, schema: type[T]) -> T | None:
        value = self._answered.get(key)
        return value if isinstance(value, schema) else None

    async def _ask(
        self,
        role: str,
        prompt: str,
        user: dict[str, Any],
        schema: type[T],
        on_delta: Delta = None,
        sections: Sequence[str] = (),
    ) -> tuple[T | None, Usage | None, str]:
        key = json.dumps(
            [prompt, role, schema.__name__, {k: v for k, v in user.items() if k != "round"}],
            sort_keys=True,
            default=str,
        )
        carried = self._carried(key, schema)
        if carried is not None:
            return carried, None, CARRIED
        system = prompting.system_prompt(prompt, role, self.addenda, sections)
        started = time.monotonic()
        try:
            value, usage = await self.llm.complete_structured(
                role=role,
                system=system,
                user=json.dumps(user, ensure_ascii=False, default=str, separators=(",", ":")),
                schema=schema,
                on_delta=on_delta,
            )
        except Exception as exc:  # noqa: BLE001 - any failed turn falls back, and says why
            logger.warning("llm turn failed for %s: %s", role, type(exc).__name__)
            # A failed turn still cost what its attempts used (the client attaches the tally).
            spent = getattr(exc, "usage", None)
            return (
                None,
                _usage(spent) if spent else Usage(latency_ms=(time.monotonic() - started) * 1000),
                fallback_text(type(exc).__name__),
            )
        if not isinstance(value, schema):
            return None, _usage(usage), fallback_text("UnexpectedReply")
        if _agrees(value):
            # An objection is asked again: the round that follows exists to answer it.
            self._answered[key] = value
        return value, _usage(usage), ""

    @staticmethod
    def _answer(value: Any, usage: Usage | None, fallback: str) -> Answer:
        if fallback == CARRIED:
            return Answer(value, None, "", carried=True)
        return Answer(value, usage, fallback)

    async def report(self, inp: RoleInput, on_delta: Delta = None) -> Answer:
        if inp.round >= 2 and inp.previous is not None and not prompting.objections(inp.critiques):
            # Nothing was asked of this member since its last report (no objection in a review,
            # no vote advice; an agreement asks nothing): the report stands, as a tumour board
            # member who is not challenged does not speak again. The round's residual context
            # reaches it when it is challenged.
            return Answer(inp.previous, None, "", carried=True)
        # Stable first (who, the case, the evidence: the same in every round), the round last.
        # Who is asked is the system prompt's "ROLE:" line; the user message is the case.
        user = {
            "specialist_reason": inp.reason,
            "case": prompting.case_for(inp.role, inp.case),
            "derived_staging": prompting.compact(dict(inp.staging)),
            **prompting.evidence_parts(
                prompting.bearing(inp.evidence, inp.therapies),
                prompting.disputed_ids(inp.previous, inp.critiques),
                actions=SPECIALIST_MODALITIES.get(inp.role, True),
            ),
            "round": inp.round,
            "your_previous_report": (
                prompting.report_brief(inp.previous) if inp.previous is not None else None
            ),
            "residual_contexts": prompting.residual_brief(inp.residuals),
            "critiques_received": prompting.critiques_brief(inp.critiques),
            "similar_past_cases": [
                prompting.compact({"label": p.label, "summary": p.summary, "lesson": p.lesson})
                for p in inp.experience
            ],
        }
        user = _filled(user)
        prompt = inp.role if inp.role in prompting.ROLE_PROMPTS else "specialist"
        value, usage, fallback = await self._ask(
            inp.role,
            prompt,
            user,
            report_schema(inp.role),
            on_delta,
            prompting.sections_for(prompt, inp.facts),
        )
        if value is None:
            answer = await self.fallback.report(inp)
            return Answer(answer.value, usage, fallback)
        return self._answer(value.as_report(), usage, fallback)

    async def _by_rules(self, inp: ReviewInput) -> Answer:
        # The critique is the rules' own (what Treatment answers); the board says who wrote it
        # from the step's "asked" flag.
        return Answer((await self.fallback.review(inp)).value, None, "", unasked=True)

    async def review(self, inp: ReviewInput) -> Answer:
        if by_rules(inp):
            return await self._by_rules(inp)
        user = {
            "case": prompting.case_for(inp.reviewer, inp.case, reviewing=inp.target),
            # Each unit decided by its id and one line (the full texts went to the members who
            # cited them); what waits for missing data is not reviewed: the reviewer's own
            # report asks for it, and the gate holds every rule it cannot decide.
            "evidence": prompting.evidence_brief(
                prompting.decided(prompting.concerning(inp.evidence, inp.report)), actions=False
            ),
            "target": inp.target,
            "report": prompting.report_brief(inp.report, item_evidence=False),
            "round": inp.round,
        }
        user = _filled(user)
        value, usage, fallback = await self._ask(inp.reviewer, "reviewer", user, CrossReview)
        if value is None:
            return Answer((await self.fallback.review(inp)).value, usage, fallback)
        return self._answer(value, usage, fallback)

    async def review_many(self, inps: Sequence[ReviewInput]) -> list[Answer]:
        """One reviewer's reviews of several reports in one call (Treatment reviews Safety's
        and Monitoring's): the instructions, the schema and the case sections are sent once.
        The call's usage is on the first answer; a failed call falls back for each."""
        if len(inps) == 1 or any(by_rules(inp) for inp in inps):
            return [await self.review(inp) for inp in inps]
        first = inps[0]
        sections: dict[str, Any] = {}
        for inp in inps:
            sections.update(prompting.case_for(inp.reviewer, inp.case, reviewing=inp.target))
        units = {
            e.unit_id: e for inp in inps for e in prompting.concerning(inp.evidence, inp.report)
        }
        user = {
            "case": sections,
            "evidence": prompting.evidence_brief(
                prompting.decided(list(units.values())), actions=False
            ),
            "reports": {
                inp.target: prompting.report_brief(inp.report, item_evidence=False) for inp in inps
            },
            "round": first.round,
        }
        user = _filled(user)
        value, usage, fallback = await self._ask(first.reviewer, "reviewer", user, CrossReviews)
        answers = []
        for i, inp in enumerate(inps):
            review = value.reviews.get(inp.target) if value is not None else None
            spent = usage if i == 0 else None
            if review is None:
                why = fallback or fallback_text("UnexpectedReply")
                answers.append(Answer((await self.fallback.review(inp)).value, spent, why))
            else:
                answers.append(self._answer(review, spent, fallback))
        return answers

    async def synthesize(
        self, inp: SynthesisInput, consensus: Consensus, conflicts_text: str
    ) -> Answer:
        computed = (await self.fallback.synthesize(inp, consensus, conflicts_text)).value
        user = {
            "case": prompting.case_for("coordinator", inp.case),
            "derived_staging": prompting.compact(dict(inp.staging)),
            "round": inp.round,
            # What each member concluded; its items only where the weighted consensus (below)
            # does not carry them as proposed.
            "reports": {
                role: prompting.report_gist(r, beside=consensus)
                for role, r in sorted(inp.reports.items())
            },
            # An agreement by who agreed with whom; an objection in full.
            "agreed": [
                f"{a} with {b}"
                for a, b, c in inp.critiques
                if c.agree and not c.concerns and not c.demote
            ],
            # An objection made in the same words by several reviewers, once, with their names.
            "objections": prompting.critiques_brief(
                (f"{a} on {b}", c) for a, b, c in inp.critiques
            ).get("objections"),
            "weights": {role: round(w, 2) for role, w in inp.weights.items()},
            "weighted_consensus": prompting.compact(
                {
                    # Each kept item by its name, with its weighted support: the residual
                    # context summarises the plan; its items are computed, not written here.
                    "kept": {
                        role: [
                            {
                                "item": prompting.label(c.description),
                                "rank": c.rank,
                                "support": consensus.support.get(c.description),
                            }
                            for c in consensus.components
                            if c.role == role
                        ]
                        for role in ("primary", "alternative")
                    },
                    "rejected": [r.model_dump() for r in consensus.rejected],
                }
            ),
            "previous_residual_contexts": prompting.residual_brief(inp.residuals),
            "similar_past_cases": [
                prompting.compact({"label": p.label, "summary": p.summary, "lesson": p.lesson})
                for p in inp.experience
            ],
        }
        user = _filled(user)
        value, usage, fallback = await self._ask(
            "coordinator", "coordinator", user, CoordinatorNote
        )
        if value is None:
            return Answer(computed, usage, fallback)
        # The Coordinator writes the residual context; the components are the weighted
        # consensus arranged into one pathway, computed, so no plan item enters without its
        # support, and the summary is written from them.
        draft = computed.draft
        # "Long-term memory" records what was recalled, whatever the Coordinator wrote: the
        # past cases by label and similarity, then the Coordinator's note on their role.
        recorded = computed.residual.long_term_memory
        note = value.residual.long_term_memory.strip()
        residual = value.residual.model_copy(
            update={
                "long_term_memory": (
                    f"{recorded} | Coordinator: {note}"
                    if inp.experience and note and note != recorded
                    else recorded
                )
            }
        )
        synthesis = Synthesis(residual=residual, draft=draft, confidence=value.confidence)
        return self._answer(synthesis, usage, fallback)

    async def vote(self, inp: VoteInput) -> Answer:
        if not prompting.at_stake(inp):
            # Lazy consensus: a member whose items the draft carries as proposed, who objected
            # to nothing this round and whose domain rules see nothing to change is not polled
            # (an objection by its rules, which vote_with_rules adds, still is).
            rules = (await self.fallback.vote(inp)).value
            if rules.agree:
                return Answer(Vote(agree=True, advice=UNPOLLED_ADVICE), None, "", unpolled=True)
        user = {
            "round": inp.round,
            # What the member concluded and proposed (the evidence behind it was weighed in the
            # reviews); the draft is what is voted on.
            "your_report": prompting.report_gist(inp.report, beside=inp.draft),
            "draft_plan": prompting.draft_brief(inp.draft),
        }
        value, usage, fallback = await self._ask(inp.role, "voter", user, Vote)
        if value is None:
            return Answer((await self.fallback.vote(inp)).value, usage, fallback)
        return self._answer(value, usage, fallback)
