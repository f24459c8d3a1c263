"""A stub "LLM" that answers every deliberation turn with valid JSON built from the evidence
the engine sent, so LLM-mode runs end to end over real HTTP with the real SDK."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.llm_stub import StubReply, StubRequest


def request_payload(request: StubRequest) -> dict[str, Any]:
    text = request.user
    start = text.find("{")
    if start < 0:
        return {}
    # A repair request appends instructions after the original JSON: read the object only.
    value, _ = json.JSONDecoder().raw_decode(text[start:])
    return value if isinstance(value, dict) else {}


def _report(role: str, data: dict[str, Any]) -> dict[str, Any]:
    # A unit listed applies unless it says otherwise or names the data it waits for.
    evidence = [
        e for e in data.get("evidence", []) if e.get("applies", True) is True and "missing" not in e
    ]
    report: dict[str, Any] = {
        "conclusion": f"{role} assessment",
        "claims": [
            {"text": e["says"], "evidence": [e["unit_id"]], "confidence": 0.8} for e in evidence[:5]
        ],
        "confidence": 0.8,
    }
    if role == "treatment":
        report["intent"] = "palliative"
        report["components"] = [
            {
                "modality": e["modality"],
                "description": e.get("description", e["says"]),
                "agents": e.get("agents", []),
                "evidence": [e["unit_id"]],
            }
            for e in evidence
            if "modality" in e
        ]
    if role == "monitoring":
        report["monitoring"] = [
            {
                "phase": e["phase"],
                "what": e["what"],
                "interval": e["interval"],
                "anchor": e["anchor"],
                "evidence": [e["unit_id"]],
            }
            for e in evidence
            if "phase" in e
        ]
    return report


def clinical_responder(
    *,
    vote: Callable[[str, int], bool] | None = None,
    review: Callable[[str, int], bool] | None = None,
    delay_s: float = 0.0,
) -> Callable[[StubRequest], StubReply]:
    """Members that propose what applies; ``vote`` and ``review`` (role, round -> agree) make
    a member object (a member who objected in review is the one polled on the draft)."""

    def respond(request: StubRequest) -> StubReply:
        schema = str((request.json_schema or {}).get("title", ""))
        if not schema:  # JSON mode: the schema's title is in the system prompt
            schema = next(
                (
                    n
                    for n in ("RoleReport", "CrossReviews", "CrossReview", "Synthesis", "Vote")
                    if f'"title": "{n}"' in request.system or f'"title":"{n}"' in request.system
                ),
                "RoleReport",
            )
        data = request_payload(request)
        role = request.role
        if schema == "RoleReport":
            body: dict[str, Any] = _report(role, data)
        elif schema in ("CrossReview", "CrossReviews"):
            agree = review(str(data.get("reviewer")), int(data.get("round", 1))) if review else True
            body = {"agree": agree, "critique": "No objection." if agree else "Revise this."}
            if schema == "CrossReviews":  # one reviewer, several reports
                body = {"reviews": dict.fromkeys(data.get("reports") or {}, body)}
        elif schema == "Synthesis":
            body = {
                "residual": {
                    "consistency": "agreed",
                    "conflict": "none",
                    "independence": "-",
                    "integration": "plan",
                },
                "draft": {
                    "summary": "Plan from the weighted consensus.",
                    "intent": "palliative",
                    "components": [],
                },
                "confidence": 0.8,
            }
        else:
            agree = vote(role, int(data.get("round", 1))) if vote else True
            body = {"agree": agree, "advice": "" if agree else "revise"}
        return StubReply(content=json.dumps(body), delay_s=delay_s)

    return respond
