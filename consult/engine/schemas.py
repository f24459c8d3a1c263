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


ComponentRole = Literal["primary", "alternative"]


class ProposedComponent(_Model):
    """One treatment a member proposes. The plan recommends one pathway: the ``primary``
    components (the chosen option, then what goes with it); ``alternative`` ones are ranked
    fallbacks, each with ``when`` it would be chosen instead."""

    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list, description="Drug names, if any.")
    evidence: list[str] = Field(default_factory=list)
    role: ComponentRole = Field(
        default="primary",
        description="primary = part of the one recommended pathway; alternative = a ranked "
        "fallback.",
    )
    rank: int | None = Field(
        default=None, ge=1, description="For alternatives: 1 = next best after the pathway."
    )
    when: str = Field(default="", description="For alternatives: when it would be chosen instead.")
    dose_adjustments: list[str] = Field(
        default_factory=list,
        description="Renal, hepatic, age or frailty dose adjustments; a reduced-dose regimen "
        "is its own component.",
    )
    adjunct: bool = Field(
        default=False,
        description="True for care that goes with the pathway (antiviral prophylaxis, "
        "supportive care, fertility preservation) rather than being a treatment option.",
    )
    preference: int = Field(
        default=5, ge=1, le=9, description="Guideline preference among options (1 = preferred)."
    )
    with_modalities: list[Modality] = Field(
        default_factory=list,
        description="For adjuncts that only follow some pathways (adjuvant after surgery).",
    )
    declined_if: list[str] = Field(
        default_factory=list,
        description="Preference topics that take this option out of the pathway if declined.",
    )
    interchangeable: list[list[str]] = Field(
        default_factory=list,
        description="Groups of agents of which any one will do (cisplatin or carboplatin): a "
        "contraindication to one leaves the others in place of the whole regimen.",
    )
    rationale: list[str] = Field(
        default_factory=list, description="Patient facts that made it apply."
    )


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


class ObjectionAnswer(_Model):
    """Treatment's answer to an objection raised in the previous round."""

    objection: str
    by: str
    response: str


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
    answers: list[ObjectionAnswer] = Field(
        default_factory=list,
        description="How each objection addressed to you in the previous round was answered.",
    )
    confidence: float = Field(ge=0, le=1)


class CrossReview(_Model):
    agree: bool
    critique: str
    concerns: list[str] = Field(
        default_factory=list,
        description="Components (their exact description) the reviewer says must be removed.",
    )
    demote: list[str] = Field(
        default_factory=list,
        description="Components that may not start until a precondition is met (another "
        "option should go first).",
    )
    reasons: dict[str, str] = Field(
        default_factory=dict,
        description="For each component named in concerns or demote: the reason, with the unit id.",
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
    concerns: list[str] = Field(
        default_factory=list,
        description="Components (exact description) the voter wants removed in the revision.",
    )


# --- the plan -------------------------------------------------------------------------------


class PlanComponent(_Model):
    role: ComponentRole = "primary"
    order: int | None = None  # primary components, in sequence
    rank: int | None = None  # alternatives: 1 = next best
    when: str = ""
    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list)
    dose_adjustments: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=list)
    adjunct: bool = False
    rationale: list[str] = Field(default_factory=list)
    # A pathway option that failed a gate and leads only because nothing safer is on offer:
    # the precondition it waits for ("the large varices have been treated").
    waits_for: str = ""


class Recommendation(_Model):
    summary: str
    intent: Intent
    components: list[PlanComponent]
    question: str = ""
    # Critical safety rules about the pathway that could not be checked for lack of data: the
    # pathway is conditional on confirming them first ("Confirm before starting doxorubicin:
    # LVEF, not recorded"). Kept out of the components, which name only what is given.
    confirm_first: list[str] = Field(default_factory=list)


GateEffect = Literal[
    "",  # a plan recorded before effects were
    "clear",  # checked: the rule does not apply to this patient
    "removed",  # the item left the pathway and every alternative
    "withdrawn",  # the drug left the item; the regimen goes on without it or with its partner
    "held",  # kept only as an alternative for when the contraindication no longer holds
    "demoted",  # waits for a precondition; the next safe option goes first
    "precondition",  # given with the action the rule requires (premedication, a test)
    "dose",  # given at the adjusted dose
    "warning",  # given; the rule asks for attention
    "needs_data",  # cannot be checked: the inputs are missing
    "checked",  # a patient-level check (allergies, liver function) passed, shown with its values
]


class GateResult(_Model):
    """One safety rule checked against the plan. ``status`` is ``fail`` when an item cannot be
    given as planned (removed, held, demoted), ``pass`` when it can (``effect`` says whether
    with a required ``action``, an adjusted dose or a warning), ``unknown`` when inputs are
    missing (``needs``: what to record, in clinical words; ``needs_facts``: the fields)."""

    gate: str
    status: GateStatus
    detail: str
    unit: str = ""
    effect: GateEffect = ""
    action: str = ""
    needs: list[str] = Field(default_factory=list)
    needs_facts: list[str] = Field(default_factory=list)
    applies_to: list[str] = Field(default_factory=list)  # the plan items it checked


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


class InformedBy(_Model):
    """A past case from the experience memory (CorrectKB / ChainKB) the board recalled."""

    entry_id: int
    kind: str
    label: str
    summary: str
    lesson: str = ""
    similarity: float = 0.0


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
    # The past cases that informed the plan (recalled from round 2; none in one round).
    informed_by: list[InformedBy] = Field(default_factory=list)
