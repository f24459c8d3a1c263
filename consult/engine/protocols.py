"""What the engine needs from the outside world, as protocols: an LLM, a retriever, an
experience memory and a step store (persistence + broadcast)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, assert_never

from pydantic import BaseModel

from clinical.lexicon import history_agents
from clinical.rules import SafetyAction, TherapyAction
from clinical.vocab import COORDINATOR, EventKind, StepKind


@dataclass(frozen=True)
class Evidence:
    """A retrieved knowledge unit with its provenance (unit id, anchor, version)."""

    unit_id: str
    kind: str
    cancer_type: str
    title: str
    text: str
    anchor: str
    version: str
    version_id: int
    source: str
    grade: str
    grade_ordinal: int
    content: Mapping[str, Any]
    applies: bool | None = None
    missing: tuple[str, ...] = ()
    score: float = 0.0
    # (fact, the patient's value) of each condition that holds: why the unit applies.
    held: tuple[tuple[str, Any], ...] = ()
    # (fact, operator, the value needed, the patient's value, "all" | "any") of each condition
    # that fails: why a unit that does not apply was not an option for this patient.
    failed: tuple[tuple[str, str, Any, Any, str], ...] = ()

    @property
    def action(self) -> Mapping[str, Any]:
        action: Mapping[str, Any] = self.content.get("action") or {}
        source = action.get("agents_from")
        if not source:
            return action
        # A rule about the patient's own history (no re-offer of a drug the disease progressed
        # on): its agents are the drugs of the regimens the fact holds for this patient.
        regimens = next((value for fact, value in self.held if fact == source), None)
        found = history_agents(regimens, action.get("rechallenge") or ())
        return {**action, "agents": [*action.get("agents", ()), *found]}

    @cached_property
    def safety(self) -> SafetyAction | None:
        """The unit's safety rule, typed (its agents those of ``action``), or None when the
        unit is not a safety rule."""
        action = self.action
        if action.get("type") != "safety":
            return None
        return SafetyAction.model_validate(action)

    @cached_property
    def therapy(self) -> TherapyAction | None:
        """The unit's therapy step, typed, or None when the unit is not one."""
        action = self.action
        if action.get("type") != "therapy":
            return None
        return TherapyAction.model_validate(action)

    def cite(self) -> dict[str, str]:
        return {
            "unit_id": self.unit_id,
            "source": self.source,
            "anchor": self.anchor,
            "version": self.version,
            "grade": self.grade,
        }


@dataclass(frozen=True)
class EvidenceRequest:
    """What one board member needs from the knowledge base."""

    role: str
    query: str
    kinds: tuple[str, ...]
    # Every unit of these kinds, those that do not apply too (``applies`` False): the safety
    # gate reports a rule it checked and passed, not only the rules that fire.
    everything: bool = False


@dataclass(frozen=True)
class Retrieved:
    """One member's evidence: every unit of its kinds whose context applies (True) or cannot
    be decided for lack of data (None) - and, for a request for ``everything``, also those
    that do not apply (False) - and its top-k hybrid hits for the query (never a unit that
    does not apply); ``considered`` holds the therapy steps that do not apply."""

    applicable: list[Evidence]
    hits: list[Evidence]
    # Therapy steps of the case's cancer that do not apply, each with its failed conditions:
    # the options a tumour board weighs and rules out (only for requests for therapy steps).
    considered: list[Evidence] = field(default_factory=list)


class Retriever(Protocol):
    def retrieve(
        self,
        *,
        cancer_type: str,
        case: Mapping[str, Any],
        requests: Sequence[EvidenceRequest],
        k: int,
    ) -> dict[str, Retrieved]:
        """Evidence for each request, keyed by role. One call for the whole panel, so that a
        retriever can batch the work (one embedding call, one connection)."""
        ...


@dataclass(frozen=True)
class PastCase:
    """An entry of CorrectKB (verified) or ChainKB (error reflection)."""

    kind: str
    summary: str
    lesson: str
    similarity: float
    entry_id: int = 0  # the memory's id: the plan records which entries informed it
    label: str = ""  # "CorrectKB #12"


class ExperienceRetriever(Protocol):
    def similar(self, *, case: Mapping[str, Any], k: int) -> list[PastCase]: ...


class NoExperience:
    """No experience memory (the command line's dry runs, the engine's unit tests)."""

    def similar(self, *, case: Mapping[str, Any], k: int) -> list[PastCase]:
        return []


@dataclass(frozen=True)
class Usage:
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0


DeltaCallback = Callable[[str], Awaitable[None]]


class LLM(Protocol):
    def model_for(self, role: str) -> str: ...

    async def complete_structured(
        self,
        *,
        role: str,
        system: str,
        user: str,
        schema: type[BaseModel],
        on_delta: DeltaCallback | None = None,
    ) -> tuple[BaseModel, Any]: ...


@dataclass
class EngineEvent:
    """Something that happened, for the board and the record."""

    kind: EventKind
    payload: dict[str, Any]
    role: str = ""
    round: int = 0


@dataclass(frozen=True)
class Step:
    """Which step of the protocol: its kind, round and member (and the member a review is
    about). The journal stores one row per step under its ``key``, the name a resumed run
    looks it up by: the key's format is the one runs have been saved with, so a run
    interrupted by an upgrade resumes after it."""

    kind: StepKind
    round: int = 0
    role: str = ""
    target: str = ""

    @property
    def key(self) -> str:
        match self.kind:
            case StepKind.INTAKE | StepKind.TRIAGE | StepKind.GATE | StepKind.PLAN:
                return str(self.kind)
            case StepKind.EXPERIENCE:
                return f"r{self.round}.experience"
            case StepKind.RETRIEVAL:
                return f"retrieval.{self.role}"
            case StepKind.REPORT | StepKind.VOTE:
                return f"r{self.round}.{self.kind}.{self.role}"
            case StepKind.REVIEW:
                return f"r{self.round}.review.{self.role}.{self.target}"
            case StepKind.SYNTHESIS | StepKind.CONSENSUS:
                return f"r{self.round}.{self.kind}"
            case _:
                assert_never(self.kind)

    @classmethod
    def retrieval(cls, role: str) -> Step:
        return cls(StepKind.RETRIEVAL, role=role)

    @classmethod
    def report(cls, round_no: int, role: str) -> Step:
        return cls(StepKind.REPORT, round_no, role)

    @classmethod
    def review(cls, round_no: int, reviewer: str, target: str) -> Step:
        return cls(StepKind.REVIEW, round_no, reviewer, target)

    @classmethod
    def synthesis(cls, round_no: int) -> Step:
        return cls(StepKind.SYNTHESIS, round_no, COORDINATOR)

    @classmethod
    def vote(cls, round_no: int, role: str) -> Step:
        return cls(StepKind.VOTE, round_no, role)

    @classmethod
    def consensus(cls, round_no: int) -> Step:
        return cls(StepKind.CONSENSUS, round_no, COORDINATOR)


@dataclass
class StepResult:
    """What a step leaves behind: its result (journaled for resumption) and its events."""

    result: dict[str, Any]
    events: list[EngineEvent] = field(default_factory=list)
    usage: Usage | None = None
    fallback: str = ""


class StepStore(Protocol):
    async def load(self, step: Step) -> dict[str, Any] | None:
        """The journaled result of a completed step, or None: resumption skips done work."""
        ...

    async def commit(self, step: Step, result: StepResult) -> None:
        """Persist the step's result and events atomically (events get sequence numbers)."""
        ...

    async def delta(self, *, role: str, round: int, text: str) -> None:
        """An ephemeral token fragment for the live board; never persisted."""
        ...

    async def cancelled(self) -> bool: ...


class MemoryStore:
    """A StepStore in memory: for the CLI's dry runs and the engine's unit tests."""

    def __init__(self) -> None:
        self.steps: dict[str, dict[str, Any]] = {}
        self.events: list[EngineEvent] = []
        self.deltas: list[tuple[str, int, str]] = []
        self.cancel = False

    async def load(self, step: Step) -> dict[str, Any] | None:
        return self.steps.get(step.key)

    async def commit(self, step: Step, result: StepResult) -> None:
        if step.key in self.steps:
            raise RuntimeError(f"step {step.key} committed twice")
        self.steps[step.key] = result.result
        self.events.extend(result.events)

    async def delta(self, *, role: str, round: int, text: str) -> None:
        self.deltas.append((role, round, text))

    async def cancelled(self) -> bool:
        return self.cancel
