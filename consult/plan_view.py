"""A plan (``mdtboard.plan/1``) as a clinician reads it: the recommended pathway first, then
the alternatives with when, what was ruled out and why; staging of the case's cancer only;
clinical labels instead of field names; monitoring by phase in time order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clinical.vocab import MODALITY_LABELS, PHASE_LABELS, RELEVANT_STAGING, STAGING_LABELS
from consult.engine.answer import plan_answer
from consult.labels import choice_labels, clinical_text, fact_label, fact_labels

PHASES = tuple(PHASE_LABELS.items())  # in time order
# "organ_function.lvef_pct (for common.gate.anthracycline-lvef)"
_NEED = re.compile(r"^(?P<fact>[a-z_]+\.[a-z0-9_]+)(?: \(for (?P<unit>[^)]+)\))?$")


@dataclass
class MonitoringPhase:
    label: str
    items: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PlanView:
    question: str
    summary: str
    intent: str
    pathway: list[dict[str, Any]]
    alternatives: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    staging: list[tuple[str, Any]]
    gates: dict[str, list[dict[str, Any]]]  # "fail", "unknown", "pass"
    flags: list[dict[str, Any]]
    monitoring: list[MonitoringPhase]
    needs: list[dict[str, str]]
    abstain: bool
    confirm_first: list[str] = field(default_factory=list)
    # An LLM consultation's account (FORMAT: the plan's "llm" block): tokens per round and
    # role, and how many turns the guideline engine answered, and why ({} in guideline mode).
    llm: dict[str, Any] = field(default_factory=dict)

    @property
    def fallback_note(self) -> str:
        """ "20 of 57 turns answered by the guideline engine: token budget reached", or ""."""
        return str(self.llm.get("note") or "")

    # The answer first: at most three sentences in the question's own terms.
    sentences: list[str] = field(default_factory=list)

    @property
    def failed_gates(self) -> list[dict[str, Any]]:
        return self.gates.get("fail", [])

    @property
    def unknown_gates(self) -> list[dict[str, Any]]:
        return self.gates.get("unknown", [])

    @property
    def passed_gates(self) -> list[dict[str, Any]]:
        return self.gates.get("pass", [])


def need_label(item: str) -> str:
    """ "organ_function.lvef_pct (for common.gate.x)" -> "LVEF (%)": what to fill in."""
    match = _NEED.match(item)
    return fact_label(match["fact"]) if match else item


def cancer_of(staging: dict[str, Any]) -> str:
    """The cancer a staging block belongs to, for plans recorded without it."""
    for cancer, keys in RELEVANT_STAGING.items():
        if any(staging.get(k) is not None for k in keys if k != "tnm_stage"):
            return cancer
    return "lung_adenocarcinoma" if staging.get("tnm_stage") is not None else "other"


def _component(c: dict[str, Any]) -> dict[str, Any]:
    modality = c.get("modality", "")
    return {**c, "modality_label": MODALITY_LABELS.get(modality, modality)}


def _answer(doc: dict[str, Any], recommendation: dict[str, Any]) -> tuple[str, ...]:
    question = str(recommendation.get("question") or "")
    answer = plan_answer(doc, question=question, labels=fact_labels(), values=choice_labels())
    return answer.sentences


def plan_view(doc: dict[str, Any], staging_keys: Sequence[str] | None = None) -> PlanView:
    """``staging_keys``: the staging systems of the case's cancer
    (``guideline.relevant_staging``); without them they are inferred from the staging block."""
    staging = doc.get("staging") or {}
    keys = staging_keys or RELEVANT_STAGING.get(cancer_of(staging), tuple(STAGING_LABELS))
    components = (doc.get("recommendation") or {}).get("components") or []
    # A plan written before pathways existed has no roles: all of it is shown as the pathway.
    pathway = [_component(c) for c in components if c.get("role", "primary") == "primary"]
    alternatives = sorted(
        (_component(c) for c in components if c.get("role") == "alternative"),
        key=lambda c: c.get("rank") or 99,
    )
    gates: dict[str, list[dict[str, Any]]] = {"fail": [], "unknown": [], "pass": []}
    for gate in (doc.get("safety") or {}).get("gates") or []:
        gates.setdefault(gate.get("status", "unknown"), []).append(gate)
    by_phase = {key: MonitoringPhase(label) for key, label in PHASES}
    for item in doc.get("monitoring") or []:
        phase = by_phase.get(item.get("phase"))
        if phase is not None:
            phase.items.append(item)
    needs = []
    for item in doc.get("needs_data") or []:
        match = _NEED.match(item)
        if match:
            needs.append({"label": fact_label(match["fact"]), "for": match["unit"] or ""})
        else:
            needs.append({"label": item, "for": ""})
    recommendation = doc.get("recommendation") or {}
    return PlanView(
        question=recommendation.get("question") or "",
        summary=recommendation.get("summary") or "",
        intent=recommendation.get("intent") or "",
        pathway=pathway,
        alternatives=alternatives,
        rejected=list(doc.get("rejected_options") or []),
        staging=[(STAGING_LABELS.get(k, k), staging.get(k)) for k in keys],
        gates=gates,
        flags=list((doc.get("safety") or {}).get("flags") or []),
        monitoring=[p for p in by_phase.values() if p.items],
        needs=needs,
        abstain=bool(doc.get("abstain")),
        confirm_first=list(recommendation.get("confirm_first") or []),
        llm=dict(doc.get("llm") or {}),
        sentences=[clinical_text(s) for s in _answer(doc, recommendation)],
    )
