"""What a role sees when it answers: the case, its derived facts, its evidence, the last two
residual contexts and the critiques addressed to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clinical.vocab import SAFETY_KINDS
from consult.engine.protocols import Evidence, PastCase
from consult.engine.schemas import CrossReview, DraftPlan, ResidualContext, RoleReport

SPECIALISTS = {
    "hepatology": "liver function, portal hypertension and viral hepatitis",
    "interventional_radiology": "ablation and transarterial therapies",
    "surgery": "resectability and operative risk",
    "radiation_oncology": "radiotherapy, including brain metastases",
    "pathology": "histology and biomarker completeness",
    "cardio_oncology": "cardiac function before cardiotoxic therapy",
    "fertility": "fertility preservation before gonadotoxic therapy",
    "pharmacy": "drug–drug interactions with current medications",
}
# The therapy modalities of each specialist's discipline: what it may propose (the specialist
# prompt), so the therapy steps whose recommendation it reads in full. Every other step reaches
# it by its id and one line, which is enough to judge it from its discipline.
SPECIALIST_MODALITIES: dict[str, frozenset[str]] = {
    # A referral is where a seat's own review is asked for ("radiation oncology review of local
    # treatment"): every seat reads it whole.
    "hepatology": frozenset({"antiviral", "supportive", "transplant", "referral"}),
    "interventional_radiology": frozenset({"ablation", "locoregional", "referral"}),
    "surgery": frozenset({"surgery", "transplant", "surveillance", "referral"}),
    "radiation_oncology": frozenset({"radiotherapy", "surveillance", "referral"}),
    "pathology": frozenset({"referral"}),
    "cardio_oncology": frozenset({"supportive", "referral"}),
    "fertility": frozenset({"supportive", "referral"}),
    "pharmacy": frozenset({"referral"}),
}
# Which kinds of knowledge unit each role retrieves.
ROLE_KINDS: dict[str, tuple[str, ...]] = {
    "diagnostic": ("staging_rule",),
    "treatment": ("therapy_step",),
    "safety": SAFETY_KINDS,
    "monitoring": ("surveillance_interval",),
    "hepatology": ("organ_function_gate", "contraindication", "therapy_step"),
    "interventional_radiology": ("therapy_step", "contraindication"),
    "surgery": ("therapy_step", "organ_function_gate"),
    "radiation_oncology": ("therapy_step",),
    "pathology": ("staging_rule",),
    "cardio_oncology": ("organ_function_gate", "contraindication"),
    "fertility": ("therapy_step",),
    "pharmacy": ("interaction",),
}
# Who reviews whom in cross-validation (Tree-of-Reasoning): Safety checks Treatment, Diagnostic
# checks the staging assumptions behind Treatment, Treatment checks Safety's and Monitoring's
# feasibility.
REVIEW_PAIRS: tuple[tuple[str, str], ...] = (
    ("safety", "treatment"),
    ("diagnostic", "treatment"),
    ("treatment", "safety"),
    ("treatment", "monitoring"),
)


@dataclass(frozen=True)
class Triage:
    panel: tuple[str, ...]
    specialists: dict[str, str]  # specialist -> reason
    simple: bool


@dataclass
class RoleInput:
    role: str
    round: int
    case: Mapping[str, Any]
    facts: Mapping[str, Any]
    staging: Mapping[str, Any]
    evidence: Sequence[Evidence]
    residuals: Sequence[ResidualContext] = ()
    experience: Sequence[PastCase] = ()
    previous: RoleReport | None = None
    critiques: Sequence[tuple[str, CrossReview]] = ()
    reason: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)  # fact -> clinical label
    # The therapy steps any member may propose (applying or waiting for data, from the whole
    # panel's evidence): what a rule about a drug must concern to be worth reading. Empty: all.
    therapies: Sequence[Evidence] = ()


@dataclass
class ReviewInput:
    reviewer: str
    target: str
    round: int
    case: Mapping[str, Any]
    facts: Mapping[str, Any]
    report: RoleReport
    evidence: Sequence[Evidence]  # the reviewer's own evidence


@dataclass
class SynthesisInput:
    round: int
    case: Mapping[str, Any]
    facts: Mapping[str, Any]
    staging: Mapping[str, Any]
    reports: Mapping[str, RoleReport]
    critiques: Sequence[tuple[str, str, CrossReview]]
    weights: Mapping[str, float]
    evidence: Mapping[str, Sequence[Evidence]]
    residuals: Sequence[ResidualContext] = ()
    experience: Sequence[PastCase] = ()


@dataclass
class VoteInput:
    role: str
    round: int
    case: Mapping[str, Any]
    report: RoleReport
    draft: DraftPlan
    evidence: Sequence[Evidence]
    critiques_given: Sequence[CrossReview] = field(default_factory=list)
    facts: Mapping[str, Any] = field(default_factory=dict)
    # The reports this member cross-reviewed in the round (what it has already weighed).
    reviewed: Sequence[RoleReport] = field(default_factory=list)
