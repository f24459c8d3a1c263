"""The round protocol (DESIGN.md, "The deliberation protocol", steps 1-11).

Every step has a stable key; its result and events are committed together through the step
store, and a resumed run loads finished steps instead of redoing them. Roles within a round
run concurrently. Limits: rounds (default 3, hard cap 5), wall clock, and the LLM budget
(whose exhaustion makes the remaining turns fall back to the guideline engine).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from clinical.calculators.medications import MEDICATION_FACTS
from clinical.calculators.response import (
    case_response,
    lesions_from_case,
    response_monitoring,
    response_sentence,
)
from clinical.plan import (
    ConflictRecord,
    EvidenceItem,
    InformedBy,
    MonitoringItem,
    Plan,
    PlanComponent,
    Recommendation,
    RejectedOption,
    SafetyBlock,
)
from clinical.vocab import (
    SAFETY_KINDS,
    STAGING_KEYS,
    EventKind,
    Intent,
    Phase,
    ResponseAnchor,
    StepKind,
)
from consult.engine import guideline
from consult.engine.abstention import abstain, without_situation_steps
from consult.engine.consensus import (
    case_weights,
    critique_conflicts,
    weighted_consensus,
    with_offsets,
)
from consult.engine.context import (
    REVIEW_PAIRS,
    ROLE_KINDS,
    SPECIALISTS,
    ReviewInput,
    RoleInput,
    SynthesisInput,
    Triage,
    VoteInput,
)
from consult.engine.decisive import decisive_facts
from consult.engine.drug_monitoring import for_pathway
from consult.engine.gate import relevant_need, with_allergy_check
from consult.engine.grounding import ground_report, tree_nodes
from consult.engine.options import not_advised
from consult.engine.pathway import modalities_done
from consult.engine.pathway_pass import pathway_pass
from consult.engine.protocols import (
    EngineEvent,
    Evidence,
    EvidenceRequest,
    ExperienceRetriever,
    NoExperience,
    PastCase,
    Retrieved,
    Retriever,
    Step,
    StepResult,
    StepStore,
    Usage,
)
from consult.engine.providers import Answer, GuidelineProvider, LLMProvider
from consult.engine.restaging import (
    CONTINUE_PREFIX,
    continue_on_response,
    continued_intent,
    name_current_treatment,
    name_treated_lesions,
)
from consult.engine.safeguards import (
    gate_with_fallback,
    guideline_options,
    review_with_rules,
    vote_with_rules,
)
from consult.engine.schemas import (
    CrossReview,
    ProposedComponent,
    ResidualContext,
    RoleReport,
    Synthesis,
    Vote,
)

MAX_ROUNDS_CAP = 5
BUDGET_CHOICES = ("stop", "continue")
_EMPTY = RoleReport(conclusion="", confidence=0)
PHASES: tuple[str, ...] = tuple(Phase)


class Cancelled(Exception):
    """The clinician cancelled the consultation."""


@dataclass(frozen=True)
class EngineConfig:
    max_rounds: int = 3
    agreement: float = 1.0  # share of agreeing votes that ends the rounds (1.0 = unanimity)
    wall_clock_s: float = 600.0
    retrieval_k: int = 12
    cancel_poll_s: float = 1.0  # how often a run waiting on the LLM looks for a cancel
    jurisdiction: str | None = None
    # EvoMDT: a conflict scored at or above this (S = α·semantic + β·risk + γ·implementation)
    # earns another round, even when every vote agrees.
    conflict_threshold: float = 0.6
    # MDTeamGPT: from round 2, this many similar past cases from CorrectKB and ChainKB.
    experience_k: int = 5
    # Admin-approved offsets to the case-dependent consensus weights (knowledge/memory's
    # weight versions): role -> offset. Empty: the engine's own weights.
    weight_offsets: Mapping[str, float] = field(default_factory=dict)
    # When the LLM budget left will not cover the next round (estimated from this round's
    # tokens): "stop" ends the deliberation with the rounds done, "continue" runs the round and
    # lets the guideline engine answer the turns the budget does not cover (said on the board
    # and the plan). The clinician chooses when starting the consultation.
    budget_short: str = "stop"
    # Decisive facts (issue 23): re-run the choice with each borderline or missing fact varied.
    decisive_facts: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.max_rounds <= MAX_ROUNDS_CAP:
            raise ValueError(f"max_rounds must be between 1 and {MAX_ROUNDS_CAP}")
        if not 0.5 <= self.agreement <= 1.0:
            raise ValueError("agreement must be between 0.5 and 1.0")
        if not 0.0 < self.conflict_threshold <= 1.0:
            raise ValueError("conflict_threshold must be above 0 and at most 1")
        if not 0 <= self.experience_k <= 20:
            raise ValueError("experience_k must be between 0 and 20")
        if any(abs(float(v)) > 1.0 for v in self.weight_offsets.values()):
            raise ValueError("a consensus weight offset must be between -1 and 1")
        if self.budget_short not in BUDGET_CHOICES:
            raise ValueError(f"budget_short must be one of {', '.join(BUDGET_CHOICES)}")


@dataclass
class _State:
    case: Mapping[str, Any]
    facts: Mapping[str, Any]
    staging: dict[str, Any]
    triage: Triage | None = None
    evidence: dict[str, list[Evidence]] = field(default_factory=dict)
    # Therapy steps that do not apply (from Treatment's retrieval): the options ruled out.
    considered: list[Evidence] = field(default_factory=list)
    reports: dict[str, RoleReport] = field(default_factory=dict)
    history: list[RoleReport] = field(default_factory=list)  # every report of every round
    ungrounded: dict[str, set[str]] = field(default_factory=dict)
    residuals: list[ResidualContext] = field(default_factory=list)
    critiques: list[tuple[str, str, CrossReview]] = field(default_factory=list)
    previous_critiques: list[tuple[str, str, CrossReview]] = field(default_factory=list)
    synthesis: Synthesis | None = None
    conflicts: list[ConflictRecord] = field(default_factory=list)
    round_conflicts: list[ConflictRecord] = field(default_factory=list)
    rounds: int = 0
    stopped_by: str = ""
    fallbacks: int = 0
    # LLM tokens (prompt + completion) spent per round, from the journal: the estimate of the
    # next round's cost.
    round_tokens: dict[int, int] = field(default_factory=dict)
    # The past cases recalled for round 2 on (None: not recalled yet).
    experience: list[PastCase] | None = None


_EVIDENCE_FIELDS = tuple(f.name for f in fields(Evidence))


def _evidence_to_dict(evidence: Evidence) -> dict[str, Any]:
    # The fields as they are (asdict's deep copy of every unit's content, thrown away for
    # the copy below, cost a consultation's retrieval ~20 ms): the evidence is frozen, and
    # the dict is only serialised.
    data = {name: getattr(evidence, name) for name in _EVIDENCE_FIELDS}
    data["content"] = dict(evidence.content)
    return data


def _evidence_from_dict(data: Mapping[str, Any]) -> Evidence:
    held = tuple((fact, value) for fact, value in data.get("held") or ())
    failed = tuple(tuple(row) for row in data.get("failed") or ())
    return Evidence(
        **{**data, "missing": tuple(data.get("missing") or ()), "held": held, "failed": failed}
    )


class Deliberation:
    def __init__(
        self,
        *,
        case: Mapping[str, Any],
        facts: Mapping[str, Any],
        staging: Mapping[str, Any],
        retriever: Retriever,
        store: StepStore,
        provider: GuidelineProvider | LLMProvider,
        experience: ExperienceRetriever | None = None,
        config: EngineConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self.state = _State(case=case, facts=facts, staging=dict(staging))
        self.labels = dict(labels or {})
        self.retriever = retriever
        self.store = store
        self.provider = provider
        self.experience = experience or NoExperience()
        self.config = config or EngineConfig()
        self.clock = clock
        self.deadline = clock() + self.config.wall_clock_s
        self.cancer = str(case.get("cancer_type") or "other")
        # The decisive facts, computed beside the rounds (they depend on the case alone).
        self._decisive: asyncio.Future[tuple[list[Any], int]] | None = None
        # The cancer's safety rules and therapy steps (_case_rules), fetched beside the rounds.
        self._rules: asyncio.Future[dict[str, Retrieved]] | None = None
        # The gate and plan of a round's synthesis, worked out while its votes are awaited.
        self._ahead: tuple[int, asyncio.Future[tuple[StepResult, StepResult] | None]] | None = None

    # --- plumbing ---------------------------------------------------------------------------

    async def _step(self, step: Step, run: Callable[[], Awaitable[StepResult]]) -> dict[str, Any]:
        done = await self.store.load(step)
        if done is None:
            if await self.store.cancelled():
                raise Cancelled
            result = await run()
            if result.usage is not None and "usage" not in result.result:
                # In the journal too: a resumed run knows what each round cost.
                result.result = {**result.result, "usage": asdict(result.usage)}
            await self.store.commit(step, result)
            done = result.result
        usage = done.get("usage") or {}
        if usage:
            spent = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
            self.state.round_tokens[step.round] = self.state.round_tokens.get(step.round, 0) + spent
        return done

    def _time_left(self) -> bool:
        return self.clock() < self.deadline

    # --- 1-3: intake, triage, retrieval -------------------------------------------------------

    async def _intake(self) -> None:
        async def run() -> StepResult:
            missing = sorted(
                f"derived.{k}"
                for k, v in self.state.staging.items()
                if v is None and k in guideline.relevant_staging(self.state.case)
            )
            payload = {
                "staging": self.state.staging,
                "missing": missing,
                "cancer_type": self.cancer,
                "staging_keys": list(guideline.relevant_staging(self.state.case)),
            }
            return StepResult(payload, [EngineEvent(EventKind.INTAKE, payload)])

        await self._step(Step(StepKind.INTAKE), run)

    async def _interacting(self) -> list[str]:
        """The knowledge base's interaction rules that fire on the patient's current
        medications (a rule about a drug class the patient takes: warfarin, a strong CYP3A4
        inhibitor), by title: what invites the Pharmacy seat."""
        # Every interaction rule judged against the patient, no ranked search (no query to
        # embed before the panel is known).
        request = EvidenceRequest("triage_interactions", "", ROLE_KINDS["pharmacy"], True)
        found = (await self._fetch([request]))["triage_interactions"]
        return sorted(
            {
                e.title
                for e in found.applicable
                if e.applies is True and any(fact in MEDICATION_FACTS for fact, _ in e.held)
            }
        )

    async def _triage(self) -> None:
        async def run() -> StepResult:
            interacting = await self._interacting()
            t = guideline.triage(dict(self.state.case), dict(self.state.facts), interacting)
            payload = {"panel": list(t.panel), "specialists": t.specialists, "simple": t.simple}
            return StepResult(payload, [EngineEvent(EventKind.TRIAGE, payload)])

        result = await self._step(Step(StepKind.TRIAGE), run)
        self.state.triage = Triage(
            tuple(result["panel"]), dict(result["specialists"]), bool(result["simple"])
        )

    def _query(self, role: str) -> str:
        case = self.state.case
        stage = ", ".join(f"{k} {v}" for k, v in self.state.staging.items() if v is not None)
        diagnosis = case.get("diagnosis") or {}
        return " ".join(
            str(part)
            for part in (
                self.cancer.replace("_", " "),
                role.replace("_", " "),
                case.get("question") or "",
                diagnosis.get("histology") or "",
                diagnosis.get("subtype") or "",
                stage,
            )
            if part
        )

    def _requests(self, panel: Sequence[str]) -> list[EvidenceRequest]:
        return [
            EvidenceRequest(role, self._query(role), ROLE_KINDS.get(role, ("therapy_step",)))
            for role in panel
        ]

    async def _fetch(self, requests: Sequence[EvidenceRequest]) -> dict[str, Retrieved]:
        return await asyncio.to_thread(
            self.retriever.retrieve,
            cancer_type=self.cancer,
            case=self.state.case,
            requests=requests,
            k=self.config.retrieval_k,
        )

    async def _retrieve_panel(self, panel: Sequence[str]) -> None:
        """The whole panel's evidence in one retriever call, then one step per role."""
        requests = self._requests(panel)
        pending = [r for r in requests if await self.store.load(Step.retrieval(r.role)) is None]
        fetched: dict[str, Retrieved] = {}
        if pending:
            if await self.store.cancelled():
                raise Cancelled
            fetched = await self._fetch(pending)
        await asyncio.gather(*(self._retrieve(r, fetched.get(r.role)) for r in requests))

    async def _retrieve(self, request: EvidenceRequest, fetched: Retrieved | None) -> None:
        role = request.role

        async def run() -> StepResult:
            found = fetched or (await self._fetch([request]))[role]
            applicable, hits = found.applicable, found.hits
            merged: dict[str, Evidence] = {e.unit_id: e for e in applicable}
            for hit in hits:
                merged.setdefault(hit.unit_id, hit)
            evidence = sorted(merged.values(), key=lambda e: (-e.score, e.unit_id))
            payload: dict[str, Any] = {"evidence": [_evidence_to_dict(e) for e in evidence]}
            if role == "treatment":
                payload["considered"] = [_evidence_to_dict(e) for e in found.considered]
            event = EngineEvent(
                EventKind.RETRIEVAL,
                {
                    "query": request.query,
                    "hits": [
                        {
                            "unit_id": e.unit_id,
                            "anchor": e.anchor,
                            "version": e.version,
                            "source": e.source,
                            "grade": e.grade,
                            "kind": e.kind,
                            "applies": e.applies,
                            "score": e.score,
                        }
                        for e in evidence
                    ],
                },
                role=role,
            )
            return StepResult(payload, [event])

        result = await self._step(Step.retrieval(role), run)
        self.state.evidence[role] = [_evidence_from_dict(d) for d in result["evidence"]]
        if role == "treatment":
            self.state.considered = [_evidence_from_dict(d) for d in result.get("considered") or ()]

    # --- 4-8: rounds --------------------------------------------------------------------------

    async def _report(self, role: str, round_no: int) -> None:
        async def run() -> StepResult:
            critiques = [
                (reviewer, c)
                for reviewer, target, c in self.state.previous_critiques
                if target == role
            ]
            # MDTeamGPT: similar past cases from the second round on.
            past = self._past(round_no)
            inp = RoleInput(
                role=role,
                round=round_no,
                case=self.state.case,
                facts=self.state.facts,
                staging=self.state.staging,
                evidence=self.state.evidence[role],
                residuals=self.state.residuals[-2:],
                experience=past,
                previous=self.state.reports.get(role),
                critiques=critiques,
                reason=(self.state.triage.specialists.get(role, "") if self.state.triage else ""),
                labels=self.labels,
                therapies=self._therapies(),
            )

            async def on_delta(text: str) -> None:
                await self.store.delta(role=role, round=round_no, text=text)

            answer: Answer = await self.provider.report(inp, on_delta)
            report, ungrounded = ground_report(answer.value, self.state.evidence[role])
            events = [
                EngineEvent(
                    EventKind.MESSAGE,
                    {
                        "report": report.model_dump(),
                        "fallback": answer.fallback,
                        "usage": asdict(answer.usage) if answer.usage else None,
                        "carried_over": answer.carried,
                    },
                    role=role,
                    round=round_no,
                )
            ]
            if ungrounded:
                events.append(
                    EngineEvent(
                        EventKind.GROUNDING, {"ungrounded": ungrounded}, role=role, round=round_no
                    )
                )
            events += [
                EngineEvent(EventKind.EVIDENCE_NODE, node, role=role, round=round_no)
                for node in tree_nodes(
                    role, round_no, report, self.state.evidence[role], ungrounded
                )
            ]
            return StepResult(
                {
                    "report": report.model_dump(),
                    "ungrounded": ungrounded,
                    "carried_over": answer.carried,
                },
                events,
                answer.usage,
                answer.fallback,
            )

        result = await self._step(Step.report(round_no, role), run)
        self.state.reports[role] = RoleReport.model_validate(result["report"])
        self.state.history.append(self.state.reports[role])
        self.state.ungrounded[role] = {
            u["component"] for u in result["ungrounded"] if u.get("component")
        }

    def _therapies(self) -> list[Evidence]:
        """The therapy steps any member may propose: those of the whole panel's evidence that
        apply or wait for data."""
        found = {
            e.unit_id: e
            for units in self.state.evidence.values()
            for e in units
            if e.action.get("type") == "therapy" and e.applies is not False
        }
        return list(found.values())

    def _past(self, round_no: int) -> Sequence[PastCase]:
        return (self.state.experience or []) if round_no >= 2 else []

    async def _recall(self, round_no: int) -> None:
        """The similar past cases, recalled once (from round 2) and journaled: a resumed run
        reads what the first one recalled, whatever the memory holds by then."""

        async def run() -> StepResult:
            k = self.config.experience_k
            past = await asyncio.to_thread(self.experience.similar, case=self.state.case, k=k)
            return StepResult({"past": [asdict(p) for p in past[:k]]})

        result = await self._step(Step(StepKind.EXPERIENCE, round_no), run)
        self.state.experience = [PastCase(**p) for p in result["past"]]

    def _review_input(self, reviewer: str, target: str, round_no: int) -> ReviewInput:
        return ReviewInput(
            reviewer=reviewer,
            target=target,
            round=round_no,
            case=self.state.case,
            facts=self.state.facts,
            report=self.state.reports[target],
            evidence=self.state.evidence[reviewer],
        )

    async def _reviews(self, reviewer: str, targets: Sequence[str], round_no: int) -> None:
        """A reviewer's reviews of the round: one call for all the reports it has still to
        review (each review is still its own step, journaled and resumed on its own)."""
        pending = [
            t for t in targets if await self.store.load(Step.review(round_no, reviewer, t)) is None
        ]
        answers: dict[str, Answer] = {}
        if len(pending) > 1:
            if await self.store.cancelled():
                raise Cancelled
            inps = [self._review_input(reviewer, t, round_no) for t in pending]
            answers = dict(zip(pending, await self.provider.review_many(inps), strict=True))
        for target in targets:
            await self._review(reviewer, target, round_no, answers.get(target))

    async def _review(
        self, reviewer: str, target: str, round_no: int, given: Answer | None = None
    ) -> None:
        async def run() -> StepResult:
            inp = self._review_input(reviewer, target, round_no)
            answer = given or await self.provider.review(inp)
            # The rules of the reviewer's domain object whatever the reviewer says.
            review: CrossReview = review_with_rules(inp, answer.value)
            payload = {
                "reviewer": reviewer,
                "target": target,
                "review": review.model_dump(),
                "fallback": answer.fallback,
                "usage": asdict(answer.usage) if answer.usage else None,
                "carried_over": answer.carried,
                "asked": not answer.unasked,
            }
            events = [
                EngineEvent(EventKind.CRITIQUE, payload, role=reviewer, round=round_no),
                EngineEvent(
                    EventKind.EVIDENCE_NODE,
                    {
                        "id": f"r{round_no}.{reviewer}>{target}",
                        "parent": f"r{round_no}.{target}.h",
                        "kind": "critique",
                        "text": review.critique,
                        "refs": [],
                        "author": reviewer,
                        "status": "supported" if review.agree else "contested",
                    },
                    role=reviewer,
                    round=round_no,
                ),
            ]
            return StepResult(payload, events, answer.usage, answer.fallback)

        result = await self._step(Step.review(round_no, reviewer, target), run)
        self.state.critiques.append(
            (reviewer, target, CrossReview.model_validate(result["review"]))
        )

    async def _synthesize(self, round_no: int, weights: Mapping[str, float]) -> None:
        round_critiques = list(self.state.critiques)

        async def run() -> StepResult:
            safety_units = self.state.evidence.get("safety", [])
            consensus = weighted_consensus(
                reports=self.state.reports,
                critiques=round_critiques,
                weights=weights,
                safety_evidence=safety_units,
                ungrounded=self.state.ungrounded,
            )
            conflicts = critique_conflicts(round_critiques, safety_units) + consensus.conflicts
            inp = SynthesisInput(
                round=round_no,
                case=self.state.case,
                facts=self.state.facts,
                staging=self.state.staging,
                reports=self.state.reports,
                critiques=round_critiques,
                weights=weights,
                evidence=self.state.evidence,
                residuals=self.state.residuals[-2:],
                experience=self._past(round_no),
            )
            text = "; ".join(c.resolution for c in conflicts)
            answer = await self.provider.synthesize(inp, consensus, text)
            synthesis: Synthesis = answer.value
            events = [
                EngineEvent(
                    EventKind.RESIDUAL,
                    synthesis.residual.model_dump(),
                    role="coordinator",
                    round=round_no,
                ),
                EngineEvent(
                    EventKind.DRAFT,
                    {
                        **synthesis.draft.model_dump(),
                        "support": consensus.support,
                        "weights": dict(weights),
                        # The Coordinator's turn: what it cost, and who answered it.
                        "fallback": answer.fallback,
                        "usage": asdict(answer.usage) if answer.usage else None,
                        "carried_over": answer.carried,
                    },
                    role="coordinator",
                    round=round_no,
                ),
            ] + [
                EngineEvent(EventKind.CONFLICT, c.model_dump(), role="coordinator", round=round_no)
                for c in conflicts
            ]
            return StepResult(
                {
                    "synthesis": synthesis.model_dump(),
                    "conflicts": [c.model_dump() for c in conflicts],
                    "fallback": answer.fallback,
                    "carried_over": answer.carried,
                },
                events,
                answer.usage,
                answer.fallback,
            )

        result = await self._step(Step.synthesis(round_no), run)
        self.state.synthesis = Synthesis.model_validate(result["synthesis"])
        self.state.residuals.append(self.state.synthesis.residual)
        round_conflicts = [ConflictRecord.model_validate(c) for c in result["conflicts"]]
        self.state.round_conflicts = round_conflicts
        self.state.conflicts.extend(round_conflicts)

    async def _vote(self, role: str, round_no: int) -> Vote:
        async def run() -> StepResult:
            assert self.state.synthesis is not None  # noqa: S101 - synthesis precedes votes
            inp = VoteInput(
                role=role,
                round=round_no,
                case=self.state.case,
                report=self.state.reports[role],
                draft=self.state.synthesis.draft,
                evidence=self.state.evidence[role],
                critiques_given=[c for who, _, c in self.state.critiques if who == role],
                facts=self.state.facts,
                reviewed=[
                    self.state.reports[target]
                    for who, target, _ in self.state.critiques
                    if who == role and target in self.state.reports
                ],
            )
            answer = await self.provider.vote(inp)
            vote: Vote = vote_with_rules(inp, answer.value)
            payload = {
                "vote": vote.model_dump(),
                "fallback": answer.fallback,
                "usage": asdict(answer.usage) if answer.usage else None,
                "carried_over": answer.carried,
                "polled": not answer.unpolled,
            }
            return StepResult(
                payload,
                [EngineEvent(EventKind.VOTE, payload, role=role, round=round_no)],
                answer.usage,
                answer.fallback,
            )

        result = await self._step(Step.vote(round_no, role), run)
        return Vote.model_validate(result["vote"])

    async def _round(
        self, round_no: int, panel: Sequence[str], weights: Mapping[str, float]
    ) -> bool:
        self.state.previous_critiques, self.state.critiques = self.state.critiques, []
        if round_no >= 2 and self.state.experience is None:
            await self._recall(round_no)
        await asyncio.gather(*(self._report(role, round_no) for role in panel))
        pairs = [(a, b) for a, b in REVIEW_PAIRS if a in panel and b in panel]
        # Every specialist reviews Treatment's proposal from its own domain (the
        # cardio-oncology seat objects to an anthracycline with a failing heart).
        pairs += [(s, "treatment") for s in panel if s in SPECIALISTS and "treatment" in panel]
        by_reviewer: dict[str, list[str]] = {}
        for a, b in pairs:
            by_reviewer.setdefault(a, []).append(b)
        await asyncio.gather(*(self._reviews(a, bs, round_no) for a, bs in by_reviewer.items()))
        await self._synthesize(round_no, weights)
        voting = asyncio.gather(*(self._vote(role, round_no) for role in panel))
        self._final_ahead(round_no)  # scheduled after the votes, which go out first
        votes = await voting
        agreement = sum(v.agree for v in votes) / len(votes)
        # MedAgents: the advice of a "revise" vote is answered by Treatment in the next round.
        self.state.critiques += [
            (role, "treatment", CrossReview(agree=False, critique=v.advice, concerns=v.concerns))
            for role, v in zip(panel, votes, strict=True)
            if not v.agree and v.advice and role != "treatment"
        ]
        conflict = max((c.score for c in self.state.round_conflicts), default=0.0)

        async def run() -> StepResult:
            agreed = agreement >= self.config.agreement
            calm = conflict < self.config.conflict_threshold
            stop = agreed and calm
            payload = {
                "agreement": round(agreement, 3),
                "conflict": round(conflict, 3),
                "stop": stop,
                "reason": (
                    "agreement"
                    if stop
                    else (
                        "votes ask for a revision"
                        if not agreed
                        else f"conflict {conflict:.2f} at or above the threshold "
                        f"{self.config.conflict_threshold:.2f}: another round"
                    )
                ),
                "votes": {r: v.agree for r, v in zip(panel, votes, strict=True)},
            }
            if not stop and round_no < self.config.max_rounds:
                payload.update(self._budget_check(round_no + 1))
            return StepResult(
                payload,
                [EngineEvent(EventKind.CONSENSUS, payload, role="coordinator", round=round_no)],
            )

        result = await self._step(Step.consensus(round_no), run)
        if result.get("budget", {}).get("decision") == "stopped":
            self.state.stopped_by = "token budget"
        return bool(result["stop"])

    def _budget_check(self, next_round: int) -> dict[str, Any]:
        """Whether the LLM budget left covers the next round, estimated from the tokens this
        round took (the next has the same members and evidence; members with nothing new to
        answer make it cheaper). Short: the clinician's choice at the start decides."""
        left = self.provider.budget_left()
        estimate = self.state.round_tokens.get(next_round - 1, 0)
        if left is None or not estimate or estimate <= left:
            return {}
        budget = {"round": next_round, "estimate": estimate, "left": left}
        if self.config.budget_short == "stop":
            return {
                "stop": True,
                "reason": (
                    f"token budget: round {next_round} needs about {estimate} tokens and "
                    f"{left} remain; the board ends here, as chosen at the start"
                ),
                "budget": {**budget, "decision": "stopped"},
            }
        return {
            "reason": (
                f"another round, though the token budget left ({left} tokens) will not cover "
                f"it (about {estimate}): as chosen at the start, the guideline engine answers "
                "the turns the budget does not cover"
            ),
            "budget": {**budget, "decision": "continued"},
        }

    # --- 9-11: gate, review, plan ---------------------------------------------------------------

    async def _final(self) -> Plan:
        assert self.state.synthesis is not None  # noqa: S101 - at least one round ran
        # The gate and the plan as worked out while the last round's votes were awaited
        # (``_final_ahead``): the same inputs (the votes change none of them), so the same
        # steps; each is still committed here, in protocol order, as its own step.
        ahead = await self._ahead_result()

        async def gate_run() -> StepResult:
            return ahead[0] if ahead is not None else await self._gate_result()

        gate = await self._step(Step(StepKind.GATE), gate_run)

        async def plan_run() -> StepResult:
            if ahead is not None and ahead[0].result == gate:
                return ahead[1]
            plan = pathway_pass(self._assemble(gate), self.state.facts)
            return self._plan_result(await self._with_decisive_facts(plan))

        result = await self._step(Step(StepKind.PLAN), plan_run)
        return Plan.model_validate(result["plan"])

    def _gate_inputs(self) -> dict[str, Any]:
        """What the safety gate checks, from the last synthesis: the pathway, what the board
        withdrew, the patient's declines."""
        assert self.state.synthesis is not None  # noqa: S101 - at least one round ran
        draft = self.state.synthesis.draft
        declines = self.state.facts.get("derived.declines") or []
        # What the board withdrew (in any round) is checked again for the record: the plan
        # shows the rule that ruled it out, never the item.
        planned = {c.description for c in draft.components}
        withdrawn = {r.option for r in draft.rejected}
        ruled_out = list(
            {
                c.description: c
                for report in self.state.history
                for c in report.components
                if c.description in withdrawn and c.description not in planned
            }.values()
        )
        # Restaging: a line that works continues (the gate then checks it like any other item).
        pathway = continue_on_response(
            draft.components,
            self.state.case,
            adjuncts=guideline.adjuncts_applying(
                self.state.evidence.get("treatment", []), self.labels
            ),
        )
        return {
            "pathway": pathway,
            "withdrawn": withdrawn,
            "declines": declines if isinstance(declines, list) else [],
            "ruled_out": ruled_out,
        }

    async def _gate_result(self) -> StepResult:
        inputs = self._gate_inputs()
        units = await self._gate_units(self.state.evidence.get("safety", []))
        return self._gate_outcome(inputs, units)

    def _gate_outcome(self, inputs: Mapping[str, Any], units: list[Evidence]) -> StepResult:
        outcome, fallback = gate_with_fallback(
            inputs["pathway"],
            units,
            options=self._guideline_options,
            withdrawn=inputs["withdrawn"],
            facts=self.state.facts,
            declines=inputs["declines"],
            ruled_out=inputs["ruled_out"],
            labels=self.labels,
        )
        # Every plan shows its allergy check (failed, passed or not checked).
        outcome = with_allergy_check(outcome, self.state.facts)
        cited = set(outcome.cited)
        payload = {
            "units": [_evidence_to_dict(u) for u in units if u.unit_id in cited],
            "fallback": fallback,
            "components": [c.model_dump() for c in outcome.components],
            "gates": [g.model_dump() for g in outcome.gates],
            "flags": [f.model_dump() for f in outcome.flags],
            "rejected": [r.model_dump() for r in outcome.rejected],
            "conflicts": [c.model_dump() for c in outcome.conflicts],
            "needs_data": outcome.needs_data,
            "confirm_needs": outcome.confirm_needs,
            "confirm_first": outcome.confirm_first,
            "cited": outcome.cited,
        }
        events = [
            EngineEvent(EventKind.GATE, g.model_dump(), role="safety_gate") for g in outcome.gates
        ]
        events += [
            EngineEvent(EventKind.CONFLICT, c.model_dump(), role="safety_gate")
            for c in outcome.conflicts
        ]
        return StepResult(payload, events)

    @staticmethod
    def _plan_result(plan: Plan) -> StepResult:
        # What the plan still lacks (a monitoring phase, a recommendation) stays in the
        # review event: needs_data is the patient data the board needs.
        review = final_review(plan)
        dumped = plan.model_dump(mode="json")
        events = [
            EngineEvent(EventKind.REVIEW, review, role="final_reviewer"),
            EngineEvent(EventKind.PLAN, dumped, role="coordinator"),
        ]
        return StepResult({"plan": dumped}, events)

    # --- the gate and plan worked out ahead, while the votes are awaited ------------------------

    def _final_ahead(self, round_no: int) -> None:
        """After a round's synthesis, while its votes wait on the LLM: the gate and the plan
        of that synthesis, in case the round is the last (its votes change neither). Only
        where there is a wait to fill (an LLM board); the steps are committed by ``_final``
        in their turn, and a later round discards this."""
        self._discard_ahead()
        if isinstance(self.provider, LLMProvider):
            self._ahead = (round_no, asyncio.ensure_future(self._work_ahead()))

    async def _work_ahead(self) -> tuple[StepResult, StepResult] | None:
        if await self.store.load(Step(StepKind.GATE)) is not None:
            return None  # a resumed run: the journal has them
        # Inputs read here, on the loop, before the next round can change them.
        inputs = self._gate_inputs()
        units = await self._gate_units(self.state.evidence.get("safety", []))
        gate = await asyncio.to_thread(self._gate_outcome, inputs, units)
        plan = await asyncio.to_thread(
            lambda: pathway_pass(self._assemble(gate.result), self.state.facts)
        )
        plan = await self._with_decisive_facts(plan)
        return gate, await asyncio.to_thread(self._plan_result, plan)

    async def _ahead_result(self) -> tuple[StepResult, StepResult] | None:
        """The gate and plan worked out ahead for this (the last) round, or None."""
        if self._ahead is None or self._ahead[0] != self.state.rounds:
            return None
        try:
            return await self._ahead[1]
        except Exception:  # noqa: BLE001 - worked out again, in order, where it failed
            return None

    def _discard_ahead(self) -> None:
        if self._ahead is not None:
            _dismiss(self._ahead[1])
        self._ahead = None

    async def _with_decisive_facts(self, plan: Plan) -> Plan:
        """The plan with the facts that would change its pathway (the choice re-run over every
        therapy step and safety rule of the cancer, retrieved once, for each variation). They
        depend on the case alone: computed while the members deliberate (``_protocol``)."""
        if not self.config.decisive_facts:
            return plan
        if self._decisive is None:
            self._decisive = asyncio.ensure_future(self._decisive_facts())
        facts, tried = await asyncio.shield(self._decisive)
        return plan.model_copy(update={"decisive_facts": facts, "variations_tried": tried})

    def _case_rules(self) -> asyncio.Future[dict[str, Retrieved]]:
        """Every safety rule of the cancer (and, for the decisive facts, every therapy step),
        whether it applies or not: they depend on the case alone, so they are fetched once,
        beside the rounds, for both the decisive facts and the safety gate."""
        if self._rules is None:
            requests = [EvidenceRequest("safety_gate", "", SAFETY_KINDS, True)]
            if self.config.decisive_facts:
                requests.append(EvidenceRequest("decisive_therapy", "", ("therapy_step",), True))
            self._rules = asyncio.ensure_future(self._fetch(requests))
        return self._rules

    async def _decisive_facts(self) -> tuple[list[Any], int]:
        found = await asyncio.shield(self._case_rules())
        units = [*found["decisive_therapy"].applicable, *found["safety_gate"].applicable]
        return await asyncio.to_thread(
            decisive_facts,
            case=self.state.case,
            facts=self.state.facts,
            units=units,
            labels=self.labels,
        )

    async def _gate_units(self, retrieved: Sequence[Evidence]) -> list[Evidence]:
        """Every safety rule of the knowledge base for this cancer, whether it applies or not,
        whatever the members retrieved: the gate reports what it checked and passed too."""
        found = await asyncio.shield(self._case_rules())
        units = {e.unit_id: e for e in retrieved}
        units.update({e.unit_id: e for e in found["safety_gate"].applicable})
        return list(units.values())

    def _guideline_options(self) -> list[ProposedComponent]:
        return guideline_options(
            self.state.evidence.get("treatment", []),
            round=self.state.rounds,
            case=self.state.case,
            facts=self.state.facts,
            staging=self.state.staging,
            labels=self.labels,
        )

    def _assemble(self, gate: Mapping[str, Any]) -> Plan:
        assert self.state.synthesis is not None  # noqa: S101
        draft = self.state.synthesis.draft
        plan_components = name_treated_lesions(
            name_current_treatment(
                [PlanComponent.model_validate(c) for c in gate["components"]], self.state.case
            ),
            self.state.case,
        )
        rejected = [*draft.rejected, *(RejectedOption.model_validate(r) for r in gate["rejected"])]
        memory = {e.unit_id: e for units in self.state.evidence.values() for e in units}
        for unit in gate.get("units") or ():
            memory.setdefault(unit["unit_id"], _evidence_from_dict(unit))
        # The MDT question answered: the main options that never applied, and why.
        rejected += not_advised(
            self.state.considered,
            plan_components,
            known=memory,
            labels=self.labels,
            rejected=rejected,
        )
        # Outside the knowledge base (issue 30): the plan abstains with content instead of
        # presenting the nearest standard pathway as the recommendation.
        therapy_units = [*self.state.evidence.get("treatment", []), *self.state.considered]
        outside = abstain(
            case=self.state.case,
            units=therapy_units,
            components=plan_components,
            removed={r.option for r in rejected},
        )
        if outside is not None:
            plan_components = outside.components
        else:
            plan_components = without_situation_steps(plan_components, therapy_units)
        # Drug-specific monitoring only for the drugs the pathway gives.
        monitoring = [
            MonitoringItem(phase=m.phase, what=m.what, interval=m.interval, anchor=m.anchor)
            for m in for_pathway(draft.monitoring, plan_components, memory)
        ]
        response = case_response(self.state.case)
        if response is not None:
            # monitoring names the lesions to follow and the criteria they are read by
            follow = response_monitoring(response, lesions_from_case(self.state.case))
            monitoring.insert(
                0,
                MonitoringItem(
                    phase=Phase.ACUTE,
                    what=follow["what"],
                    interval=follow["interval"],
                    anchor=ResponseAnchor(follow["anchor"]),
                ),
            )
        cited: list[str] = []
        for component in plan_components:
            cited += component.evidence
        cited += [
            e for m in for_pathway(draft.monitoring, plan_components, memory) for e in m.evidence
        ]
        cited += list(gate["cited"])
        cited += [
            e
            for claim in self.state.reports.get(
                "diagnostic", RoleReport(conclusion="", confidence=0)
            ).claims
            for e in claim.evidence
        ]
        evidence = [
            EvidenceItem(**memory[key].cite()) for key in dict.fromkeys(cited) if key in memory
        ]
        # The data that would change this plan: staging, the options' own conditions, and the
        # gates of the items in the plan (not the rules about drugs nobody proposed).
        deciders = ("diagnostic", "treatment")
        # What a critical rule about the pathway needs before it starts comes first.
        first = list(gate.get("confirm_needs") or ())
        needs = first + sorted(
            n
            for n in set(gate["needs_data"])
            | {n for role in deciders for n in self.state.reports.get(role, _EMPTY).needs_data}
            if relevant_need(n, self.state.facts) and n not in first
        )
        # The gate may have changed the pathway: the intent and the answer follow the final plan.
        kept = any(
            c.role == "primary" and c.description.startswith(CONTINUE_PREFIX)
            for c in plan_components
        )
        intent = (
            (continued_intent(self.state.case) if kept else None)
            or final_intent(plan_components, memory)
            or draft.intent
        )
        summary = guideline.plan_summary(
            question=str(self.state.case.get("question") or ""),
            case=self.state.case,
            staging=self.state.staging,
            components=[ProposedComponent.model_validate(c.model_dump()) for c in plan_components],
            rejected=_unique_rejected(rejected),
            intent=intent,
            waits={c.description: c.waits_for for c in plan_components if c.waits_for},
            confirm=list(gate.get("confirm_first") or ()),
            done=modalities_done(self.state.facts),
        )
        if response is not None:
            summary = f"{summary} {response_sentence(response)}".strip()
            disagreement = self.state.facts.get("derived.setting_disagreement")
            if disagreement:
                summary += f" The setting was {disagreement}: the computed response is used."
            if self.state.facts.get("derived.setting_from_imaging") == (
                "residual_after_neoadjuvant"
            ):
                summary += (
                    " Disease remains after the neoadjuvant course on imaging; the surgical "
                    "pathology (ypT/ypN) confirms residual invasive disease before adjuvant "
                    "therapy is chosen on it."
                )
        if outside is not None:
            intent, summary = Intent.ABSTAIN, outside.summary
        return Plan(
            response=response.to_plan() if response is not None else None,
            case_id=str(self.state.case.get("case_id") or ""),
            engine=self.provider.name,
            staging=_own_staging(self.state.case, self.state.staging),
            recommendation=Recommendation(
                summary=summary,
                intent=intent,
                components=plan_components,
                question=str(self.state.case.get("question") or ""),
                confirm_first=list(gate.get("confirm_first") or ()),
                abstention=outside.abstention if outside is not None else None,
            ),
            rejected_options=_unique_rejected(rejected),
            safety=SafetyBlock.model_validate({"gates": gate["gates"], "flags": gate["flags"]}),
            monitoring=monitoring,
            evidence=evidence,
            confidence=self.state.synthesis.confidence,
            conflicts=_unique(
                [
                    *self.state.conflicts,
                    *(ConflictRecord.model_validate(c) for c in gate["conflicts"]),
                ]
            ),
            abstain=not plan_components or outside is not None,
            needs_data=needs,
            rounds=self.state.rounds,
            informed_by=[
                InformedBy(
                    entry_id=p.entry_id,
                    kind=p.kind,
                    label=p.label,
                    summary=p.summary,
                    lesson=p.lesson,
                    similarity=p.similarity,
                )
                for p in self.state.experience or []
                if p.entry_id
            ],
        )

    # --- the whole protocol ---------------------------------------------------------------------

    async def run(self) -> Plan:
        """The protocol, watched for a cancel: one arriving while members wait on the LLM
        interrupts those calls (what they would have said is not kept) instead of waiting
        for them; steps already finished stay committed."""
        protocol = asyncio.ensure_future(self._protocol())
        watcher = asyncio.ensure_future(self._watch_cancel(protocol))
        try:
            return await protocol
        except asyncio.CancelledError:
            if watcher.done() and not watcher.cancelled():
                stop = watcher.result()
                if isinstance(stop, Exception):
                    raise stop from None  # the store failed: the run fails with its error
                if stop:
                    raise Cancelled from None
            raise
        finally:
            watcher.cancel()

    async def _watch_cancel(self, protocol: asyncio.Future[Plan]) -> bool | Exception:
        """Stop the protocol when the store reports a cancel, or fails to say."""
        while not protocol.done():
            await asyncio.sleep(self.config.cancel_poll_s)
            if protocol.done():
                break
            try:
                cancelled = await self.store.cancelled()
            except Exception as exc:  # noqa: BLE001 - handed to run(), which raises it
                protocol.cancel()
                return exc
            if cancelled:
                protocol.cancel()
                return True
        return False

    async def _protocol(self) -> Plan:
        await self._intake()
        await self._triage()
        assert self.state.triage is not None  # noqa: S101
        panel = self.state.triage.panel
        await self._retrieve_panel(panel)
        try:
            if await self.store.load(Step(StepKind.PLAN)) is None:
                # Off the critical path, while the LLM members are awaited: the decisive
                # facts' variations, and the rules the gate checks (the same fetch).
                if self.config.decisive_facts:
                    self._decisive = asyncio.ensure_future(self._decisive_facts())
                elif await self.store.load(Step(StepKind.GATE)) is None:
                    self._case_rules()
            return await self._deliberate(panel)
        finally:
            self._discard_ahead()
            for pending in (self._decisive, self._rules):
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pending
                elif pending is not None:
                    _dismiss(pending)

    async def _deliberate(self, panel: Sequence[str]) -> Plan:
        weights = with_offsets(
            case_weights(
                self.state.facts, self.state.staging, self.state.evidence.get("safety", []), panel
            ),
            self.config.weight_offsets,
        )
        for round_no in range(1, self.config.max_rounds + 1):
            self.state.rounds = round_no
            if await self._round(round_no, panel, weights):
                self.state.stopped_by = self.state.stopped_by or "agreement"
                break
            if not self._time_left():
                self.state.stopped_by = "time limit"
                break
        else:
            self.state.stopped_by = "round limit"
        return await self._final()


def _dismiss(future: asyncio.Future[Any]) -> None:
    """Cancel work whose result is no longer wanted; a failure it already ended with is read
    (it was worked out ahead, and is worked out again where it is needed)."""
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()


def final_intent(
    components: Sequence[PlanComponent], known: Mapping[str, Evidence]
) -> Intent | None:
    """The intent of the pathway's leading option as its knowledge unit states it, when the
    safety gate put another option first than the one the board's draft was written for."""
    for component in components:
        if component.role != "primary" or component.adjunct or component.modality == "antiviral":
            continue
        for unit_id in component.evidence:
            step = known[unit_id].therapy if unit_id in known else None
            if step is not None and step.intent.plan_intent is not None:
                return step.intent.plan_intent
        return None
    # No option leads: the operation is on record and the pathway is what follows it (issue
    # 23: adjuvant alectinib after a lobectomy is curative); the adjuncts' own intent.
    intents = set()
    for component in components:
        if component.role != "primary" or component.modality == "antiviral":
            continue
        for unit_id in component.evidence:
            step = known[unit_id].therapy if unit_id in known else None
            if step is not None and step.intent.plan_intent is not None:
                intents.add(step.intent.plan_intent)
    if Intent.CURATIVE in intents:
        return Intent.CURATIVE
    return Intent.PALLIATIVE if Intent.PALLIATIVE in intents else None


# Prognostic indices that belong to one lymphoma entity (IPI and CNS-IPI: aggressive B-cell
# lymphoma; FLIPI: follicular lymphoma).
_ENTITY_INDICES = ("ipi", "cns_ipi", "flipi")


def _own_staging(case: Mapping[str, Any], staging: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's staging block: a lymphoma prognostic index only for the entity it was built
    for (no IPI for follicular lymphoma, no FLIPI for DLBCL), the rest as calculated."""
    relevant = guideline.relevant_staging(case)
    return {
        k: None if k in _ENTITY_INDICES and k not in relevant else staging.get(k)
        for k in STAGING_KEYS
    }


def _unique_rejected(rejected: Sequence[RejectedOption]) -> list[RejectedOption]:
    """Each rejected option once, with its first (earliest-decided) reason."""
    seen: dict[str, RejectedOption] = {}
    for option in rejected:
        seen.setdefault(option.option, option)
    return list(seen.values())


def _unique(conflicts: Sequence[ConflictRecord]) -> list[ConflictRecord]:
    """The conflicts in order, each identical record once (a conflict that stands for
    several rounds is recorded every round)."""
    seen: dict[str, ConflictRecord] = {}
    for conflict in conflicts:
        seen.setdefault(conflict.model_dump_json(), conflict)
    return list(seen.values())


def final_review(plan: Plan) -> dict[str, Any]:
    """Completeness: staging, treatment (or an explicit abstention), safety, monitoring in all
    three phases with response criteria, evidence, and the patient's preferences."""
    phases = {m.phase for m in plan.monitoring}
    checks = {
        "staging": any(v is not None for v in plan.staging.values()),
        "treatment": bool(plan.recommendation.components) or plan.abstain,
        "safety": bool(plan.safety.gates or plan.safety.flags),
        "monitoring_phases": all(p in phases for p in PHASES),
        "response_criteria": all(m.anchor != "other" for m in plan.monitoring)
        and bool(plan.monitoring),
        "evidence": bool(plan.evidence),
    }
    missing = [f"monitoring phase {p}" for p in PHASES if p not in phases]
    if plan.recommendation.abstention is not None:
        missing.append(
            "a treatment pathway (the case is outside the knowledge base: the board decides)"
        )
    elif plan.abstain:
        missing.append(
            "a treatment recommendation (the board abstains until the data above is available)"
        )
    return {"checks": checks, "complete": all(checks.values()), "missing": missing}


async def deliberate(**kwargs: Any) -> Plan:
    return await Deliberation(**kwargs).run()


__all__ = ["Cancelled", "Deliberation", "EngineConfig", "Usage", "deliberate", "final_review"]
