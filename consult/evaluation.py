"""Concordance of a plan with an evaluation file's ``expected`` block (FORMAT.md §3)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


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
    return failures
