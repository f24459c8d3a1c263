"""A comparator plan: an ``mdtboard.plan/1`` document read by the clinical core's one plan
parser (``clinical.plan``), reduced to what a blinded packet shows.

Only the recommendation with its components, options not advised, safety, monitoring and data
needed are kept; anything else in the document, an ``engine`` name included, is dropped so that
it can never reach a rater.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from clinical.plan import Plan, PlanError, plan_parse, plan_parse_bytes

# What a blinded packet shows of a plan, and nothing else.
PACKET_FIELDS: Final[dict[str, Any]] = {
    "format": True,
    "case_id": True,
    "recommendation": {
        "summary": True,
        "intent": True,
        "components": {
            "__all__": {
                "role",
                "modality",
                "description",
                "when",
                "agents",
                "dose_adjustments",
                "conditions",
                "order",
                "rank",
            }
        },
    },
    "rejected_options": {"__all__": {"option", "reason"}},
    "safety": {
        "gates": {"__all__": {"gate", "status", "detail"}},
        "flags": {"__all__": {"severity", "text"}},
        "notes": True,
    },
    "monitoring": {"__all__": {"phase", "what", "interval", "anchor"}},
    "needs_data": True,
    "abstain": True,
}


@dataclass(frozen=True)
class ParsedComparator:
    plan: dict[str, Any] | None
    errors: tuple[PlanError, ...]

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors


def packet_document(plan: Plan) -> dict[str, Any]:
    """The plan as a comparator is stored: only what a packet shows."""
    document: dict[str, Any] = plan.model_dump(mode="json", include=PACKET_FIELDS)
    document["safety"].setdefault("notes", [])
    return document


def parse_plan_bytes(raw: bytes) -> ParsedComparator:
    """Decode and validate an uploaded or pasted plan; never raises on bad input."""
    parsed = plan_parse_bytes(raw)
    if parsed.plan is None or parsed.errors:
        return ParsedComparator(None, parsed.errors)
    return ParsedComparator(packet_document(parsed.plan), ())


def validate_plan(data: Any) -> tuple[dict[str, Any] | None, list[PlanError]]:
    """The plan reduced to what a packet shows, and every problem found in it."""
    parsed = plan_parse(data)
    if parsed.plan is None or parsed.errors:
        return None, list(parsed.errors)
    return packet_document(parsed.plan), []
