"""The shared names of the tumor board, one definition each: cancer types, roles, knowledge-unit
kinds and which of them are safety rules, the staging keys, and the kinds of steps and events
of a deliberation. Everything else imports them from here.

Every value is a string stored somewhere (database rows, plan and event JSON, templates,
knowledge bundles), so a value never changes: a renamed one would orphan what is saved. The
engine imports nothing outside itself, so the vocabulary lives here; ``knowledge`` may import
this one module of ``consult`` (the import-linter contract in pyproject.toml says so).
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


CANCER_TYPE_LABELS: Final[dict[CancerType, str]] = {
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
