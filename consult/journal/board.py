"""The board's state, folded from persisted events. The page renders it whole; the
broadcaster and each WebSocket consumer keep one per consultation, apply each new event to
it and re-render only what the event changed."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, assert_never

from clinical.vocab import (
    CORE_ROLES,
    NO_PAST_CASE,
    PHASE_LABELS,
    RELEVANT_STAGING,
    ROLE_LABELS,
    STAGING_LABELS,
    EventKind,
)
from consult.engine.accounting import (
    Account,
    budget_note,
    joined,
    status_line,
    turn_from_payload,
)
from consult.labels import fact_label
from consult.plan_view import PlanView, cancer_of, need_label, plan_view


def dom_id(text: str) -> str:
    """A deterministic, selector-safe DOM id fragment."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


@dataclass
class Panel:
    role: str
    state: str = "waiting"  # waiting | retrieving | thinking | done
    reason: str = ""
    hits: int = 0
    round: int = 0
    report: dict[str, Any] | None = None
    fallback: str = ""
    carried: bool = False  # the round's report is the previous one (no LLM call)
    ungrounded: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    # The drugs and modalities the Treatment member proposes (None before it has), and the
    # data the finished plan still needs (None before the plan): a member's safety rules and
    # data requests about drugs nobody proposed are noise to the clinician reading the board.
    proposed: frozenset[str] | None = None
    plan_needs: frozenset[str] | None = None

    @property
    def label(self) -> str:
        return ROLE_LABELS.get(self.role, self.role.replace("_", " ").title())

    @property
    def dom(self) -> str:
        return f"panel-{dom_id(self.role)}"

    @property
    def all_needs(self) -> list[str]:
        """The data this member asked for, by clinical label, each once."""
        report = self.report or {}
        return list(dict.fromkeys(need_label(n) for n in report.get("needs_data") or []))

    @property
    def needs(self) -> list[str]:
        """The data asked for that the plan still needs (all of it until there is a plan)."""
        if self.plan_needs is None:
            return self.all_needs
        return [n for n in self.all_needs if n in self.plan_needs]

    @property
    def needs_elsewhere(self) -> int:
        """How many data requests concern only options that are not in the plan."""
        return len(self.all_needs) - len(self.needs)

    @property
    def constraints(self) -> list[dict[str, Any]]:
        """The safety rules this member raised that concern a proposed drug or modality (or
        no drug in particular); all of them until Treatment has proposed something."""
        report = self.report or {}
        every = list(report.get("constraints") or [])
        if self.proposed is None:
            return every
        return [
            c
            for c in every
            if not c.get("agents") or {str(a).lower() for a in c["agents"]} & self.proposed
        ]

    @property
    def constraints_elsewhere(self) -> int:
        report = self.report or {}
        return len(report.get("constraints") or []) - len(self.constraints)

    @property
    def monitoring(self) -> list[dict[str, Any]]:
        """The member's follow-up proposals by phase, in time order (acute first)."""
        report = self.report or {}
        order = {phase: n for n, phase in enumerate(PHASE_LABELS)}
        items = sorted(
            report.get("monitoring") or [], key=lambda m: order.get(m.get("phase", ""), 99)
        )
        return [
            {**m, "phase_label": PHASE_LABELS.get(m.get("phase", ""), m.get("phase", ""))}
            for m in items
        ]


@dataclass
class RoundView:
    number: int
    residual: dict[str, Any] | None = None
    draft: dict[str, Any] | None = None
    critiques: list[dict[str, Any]] = field(default_factory=list)
    votes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    consensus: dict[str, Any] | None = None

    @property
    def dom(self) -> str:
        return f"round-{self.number}"


@dataclass
class TreeNode:
    node_id: str
    parent: str
    kind: str
    text: str
    author: str
    status: str
    refs: list[dict[str, Any]]
    round: int
    children: list[TreeNode] = field(default_factory=list)

    @property
    def dom(self) -> str:
        return f"node-{dom_id(self.node_id)}"

    @property
    def parent_dom(self) -> str:
        return f"node-{dom_id(self.parent)}"


@dataclass
class Board:
    consultation_id: int
    status: str = "queued"
    error: str = ""
    last_seq: int = 0
    intake: dict[str, Any] | None = None
    triage: dict[str, Any] | None = None
    panels: dict[str, Panel] = field(default_factory=dict)
    rounds: dict[int, RoundView] = field(default_factory=dict)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    gates: list[dict[str, Any]] = field(default_factory=list)
    nodes: dict[str, TreeNode] = field(default_factory=dict)
    roots: list[TreeNode] = field(default_factory=list)
    review: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    # Every LLM turn: tokens per role and round, and the turns the guideline engine answered.
    llm: Account = field(default_factory=Account)
    budget_note: str = ""  # a round-end budget check that stopped or warned
    resumed: bool = False
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def __post_init__(self) -> None:
        for role in CORE_ROLES:
            self.panels.setdefault(role, Panel(role))

    def panel(self, role: str) -> Panel:
        return self.panels.setdefault(role, Panel(role))

    def round(self, number: int) -> RoundView:
        return self.rounds.setdefault(number, RoundView(number))

    @property
    def plan_view(self) -> PlanView | None:
        if self.plan is None:
            return None
        return plan_view(self.plan, (self.intake or {}).get("staging_keys"))

    @property
    def gates_in_order(self) -> list[dict[str, Any]]:
        """Failed gates first, then those that could not be checked, then the passed ones."""
        order = {"fail": 0, "unknown": 1, "pass": 2}
        return sorted(self.gates, key=lambda g: order.get(str(g.get("status")), 1))

    @property
    def staging_chips(self) -> list[tuple[str, Any]]:
        """The derived staging of the case's cancer, in clinical words."""
        if not self.intake:
            return []
        staging = self.intake.get("staging") or {}
        keys = self.intake.get("staging_keys") or RELEVANT_STAGING.get(
            self.intake.get("cancer_type") or cancer_of(staging), tuple(staging)
        )
        return [(STAGING_LABELS.get(k, k), staging[k]) for k in keys if staging.get(k) is not None]

    @property
    def missing_staging(self) -> list[str]:
        return [fact_label(m) for m in (self.intake or {}).get("missing") or []]

    @property
    def ordered_rounds(self) -> list[RoundView]:
        return [self.rounds[n] for n in sorted(self.rounds)]

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed", "cancelled")

    @property
    def fallback_note(self) -> str:
        """ "20 of 57 turns answered by the guideline engine: token budget reached" ("" when
        the LLM answered every turn, and in guideline mode), and a budget check's decision."""
        return joined(self.llm.note, self.budget_note)

    @property
    def status_text(self) -> str:
        """The status as the clinician reads it: "completed — 20 of 57 turns answered by the
        guideline engine: token budget reached"."""
        return status_line(self.status, self.fallback_note)

    @property
    def usage_rows(self) -> list[dict[str, Any]]:
        """Tokens per round and role, in round order, for the board's usage table."""
        return [
            {"round": number, "role": role, "label": _role_label(role), **tally.as_dict()}
            for (number, role), tally in sorted(self.llm.by_round_role.items())
        ]

    @property
    def elapsed_seconds(self) -> int | None:
        """How long the run has taken so far (or took), None before it started."""
        if self.started_at is None:
            return None
        end = self.finished_at or datetime.now(UTC)
        return max(0, int((end - self.started_at).total_seconds()))

    @property
    def elapsed(self) -> str:
        seconds = self.elapsed_seconds
        return "" if seconds is None else f"{seconds // 60} min {seconds % 60} s"


def apply(board: Board, event: dict[str, Any]) -> set[str]:
    """Fold one event into the board; returns what changed: "status", "intake", "panel:<role>",
    "panels", "round:<n>", "conflicts", "gates", "node:<id>", "plan", "metrics"."""
    board.last_seq = max(board.last_seq, int(event["seq"]))
    kind = event_kind(event["kind"])
    if kind is None:
        return set()  # written by a newer version: the board shows what it knows
    payload, role = event["payload"], event.get("role", "")
    number = int(event.get("round") or 0)
    match kind:
        case EventKind.STATUS:
            board.status = payload.get("status", board.status)
            board.error = payload.get("error", "") or ""
            board.resumed = board.resumed or bool(payload.get("resumed"))
            _clock(board, event.get("at"))
            return {"status"}
        case EventKind.CANCELLED:
            board.status = "cancelled"
            _clock(board, event.get("at"))
            return {"status"}
        case EventKind.INTAKE:
            board.intake = payload
            return {"intake"}
        case EventKind.TRIAGE:
            board.triage = payload
            for specialist, reason in payload.get("specialists", {}).items():
                board.panel(specialist).reason = reason
            for name in payload.get("panel", []):
                board.panel(name)
            return {"intake", "panels"}
        case EventKind.RETRIEVAL:
            panel = board.panel(role)
            panel.hits = len(payload.get("hits", []))
            panel.state = "thinking"
            return {f"panel:{role}"}
        case EventKind.MESSAGE:
            return _message(board, role, number, payload)
        case EventKind.GROUNDING:
            board.panel(role).ungrounded = payload.get("ungrounded", [])
            return {f"panel:{role}"}
        case EventKind.CRITIQUE:
            board.round(number).critiques.append(payload)
            return {f"round:{number}", *_turn(board, "review", role, number, payload)}
        case EventKind.RESIDUAL:
            board.round(number).residual = _with_memory(payload)
            return {f"round:{number}"}
        case EventKind.DRAFT:
            board.round(number).draft = payload
            return {f"round:{number}", *_turn(board, "synthesis", role, number, payload)}
        case EventKind.VOTE:
            board.round(number).votes.append((role, payload.get("vote", {})))
            return {f"round:{number}", *_turn(board, "vote", role, number, payload)}
        case EventKind.CONSENSUS:
            board.round(number).consensus = payload
            if payload.get("budget"):
                board.budget_note = budget_note(payload["budget"])
                return {f"round:{number}", "metrics"}
            return {f"round:{number}"}
        case EventKind.CONFLICT:
            board.conflicts.append({**payload, "round": number, "raised_by": role})
            return {"conflicts"}
        case EventKind.GATE:
            board.gates.append(payload)
            return {"gates"}
        case EventKind.EVIDENCE_NODE:
            return _node(board, role, number, payload)
        case EventKind.REVIEW:
            board.review = payload
            return {"plan"}
        case EventKind.PLAN:
            board.plan = payload
            view = board.plan_view
            wanted = frozenset(n["label"] for n in view.needs) if view else frozenset()
            changed = {"plan"}
            for key, panel in board.panels.items():
                panel.plan_needs = wanted
                if panel.all_needs:
                    changed.add(f"panel:{key}")
            return changed
        case _:
            assert_never(kind)


def _with_memory(residual: dict[str, Any]) -> dict[str, Any]:
    """The residual as the round card shows it: the past cases recalled ("Long-term memory")
    follow the Integration; a round that recalled none shows no more than it did before."""
    memory = str(residual.get("long_term_memory") or "")
    if not memory or memory == NO_PAST_CASE:
        return residual
    integration = str(residual.get("integration") or "")
    return {**residual, "integration": f"{integration} Long-term memory: {memory}"}


def event_kind(raw: str) -> EventKind | None:
    try:
        return EventKind(raw)
    except ValueError:
        return None


def _proposed(report: dict[str, Any]) -> frozenset[str]:
    return frozenset(
        str(name).lower()
        for c in report.get("components") or []
        for name in [*(c.get("agents") or []), c.get("modality") or ""]
        if name
    )


def _message(board: Board, role: str, number: int, payload: dict[str, Any]) -> set[str]:
    panel = board.panel(role)
    panel.report, panel.round, panel.state = payload["report"], number, "done"
    panel.fallback = payload.get("fallback") or ""
    panel.carried = bool(payload.get("carried_over"))
    panel.usage = payload.get("usage")
    changed = {f"panel:{role}"}
    treatment = board.panels["treatment"].report if "treatment" in board.panels else None
    if treatment is not None:
        proposed = _proposed(treatment)
        for key, other in board.panels.items():
            if other.proposed != proposed:
                other.proposed = proposed
                if (other.report or {}).get("constraints"):
                    changed.add(f"panel:{key}")
    return {*changed, *_turn(board, "report", role, number, payload)}


def _turn(board: Board, step: str, role: str, number: int, payload: dict[str, Any]) -> set[str]:
    """An LLM turn's tokens, cost and fallback into the board's account ("metrics" changed);
    nothing for a step no LLM was asked to answer."""
    turn = turn_from_payload(step, role or "coordinator", number, payload)
    if not board.llm.add(turn):
        return set()
    board.tokens += turn.prompt_tokens + turn.completion_tokens
    board.cost_usd += turn.cost_usd
    return {"metrics"}


def _role_label(role: str) -> str:
    return ROLE_LABELS.get(role, role.replace("_", " ").title())


def _node(board: Board, role: str, number: int, payload: dict[str, Any]) -> set[str]:
    node = TreeNode(
        node_id=payload["id"],
        parent=payload.get("parent", "question"),
        kind=payload["kind"],
        text=payload["text"],
        author=payload.get("author", role),
        status=payload.get("status", ""),
        refs=payload.get("refs", []),
        round=number,
    )
    board.nodes[node.node_id] = node
    parent = board.nodes.get(node.parent)
    (parent.children if parent else board.roots).append(node)
    return {f"node:{node.node_id}"}


# The kinds that change the status line (status, error, resume, tokens, cost, clock): the
# page's status poll folds only these.
STATUS_LINE_KINDS: frozenset[EventKind] = frozenset(
    {
        EventKind.STATUS,
        EventKind.CANCELLED,
        # The LLM turns: their tokens, cost and fallbacks are on the status line, and so is a
        # round-end budget check.
        EventKind.MESSAGE,
        EventKind.CONSENSUS,
        EventKind.CRITIQUE,
        EventKind.DRAFT,
        EventKind.VOTE,
    }
)


def build_board(consultation_id: int, events: Iterable[dict[str, Any]]) -> Board:
    board = Board(consultation_id=consultation_id)
    for event in events:
        apply(board, event)
    return board


def event_dict(event: Any) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "kind": event.kind,
        "role": event.role,
        "round": event.round,
        "payload": event.payload,
        "at": event.created_at,
    }


def event_to_wire(event: dict[str, Any]) -> dict[str, Any]:
    """The event as the channel layer carries it (msgpack: no datetimes)."""
    at = event.get("at")
    return {**event, "at": at.isoformat() if at is not None else None}


def event_from_wire(event: dict[str, Any]) -> dict[str, Any]:
    at = event.get("at")
    return {**event, "at": datetime.fromisoformat(at) if at else None}


def _clock(board: Board, at: datetime | None) -> None:
    """The run's start (its first "running") and end (a final status), from event times."""
    if at is None:
        return
    if board.status == "running" and board.started_at is None:
        board.started_at = at
    elif board.finished and board.finished_at is None:
        board.finished_at = at
