"""Typed messages of the deliberation and the ``mdtboard.plan/1`` output (pydantic models,
which also give the JSON Schemas sent to the LLM)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PLAN_FORMAT: Literal["mdtboard.plan/1"] = "mdtboard.plan/1"

Modality = Literal[
    "surgery",
    "ablation",
    "locoregional",
    "systemic",
    "radiotherapy",
    "supportive",
    "antiviral",
    "transplant",
    "surveillance",
    "referral",
]
Intent = Literal["curative", "palliative", "surveillance"]
Severity = Literal["critical", "major", "minor"]
Phase = Literal["acute_0_3m", "intermediate_3_12m", "long_term_12m_plus"]
Anchor = Literal["mRECIST", "RECIST 1.1", "iRECIST", "Lugano", "other"]
GateStatus = Literal["pass", "fail", "unknown"]
ConflictKind = Literal["risk", "semantic", "implementation"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


# --- what a role answers (sent to the LLM as JSON Schema) ---------------------------------


class Claim(_Model):
    text: str = Field(description="One clinical statement.")
    evidence: list[str] = Field(
        default_factory=list, description="Unit ids of retrieved KB units that support it."
    )
    confidence: float = Field(ge=0, le=1)


class ProposedComponent(_Model):
    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list, description="Drug names, if any.")
    evidence: list[str] = Field(default_factory=list)


class RejectedOption(_Model):
    option: str
    reason: str


class Constraint(_Model):
    severity: Severity
    text: str
    agents: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)


class MonitoringProposal(_Model):
    phase: Phase
    what: str
    interval: str
    anchor: Anchor
    evidence: list[str] = Field(default_factory=list)


class RoleReport(_Model):
    """A role's answer in one round."""

    conclusion: str
    claims: list[Claim] = Field(default_factory=list)
    intent: Intent | None = None
    components: list[ProposedComponent] = Field(default_factory=list)
    rejected: list[RejectedOption] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    monitoring: list[MonitoringProposal] = Field(default_factory=list)
    needs_data: list[str] = Field(
        default_factory=list, description="Case fields that are missing and matter."
    )
    confidence: float = Field(ge=0, le=1)


class CrossReview(_Model):
    agree: bool
    critique: str
    concerns: list[str] = Field(
        default_factory=list, description="Components or claims the reviewer disputes."
    )


class ResidualContext(_Model):
    """MDTeamGPT's compressed round summary; later rounds see only the last two."""

    consistency: str
    conflict: str
    independence: str
    integration: str
    tools_usage: str = ""
    long_term_memory: str = ""


class DraftPlan(_Model):
    summary: str
    intent: Intent
    components: list[ProposedComponent]
    rejected: list[RejectedOption] = Field(default_factory=list)
    monitoring: list[MonitoringProposal] = Field(default_factory=list)


class Synthesis(_Model):
    residual: ResidualContext
    draft: DraftPlan
    confidence: float = Field(ge=0, le=1)


class Vote(_Model):
    agree: bool
    advice: str = ""


# --- the plan -------------------------------------------------------------------------------


class PlanComponent(_Model):
    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=list)


class Recommendation(_Model):
    summary: str
    intent: Intent
    components: list[PlanComponent]


class GateResult(_Model):
    gate: str
    status: GateStatus
    detail: str
    unit: str = ""
    needs: list[str] = Field(default_factory=list)


class Flag(_Model):
    severity: Severity
    text: str
    evidence: list[str] = Field(default_factory=list)


class SafetyBlock(_Model):
    gates: list[GateResult] = Field(default_factory=list)
    flags: list[Flag] = Field(default_factory=list)


class MonitoringItem(_Model):
    phase: Phase
    what: str
    interval: str
    anchor: Anchor


class EvidenceItem(_Model):
    unit_id: str
    source: str
    anchor: str
    version: str
    grade: str


class ConflictRecord(_Model):
    between: list[str]
    kind: ConflictKind
    score: float = 0.0
    resolution: str


class Plan(_Model):
    format: Literal["mdtboard.plan/1"] = PLAN_FORMAT
    case_id: str
    engine: str
    staging: dict[str, Any]
    recommendation: Recommendation
    rejected_options: list[RejectedOption] = Field(default_factory=list)
    safety: SafetyBlock
    monitoring: list[MonitoringItem]
    evidence: list[EvidenceItem]
    confidence: float
    conflicts: list[ConflictRecord] = Field(default_factory=list)
    abstain: bool = False
    needs_data: list[str] = Field(default_factory=list)
    rounds: int = 1
