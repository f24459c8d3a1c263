"""Evidence as the engine reads it, built one way from a knowledge unit's provenance and
content, whichever store holds the unit (the database, or a bundle in memory)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clinical.applicability import context_applies, missing_facts
from clinical.explain import failed_conditions, held_conditions
from clinical.rules import Context
from consult.engine.protocols import Evidence


def unit_evidence(
    *,
    unit_id: str,
    kind: str,
    cancer_type: str,
    title: str,
    text: str,
    anchor: str,
    version: str,
    version_id: int,
    source: str,
    grade: str,
    grade_ordinal: int,
    content: Mapping[str, Any],
    facts: Mapping[str, Any],
    score: float = 0.0,
) -> Evidence:
    """A unit as evidence for the patient whose ``facts`` are given: whether its context
    applies (True, False, or None when a fact it needs is missing), what is missing, and why
    it holds."""
    context = Context.model_validate(content.get("context") or {})
    applies = context_applies(context, facts)
    return Evidence(
        unit_id=unit_id,
        kind=kind,
        cancer_type=cancer_type,
        title=title,
        text=text,
        anchor=anchor,
        version=version,
        version_id=version_id,
        source=source,
        grade=grade,
        grade_ordinal=grade_ordinal,
        content=content,
        applies=applies,
        missing=tuple(missing_facts(context, facts)),
        held=held_conditions(context, facts),
        failed=failed_conditions(context, facts) if applies is False else (),
        score=score,
    )
