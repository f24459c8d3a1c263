"""What the LLM did in a consultation, turn by turn: tokens and cost per call, per role and per
round, and which turns the guideline engine answered instead, and why.

One fold for every reader (the board's live view, the consultation's status line, the plan's
``llm`` block, the PDF cover, the bench), so that they cannot disagree. A turn is a step an LLM
was asked to answer (a report, a review, a synthesis, a vote); in guideline mode there are none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Why the guideline engine answered a turn, by the LLM client's error (its class name heads
# the turn's recorded fallback text: "LLMBudgetExceeded: token budget reached; ...").
FALLBACK_REASONS: dict[str, str] = {
    "LLMBudgetExceeded": "token budget reached",
    "LLMUnavailable": "LLM endpoint unavailable (timeout, connection or server error)",
    "LLMInvalidOutput": "replies invalid after a repair request",
    "RoundOverBudget": "the token budget would not cover the round",
}
OTHER_REASON = "unexpected LLM error"
GUIDELINE_ANSWERED = "the guideline engine answered this turn"


def fallback_text(error: str) -> str:
    """The fallback recorded on a turn the guideline engine answered: the error's class name
    (kept for the logs and tests that look for it) and the reason a clinician reads."""
    return f"{error}: {FALLBACK_REASONS.get(error, OTHER_REASON)}; {GUIDELINE_ANSWERED}"


def fallback_reason(fallback: str) -> str:
    """The reason of a recorded fallback text ("token budget reached")."""
    error = fallback.split(":", 1)[0].strip()
    return FALLBACK_REASONS.get(error, OTHER_REASON)


@dataclass(frozen=True)
class Turn:
    round: int
    role: str
    step: str  # report | review | synthesis | vote
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    fallback: str = ""

    @property
    def asked_llm(self) -> bool:
        """A turn the LLM was asked to answer: it answered (a model is recorded) or the guideline
        engine answered in its place (a fallback is recorded)."""
        return bool(self.model or self.fallback)


def turn_from_payload(step: str, role: str, round_no: int, payload: Mapping[str, Any]) -> Turn:
    """A turn from a board event's payload (its ``usage`` and ``fallback``)."""
    usage = payload.get("usage") or {}
    return Turn(
        round=round_no,
        role=role,
        step=step,
        model=str(usage.get("model") or ""),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cost_usd=float(usage.get("cost_usd") or 0.0),
        fallback=str(payload.get("fallback") or ""),
    )


@dataclass
class Tally:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    fallbacks: int = 0

    def add(self, turn: Turn) -> None:
        self.calls += 1
        self.prompt_tokens += turn.prompt_tokens
        self.completion_tokens += turn.completion_tokens
        self.cost_usd += turn.cost_usd
        self.fallbacks += bool(turn.fallback)

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "guideline_turns": self.fallbacks,
        }


@dataclass
class Account:
    """The fold of a consultation's turns."""

    total: Tally = field(default_factory=Tally)
    by_round: dict[int, Tally] = field(default_factory=dict)
    by_role: dict[str, Tally] = field(default_factory=dict)
    by_round_role: dict[tuple[int, str], Tally] = field(default_factory=dict)
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, turn: Turn) -> bool:
        """Fold one turn in; False (and nothing counted) when the LLM was not asked."""
        if not turn.asked_llm:
            return False
        self.total.add(turn)
        self.by_round.setdefault(turn.round, Tally()).add(turn)
        self.by_role.setdefault(turn.role, Tally()).add(turn)
        self.by_round_role.setdefault((turn.round, turn.role), Tally()).add(turn)
        if turn.fallback:
            self.reasons[fallback_reason(turn.fallback)] += 1
        return True

    @property
    def turns(self) -> int:
        return self.total.calls

    @property
    def guideline_turns(self) -> int:
        return self.total.fallbacks

    @property
    def note(self) -> str:
        """ "20 of 57 turns answered by the guideline engine: token budget reached", or "" when
        the LLM answered every turn it was asked."""
        if not self.guideline_turns:
            return ""
        reasons = ", ".join(
            reason if len(self.reasons) == 1 else f"{reason} ({count})"
            for reason, count in self.reasons.most_common()
        )
        return (
            f"{self.guideline_turns} of {self.turns} turns answered by the guideline engine: "
            f"{reasons}"
        )

    def as_dict(self) -> dict[str, Any]:
        """The plan's ``llm`` block (JSON)."""
        return {
            **self.total.as_dict(),
            "fallback_reasons": dict(self.reasons.most_common()),
            "note": self.note,
            "by_round": [
                {"round": number, **tally.as_dict()}
                for number, tally in sorted(self.by_round.items())
            ],
            "by_role": [
                {"role": role, **tally.as_dict()} for role, tally in sorted(self.by_role.items())
            ],
        }


def account(turns: Iterable[Turn]) -> Account:
    folded = Account()
    for turn in turns:
        folded.add(turn)
    return folded


def budget_note(budget: Mapping[str, Any] | None) -> str:
    """What a round-end budget check decided, in words ("" when the budget was enough)."""
    if not budget:
        return ""
    next_round, estimate, left = budget.get("round"), budget.get("estimate"), budget.get("left")
    if budget.get("decision") == "stopped":
        return (
            f"stopped before round {next_round}: the token budget left ({left} tokens) would not "
            f"cover it (about {estimate})"
        )
    return (
        f"round {next_round} ran although the token budget left ({left} tokens) would not cover "
        f"it (about {estimate})"
    )


def joined(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def status_line(status: str, note: str) -> str:
    """ "completed — 20 of 57 turns answered by the guideline engine: token budget reached"."""
    return f"{status} — {note}" if note else status
