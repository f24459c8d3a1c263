"""Concordance of a plan with an evaluation file's ``expected`` block (FORMAT.md §3)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from clinical.applicability import case_facts
from clinical.calculators import derive_all, staging_summary
from consult.bundle_retriever import BundleRetriever
from consult.engine.deliberation import Deliberation, EngineConfig
from consult.engine.protocols import MemoryStore
from consult.engine.providers import GuidelineProvider
from consult.labels import fact_labels


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).casefold()


def concordance_failures(plan: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Every expectation the plan misses, in words; empty means concordant."""
    failures: list[str] = []
    staging = plan.get("staging") or {}
    for key, value in (expected.get("staging") or {}).items():
        if str(staging.get(key)).casefold() != str(value).casefold():
            failures.append(f"staging.{key} is {staging.get(key)!r}, expected {value!r}")
    recommendation = _text(plan.get("recommendation") or {})
    components = _text((plan.get("recommendation") or {}).get("components") or [])
    for group in expected.get("recommend_all") or []:
        if not any(term.casefold() in recommendation for term in group):
            failures.append(f"recommendation lacks any of {group}")
    for term in expected.get("recommend_none") or []:
        if term.casefold() in components:
            failures.append(f"recommendation components mention {term!r}")
    safety = _text(plan.get("safety") or {})
    for group in expected.get("safety_any") or []:
        if not any(term.casefold() in safety for term in group):
            failures.append(f"safety lacks any of {group}")
    monitoring = _text(plan.get("monitoring") or [])
    for group in expected.get("monitoring_any") or []:
        if not any(term.casefold() in monitoring for term in group):
            failures.append(f"monitoring lacks any of {group}")
    return failures + primary_failures(plan, expected) + abstention_failures(plan, expected)


def abstains(plan: Mapping[str, Any]) -> bool:
    """Whether the plan abstains because the case is outside the knowledge base."""
    return (plan.get("recommendation") or {}).get("intent") == "abstain"


def abstention_failures(plan: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """``abstain`` (our own cases' key, docs/coverage.md): true when the case is outside the
    knowledge base and the plan must say so first, false for a covered look-alike."""
    if "abstain" not in expected:
        return []
    wanted = bool(expected["abstain"])
    if abstains(plan) == wanted:
        return []
    if wanted:
        return ["the plan does not abstain on a situation outside the knowledge base"]
    return ["the plan abstains on a situation the knowledge base covers"]


# --- offline evaluation: the seed bundle, the guideline engine, no database ----------------------


def primary_failures(plan: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The ``primary_all`` / ``primary_none`` expectations (FORMAT.md §3): terms searched in
    the components whose role is ``primary`` only."""
    components = (plan.get("recommendation") or {}).get("components") or []
    primary = _text([c for c in components if c.get("role") == "primary"])
    failures = []
    for group in expected.get("primary_all") or []:
        if not any(term.casefold() in primary for term in group):
            failures.append(f"primary pathway lacks any of {group}")
    for term in expected.get("primary_none") or []:
        if term.casefold() in primary:
            failures.append(f"primary pathway mentions {term!r}")
    return failures


def plan_offline(case: Mapping[str, Any], bundle: Any, *, max_rounds: int = 3) -> dict[str, Any]:
    """The guideline engine's plan for a validated case over a knowledge-base bundle held in
    memory (the same applicability rules as the database retriever)."""
    deliberation = Deliberation(
        case=case,
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=BundleRetriever(bundle),
        store=MemoryStore(),
        provider=GuidelineProvider(),
        config=EngineConfig(max_rounds=max_rounds, cancel_poll_s=0.05),
        labels=fact_labels(),
    )
    plan = asyncio.run(deliberation.run())
    return plan.model_dump(mode="json")
