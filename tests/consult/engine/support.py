"""Engine test support: the seed bundle as an in-memory retriever and a scripted fake LLM."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from clinical.applicability import case_facts
from clinical.calculators import derive_all, staging_summary
from consult.bundle_retriever import BundleRetriever
from consult.engine.deliberation import Deliberation, EngineConfig
from consult.engine.protocols import Evidence, MemoryStore, Retriever, StepStore
from consult.engine.providers import GuidelineProvider, LLMProvider
from consult.engine.schemas import CrossReview, CrossReviews, RoleReport, Synthesis
from tests.fixtures.seed import seed_bundle


def load_case(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    case = json.loads(path.read_text())
    return case, case.pop("expected")


def deliberation(
    case: dict[str, Any],
    *,
    retriever: Retriever,
    store: StepStore | None = None,
    provider: GuidelineProvider | LLMProvider | None = None,
    config: EngineConfig | None = None,
) -> Deliberation:
    return Deliberation(
        case=case,
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=retriever,
        store=store or MemoryStore(),
        provider=provider or GuidelineProvider(),
        config=config,
    )


class ScriptedLLM:
    """An in-process LLM double: ``answer(role, schema, user) -> dict | Exception``."""

    def __init__(self, answer: Callable[[str, type[BaseModel], dict[str, Any]], Any]) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str]] = []

    def model_for(self, role: str) -> str:
        return "scripted-model"

    async def complete_structured(
        self, *, role: str, system: str, user: str, schema: type[BaseModel], on_delta: Any = None
    ) -> Any:
        self.calls.append((role, schema.__name__))
        # A member is sent its role's part of RoleReport, the Coordinator its part of Synthesis:
        # the answers are written for the message the schema's title names.
        title = schema.model_json_schema().get("title")
        message = {"RoleReport": RoleReport, "Synthesis": Synthesis}.get(str(title), schema)
        payload = json.loads(user)
        if schema is CrossReviews:
            # One reviewer's reviews of several reports: the script answers each as a review.
            reply: Any = {"reviews": {}}
            for target, report in payload["reports"].items():
                one = {**payload, "target": target, "report": report}
                one.pop("reports")
                answered = self.answer(role, CrossReview, one)
                if isinstance(answered, Exception):
                    raise answered
                reply["reviews"][target] = answered
        else:
            reply = self.answer(role, message, payload)
        if isinstance(reply, Exception):
            raise reply
        if on_delta is not None:
            await on_delta(json.dumps(reply)[:20])
        usage = type(
            "U",
            (),
            {
                "model": "scripted-model",
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "latency_ms": 1.0,
                "cost_usd": 0.0,
            },
        )()
        return schema.model_validate(reply), usage


def llm_answers(
    *,
    disagree_rounds: int = 0,
    invalid_roles: tuple[str, ...] = (),
    cite: str | None = None,
    propose: dict[str, Any] | None = None,
) -> Any:
    """A board's LLM answers for ``ScriptedLLM``: every member reports citing the first unit
    that applies (or ``cite``), cross-reviews agree, Safety reviews and votes no in the first
    ``disagree_rounds`` rounds (an objection in review is what gets a member polled), and
    the roles in ``invalid_roles`` never answer validly."""
    votes_seen: dict[int, int] = {}

    def answer(role: str, schema: type, user: dict[str, Any]) -> Any:
        if role in invalid_roles:
            return ValueError("reply stayed invalid after repair")
        # Each role is sent its part of RoleReport, and the Coordinator its part of Synthesis:
        # the schema's title names the message.
        name = schema.model_json_schema().get("title")
        if name == "RoleReport":
            # A unit listed applies unless it says otherwise or names the data it waits for.
            evidence = [
                e["unit_id"]
                for e in user["evidence"]
                if e.get("applies", True) is True and "missing" not in e
            ]
            report: dict[str, Any] = {
                "conclusion": f"{role} view",
                "confidence": 0.8,
                "claims": [
                    {
                        "text": f"{role} claim",
                        "evidence": [cite or (evidence or [""])[0]],
                        "confidence": 0.8,
                    }
                ],
            }
            if role == "treatment" and propose:
                report["components"] = [propose]
                report["intent"] = "palliative"
            return report
        if name == "CrossReview":
            if user["round"] <= disagree_rounds and role == "safety":
                return {"agree": False, "critique": "The safety of this proposal needs revision."}
            return {"agree": True, "critique": "No objection."}
        if name == "Synthesis":
            return {
                "residual": {
                    "consistency": "c",
                    "conflict": "k",
                    "independence": "i",
                    "integration": "plan",
                },
                "draft": {"summary": "LLM summary", "intent": "palliative", "components": []},
                "confidence": 0.8,
            }
        if name == "Vote":
            round_no = user["round"]
            votes_seen[round_no] = votes_seen.get(round_no, 0) + 1
            disagree = round_no <= disagree_rounds and role == "safety"
            return {"agree": not disagree, "advice": "revise" if disagree else ""}
        raise AssertionError(schema)

    return answer


def evidence_unit(
    unit_id: str,
    *,
    kind: str,
    content: dict[str, Any],
    cancer_type: str = "any",
    applies: bool | None = True,
    missing: tuple[str, ...] = (),
) -> Evidence:
    """A knowledge unit as the retriever hands it over (``applies`` already decided)."""
    return Evidence(
        unit_id=unit_id,
        kind=kind,
        cancer_type=cancer_type,
        title=unit_id,
        text="",
        anchor="a",
        version="v1:test",
        version_id=0,
        source="test",
        grade="test",
        grade_ordinal=2,
        content=content,
        applies=applies,
        missing=missing,
    )


def safety_rule(unit_id: str, applies: bool | None = True, **action: Any) -> Evidence:
    """A safety unit; one whose applicability is unknown lacks the LVEF."""
    return evidence_unit(
        unit_id,
        kind="contraindication",
        content={"action": {"type": "safety", "gate": "g", "advice": "Follow the rule.", **action}},
        applies=applies,
        missing=() if applies is not None else ("organ_function.lvef_pct",),
    )


__all__ = [
    "BundleRetriever",
    "ScriptedLLM",
    "deliberation",
    "evidence_unit",
    "llm_answers",
    "load_case",
    "safety_rule",
    "seed_bundle",
]
