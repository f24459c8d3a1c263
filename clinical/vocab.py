"""The shared names of the tumor board, one definition each: cancer types, roles, knowledge-unit
kinds and which of them are safety rules, the words of a plan (modalities, intents, severities,
phases, response criteria, gate statuses and effects), the staging keys, and the kinds of steps
and events of a deliberation. Everything else imports them from here, with their labels.

Every value is a string stored somewhere (database rows, plan and event JSON, templates,
knowledge bundles), so a value never changes: a renamed one would orphan what is saved. This is
the bottom of the clinical core (``clinical/``), which imports nothing of the project.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class CancerType(StrEnum):
    """A case's cancer (mdtboard.case/1 ``cancer_type``)."""

    HCC = "hcc"
    LUNG_ADENOCARCINOMA = "lung_adenocarcinoma"
    BREAST = "breast"
    LYMPHOMA = "lymphoma"
    OTHER = "other"  # a cancer the knowledge base has no guideline for

    @property
    def label(self) -> str:
        """As a heading or a choice reads it: "Hepatocellular carcinoma"."""
        return CANCER_TYPE_LABELS[self]

    @property
    def in_sentence(self) -> str:
        """As a sentence reads it: "is not normally recorded for hepatocellular carcinoma"."""
        return (
            "other cancer" if self is CancerType.OTHER else self.label[0].lower() + self.label[1:]
        )


CANCER_TYPE_LABELS: Final[dict[str, str]] = {
    CancerType.HCC: "Hepatocellular carcinoma",
    CancerType.LUNG_ADENOCARCINOMA: "Lung adenocarcinoma",
    CancerType.BREAST: "Breast cancer",
    CancerType.LYMPHOMA: "Lymphoma",
    CancerType.OTHER: "Other",
}


class UnitCancerType(StrEnum):
    """The cancer a knowledge unit is about: a guideline's cancer, or any."""

    HCC = CancerType.HCC.value
    LUNG_ADENOCARCINOMA = CancerType.LUNG_ADENOCARCINOMA.value
    BREAST = CancerType.BREAST.value
    LYMPHOMA = CancerType.LYMPHOMA.value
    ANY = "any"  # e.g. a drug-drug interaction that holds whatever the cancer


class UnitKind(StrEnum):
    STAGING_RULE = "staging_rule"
    THERAPY_STEP = "therapy_step"
    CONTRAINDICATION = "contraindication"
    INTERACTION = "interaction"
    ORGAN_FUNCTION_GATE = "organ_function_gate"
    SURVEILLANCE_INTERVAL = "surveillance_interval"


# The units the safety gate enforces (and a curator may hot-fix), in the order Safety reads them.
SAFETY_KINDS: Final = (
    UnitKind.CONTRAINDICATION,
    UnitKind.INTERACTION,
    UnitKind.ORGAN_FUNCTION_GATE,
)

# The four members every board has; specialists join them by triage.
CORE_ROLES: Final = ("diagnostic", "treatment", "safety", "monitoring")
COORDINATOR: Final = "coordinator"
# The board's members by name ("radiation_oncology" -> "Radiation oncology").
ROLE_LABELS: Final[dict[str, str]] = {
    "diagnostic": "Diagnostic",
    "treatment": "Treatment",
    "safety": "Safety",
    "monitoring": "Monitoring",
    "coordinator": "Coordinator",
    "hepatology": "Hepatology",
    "interventional_radiology": "Interventional radiology",
    "surgery": "Surgery",
    "radiation_oncology": "Radiation oncology",
    "pathology": "Pathology",
    "cardio_oncology": "Cardio-oncology",
    "fertility": "Fertility",
    "pharmacy": "Pharmacy",
}


# --- the words of a plan (mdtboard.plan/1) and of the knowledge base's actions ------------------
PLAN_FORMAT: Final = "mdtboard.plan/1"


class Modality(StrEnum):
    """How a plan item treats (or follows) the patient."""

    SURGERY = "surgery"
    ABLATION = "ablation"
    LOCOREGIONAL = "locoregional"
    SYSTEMIC = "systemic"
    RADIOTHERAPY = "radiotherapy"
    SUPPORTIVE = "supportive"

    ANTIVIRAL = "antiviral"
    TRANSPLANT = "transplant"
    SURVEILLANCE = "surveillance"
    REFERRAL = "referral"

    @property
    def label(self) -> str:
        return MODALITY_LABELS[self]


MODALITY_LABELS: Final[dict[str, str]] = {
    Modality.SURGERY: "Surgery",
    Modality.ABLATION: "Ablation",
    Modality.LOCOREGIONAL: "Locoregional therapy",
    Modality.SYSTEMIC: "Systemic therapy",
    Modality.RADIOTHERAPY: "Radiotherapy",
    Modality.SUPPORTIVE: "Supportive care",
    Modality.ANTIVIRAL: "Antiviral therapy",
    Modality.TRANSPLANT: "Transplantation",
    Modality.SURVEILLANCE: "Surveillance",
    Modality.REFERRAL: "Referral",
}


class Intent(StrEnum):
    """A plan's intent."""

    CURATIVE = "curative"
    PALLIATIVE = "palliative"
    SURVEILLANCE = "surveillance"
    # The case is outside what the knowledge base models (recommendation.abstention says
    # why): the plan gives immediate safe steps and the board's questions, not a pathway.
    ABSTAIN = "abstain"


class UnitIntent(StrEnum):
    """The intent of a knowledge unit's therapy step: a plan's, or supportive care."""

    CURATIVE = Intent.CURATIVE.value
    PALLIATIVE = Intent.PALLIATIVE.value
    SURVEILLANCE = Intent.SURVEILLANCE.value
    SUPPORTIVE = "supportive"

    @property
    def plan_intent(self) -> Intent | None:
        """The plan's intent this step gives, or None for supportive care (it has none)."""
        return None if self is UnitIntent.SUPPORTIVE else Intent(self.value)


class ComponentRole(StrEnum):
    """A plan item's place: the one recommended pathway, or a ranked fallback."""

    PRIMARY = "primary"
    ALTERNATIVE = "alternative"


class Severity(StrEnum):
    CRITICAL = "critical"
    MAJOR = "major"
    MINOR = "minor"

    @property
    def risk(self) -> float:
        """The risk term of the conflict score (EvoMDT's R_risk) a rule of this severity adds."""
        return SEVERITY_RISK[self]


SEVERITY_RISK: Final[dict[Severity, float]] = {
    Severity.CRITICAL: 1.0,
    Severity.MAJOR: 0.7,
    Severity.MINOR: 0.3,
}


class Phase(StrEnum):
    """A monitoring phase, in time order."""

    ACUTE = "acute_0_3m"
    INTERMEDIATE = "intermediate_3_12m"
    LONG_TERM = "long_term_12m_plus"

    @property
    def label(self) -> str:
        return PHASE_LABELS[self]


PHASE_LABELS: Final[dict[str, str]] = {
    Phase.ACUTE: "Acute (0–3 months)",
    Phase.INTERMEDIATE: "Intermediate (3–12 months)",
    Phase.LONG_TERM: "Long term (over 12 months)",
}


class ResponseAnchor(StrEnum):
    """The response criteria a monitoring item is read against."""

    MRECIST = "mRECIST"
    RECIST = "RECIST 1.1"
    IRECIST = "iRECIST"
    LUGANO = "Lugano"
    OTHER = "other"


class GateStatus(StrEnum):
    """A safety rule checked against the plan: ``pass`` only when recorded data satisfy it."""

    PASS = "pass"  # noqa: S105 - a gate status, not a password
    FAIL = "fail"
    UNKNOWN = "unknown"


class GateEffect(StrEnum):
    """What a checked rule did to the plan."""

    NONE = ""  # a plan recorded before effects were
    CLEAR = "clear"  # checked: the rule does not apply to this patient
    REMOVED = "removed"  # the item left the pathway and every alternative
    WITHDRAWN = "withdrawn"  # the drug left the item; the regimen goes on without it or its partner
    HELD = "held"  # kept only as an alternative for when the contraindication no longer holds
    DEMOTED = "demoted"  # waits for a precondition; the next safe option goes first
    PRECONDITION = "precondition"  # given with the action the rule requires (premedication, a test)
    DOSE = "dose"  # given at the adjusted dose
    WARNING = "warning"  # given; the rule asks for attention
    NEEDS_DATA = "needs_data"  # cannot be checked: the inputs are missing
    CHECKED = "checked"  # a patient-level check (allergies, liver function) passed, with its values


class SafetyEffect(StrEnum):
    """What a safety rule of the knowledge base does when it fires (see rules.SafetyAction)."""

    REMOVE = "remove"
    CONDITION = "condition"
    ADJUST = "adjust"
    FLAG = "flag"


class ConflictKind(StrEnum):
    RISK = "risk"
    SEMANTIC = "semantic"
    IMPLEMENTATION = "implementation"


# Keys of the mdtboard.plan/1 "staging" object, in the order the format lists them.
STAGING_KEYS: Final = (
    "child_pugh_score",
    "child_pugh_class",
    "albi_grade",
    "bclc",
    "tnm_stage",
    "breast_subtype",
    "ann_arbor_stage",
    "ipi",
    "cns_ipi",
    "flipi",
)
STAGING_LABELS: Final[dict[str, str]] = {
    "child_pugh_score": "Child–Pugh score",
    "child_pugh_class": "Child–Pugh class",
    "albi_grade": "ALBI grade",
    "bclc": "BCLC stage",
    "tnm_stage": "AJCC 8 stage",
    "breast_subtype": "subtype",
    "ann_arbor_stage": "Ann Arbor stage",
    "ipi": "IPI",
    "cns_ipi": "CNS-IPI",
    "flipi": "FLIPI",
}
# The staging systems of each cancer (follicular lymphoma swaps IPI for FLIPI: see
# guideline.relevant_staging).
RELEVANT_STAGING: Final[dict[str, tuple[str, ...]]] = {
    CancerType.HCC: ("bclc", "child_pugh_class", "child_pugh_score", "albi_grade"),
    CancerType.LUNG_ADENOCARCINOMA: ("tnm_stage",),
    CancerType.BREAST: ("tnm_stage", "breast_subtype"),
    CancerType.LYMPHOMA: ("ann_arbor_stage", "ipi", "cns_ipi"),
}


# The residual context's "Long-term memory" when no similar past case was recalled.
NO_PAST_CASE = "No similar past case."


class StepKind(StrEnum):
    """A completed step of the protocol, journaled once (AgentMessage.kind). Not an event
    kind: a "review" step is one member's cross-review (its event is a "critique"), while
    the "review" event is the final completeness review of the plan step."""

    INTAKE = "intake"
    TRIAGE = "triage"
    RETRIEVAL = "retrieval"
    REPORT = "report"
    REVIEW = "review"
    SYNTHESIS = "synthesis"
    VOTE = "vote"
    CONSENSUS = "consensus"
    GATE = "gate"
    PLAN = "plan"
    EXPERIENCE = "experience"  # the past cases recalled from round 2 (MDTeamGPT)


class EventKind(StrEnum):
    """Something that happened, in order, as the board shows it (ConsultationEvent.kind).
    A new kind is one member here plus its handlers: the board's fold and the derived rows
    match on this enum exhaustively, so the type checker names any handler that is missing."""

    STATUS = "status"
    CANCELLED = "cancelled"
    INTAKE = "intake"
    TRIAGE = "triage"
    RETRIEVAL = "retrieval"
    MESSAGE = "message"
    GROUNDING = "grounding"
    EVIDENCE_NODE = "evidence.node"
    CRITIQUE = "critique"
    RESIDUAL = "residual"
    DRAFT = "draft"
    VOTE = "vote"
    CONSENSUS = "consensus"
    CONFLICT = "conflict"
    GATE = "gate"
    REVIEW = "review"
    PLAN = "plan"
