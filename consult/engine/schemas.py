"""Typed messages of the deliberation: what a board member answers, reviews and votes
(pydantic models, which also give the JSON Schemas sent to the LLM). The plan they lead to is
the clinical core's (``clinical.plan``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from clinical.plan import RejectedOption
from clinical.vocab import ComponentRole, Intent, Modality, Phase, ResponseAnchor, Severity


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
    """One treatment a member proposes. The plan recommends one pathway: the ``primary``
    components (the chosen option, then what goes with it); ``alternative`` ones are ranked
    fallbacks, each with ``when`` it would be chosen instead."""

    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list, description="Drug names, if any.")
    evidence: list[str] = Field(default_factory=list)
    role: ComponentRole = Field(
        default=ComponentRole.PRIMARY,
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
    # Set from a knowledge-base unit, never by a member: not in the schema the LLM is sent.
    # For adjuncts that go only with a pathway giving one of these drugs (antiemetics with
    # emetogenic chemotherapy), and the supportive care an adjunct is one level of: one per
    # pathway, the best preference (clinical/rules.py TherapyAction).
    with_agents: SkipJsonSchema[list[str]] = Field(default_factory=list)
    care_class: SkipJsonSchema[str] = ""
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


class Constraint(_Model):
    severity: Severity
    text: str
    agents: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)


class MonitoringProposal(_Model):
    phase: Phase
    what: str
    interval: str
    anchor: ResponseAnchor
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


class CrossReviews(_Model):
    """One reviewer's reviews of several members' reports, by the reviewed member's role (one
    call for a reviewer with more than one report to review)."""

    reviews: dict[str, CrossReview]


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


# --- what is sent to the LLM: each role's part of the schema --------------------------------
# A member is asked only for the fields its role fills (Safety: constraints; Monitoring: the
# monitoring items; Treatment: the pathway); its reply is validated against that part and read
# as the whole RoleReport (every other field at its default). The JSON Schema title stays the
# message's name ("RoleReport"), so logs and test servers tell the turns apart as before.


class _WireReport(_Model):
    model_config = ConfigDict(extra="ignore", title="RoleReport")

    conclusion: str
    claims: list[Claim] = Field(default_factory=list)
    needs_data: list[str] = Field(default_factory=list)
    confidence: float = Field(ge=0, le=1)

    def as_report(self) -> RoleReport:
        return RoleReport.model_validate(self.model_dump())


class DiagnosticReport(_WireReport):
    pass


class TreatmentComponent(_Model):
    """The fields of a proposed component that a member writes; the rest (preference,
    interchangeable agents, ...) come from the knowledge units the engine matches it to."""

    modality: Modality
    description: str
    agents: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    role: ComponentRole = ComponentRole.PRIMARY
    rank: int | None = Field(default=None, ge=1)
    when: str = ""
    dose_adjustments: list[str] = Field(default_factory=list)
    adjunct: bool = False


class TreatmentReport(_WireReport):
    intent: Intent | None = None
    components: list[TreatmentComponent] = Field(default_factory=list)
    rejected: list[RejectedOption] = Field(default_factory=list)
    answers: list[ObjectionAnswer] = Field(default_factory=list)


class SafetyReport(_WireReport):
    constraints: list[Constraint] = Field(default_factory=list)


class MonitoringReport(_WireReport):
    monitoring: list[MonitoringProposal] = Field(default_factory=list)


class SpecialistReport(_WireReport):
    constraints: list[Constraint] = Field(default_factory=list)
    components: list[TreatmentComponent] = Field(default_factory=list)


REPORT_SCHEMAS: dict[str, type[_WireReport]] = {
    "diagnostic": DiagnosticReport,
    "treatment": TreatmentReport,
    "safety": SafetyReport,
    "monitoring": MonitoringReport,
}


def report_schema(role: str) -> type[_WireReport]:
    return REPORT_SCHEMAS.get(role, SpecialistReport)


class CoordinatorNote(_Model):
    """What the Coordinator writes: the round's residual context and its confidence (the
    draft's items are the weighted consensus, computed; its summary is written from them)."""

    model_config = ConfigDict(extra="ignore", title="Synthesis")

    residual: ResidualContext
    confidence: float = Field(ge=0, le=1)
