"""Weighted consensus (EvoMDT: D_final = Σ wᵢ·Dᵢ·Cᵢ with case-dependent weights) and
conflict scoring (S = α·D_semantic + β·R_risk + γ·I_implementation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clinical.plan import ConflictRecord, RejectedOption
from clinical.rules import SafetyAction
from clinical.vocab import CORE_ROLES, Intent, Severity
from consult.engine.matching import addressed, drug_key, substitution, targets
from consult.engine.protocols import Evidence
from consult.engine.schemas import CrossReview, ProposedComponent, RoleReport

ALPHA, BETA, GAMMA = 0.3, 0.5, 0.2
KEEP_THRESHOLD = 0.5


def case_weights(
    facts: Mapping[str, Any],
    staging: Mapping[str, Any],
    safety_evidence: Sequence[Evidence],
    panel: Sequence[str],
) -> dict[str, float]:
    """Domain-relevance weights, adjusted to the case: a complex diagnosis lifts Diagnostic,
    refractory disease lifts Treatment, a high-risk patient lifts Safety, and a curative or
    surveillance-heavy situation lifts Monitoring."""
    weights = {role: 1.0 for role in panel}
    for role in panel:
        if role not in CORE_ROLES:
            weights[role] = 0.5  # specialists advise; the core roles decide
    missing_staging = sum(1 for value in staging.values() if value is None)
    if missing_staging:
        weights["diagnostic"] = weights.get("diagnostic", 1.0) + 0.25 * min(missing_staging, 2)
    line = facts.get("derived.line")
    if isinstance(line, int) and line >= 2:
        weights["treatment"] = weights.get("treatment", 1.0) + 0.5
    risky = [
        e
        for e in safety_evidence
        if e.applies is True
        and e.safety is not None
        and e.safety.severity in (Severity.CRITICAL, Severity.MAJOR)
    ]
    ecog = facts.get("patient.ecog")
    if (
        risky
        or (isinstance(ecog, int) and ecog >= 2)
        or staging.get("child_pugh_class") in ("B", "C")
    ):
        weights["safety"] = weights.get("safety", 1.0) + 1.0
    if facts.get("diagnosis.setting") in ("recurrent", "residual_after_neoadjuvant"):
        weights["monitoring"] = weights.get("monitoring", 1.0) + 0.5
    return weights


MIN_WEIGHT = 0.1  # an offset never silences a member


def with_offsets(weights: Mapping[str, float], offsets: Mapping[str, float]) -> dict[str, float]:
    """The case's weights with the admin-approved offsets of a weight version added (governed
    evolution: small, capped steps); members not on the panel are not added."""
    return {
        role: round(max(MIN_WEIGHT, weight + float(offsets.get(role, 0.0))), 4)
        if role in offsets
        else weight
        for role, weight in weights.items()
    }


@dataclass
class Consensus:
    components: list[ProposedComponent]
    rejected: list[RejectedOption]
    intent: Intent
    confidence: float
    support: dict[str, float]
    conflicts: list[ConflictRecord]


def _restrictions(
    safety_evidence: Sequence[Evidence], component: ProposedComponent
) -> list[tuple[Evidence, SafetyAction, list[str]]]:
    found = []
    for unit in safety_evidence:
        rule = unit.safety
        if unit.applies is not True or rule is None or not rule.restricts():
            continue
        hit = targets(rule, component)
        if hit:
            found.append((unit, rule, hit))
    return found


def weighted_consensus(
    *,
    reports: Mapping[str, RoleReport],
    critiques: Sequence[tuple[str, str, CrossReview]],
    weights: Mapping[str, float],
    safety_evidence: Sequence[Evidence],
    ungrounded: Mapping[str, set[str]] | None = None,
) -> Consensus:
    """Keep a proposed component when its weighted support exceeds the threshold. Safety
    first: a critical or major restriction from the knowledge base vetoes it outright."""
    proposals: dict[str, tuple[ProposedComponent, list[str]]] = {}
    same_drugs: dict[tuple[str, frozenset[str], frozenset[str]], str] = {}
    alias: dict[str, str] = {}  # a merged wording -> the wording of the item it joined
    for role, report in reports.items():
        for component in report.components:
            # Two units recommending the same drugs by the same route are one plan item:
            # keep the first (best graded) wording, pool the evidence, and count the member
            # as one of its supporters.
            key = drug_key(component)
            if key[1] and key in same_drugs and same_drugs[key] != component.description:
                kept_description = same_drugs[key]
                first, supporters = proposals[kept_description]
                first.evidence = list(dict.fromkeys([*first.evidence, *component.evidence]))
                # The item follows the pathways either unit lets it follow: antiviral therapy
                # for HBV-related HCC goes with any pathway, though the prophylaxis unit with
                # the same drugs names systemic therapy only.
                first.with_modalities = (
                    list(dict.fromkeys([*first.with_modalities, *component.with_modalities]))
                    if first.with_modalities and component.with_modalities
                    else []
                )
                if role not in supporters:
                    supporters.append(role)
                alias.setdefault(component.description, kept_description)
                continue
            if key[1]:
                same_drugs.setdefault(key, component.description)
            entry = proposals.setdefault(
                component.description, (component.model_copy(deep=True), [])
            )
            entry[1].append(role)

    def item(description: str) -> str:
        """The plan item a wording stands for (its own, or the one it was merged into)."""
        return description if description in proposals else alias.get(description, description)

    # Objections and ungrounded proposals name a member's own wording: resolve it to the item.
    disputed: dict[str, list[str]] = {}
    for reviewer, _target, critique in critiques:
        for concern in critique.concerns:
            disputed.setdefault(item(concern), []).append(reviewer)
    unsupported = {
        role: {item(description) for description in descriptions}
        for role, descriptions in (ungrounded or {}).items()
    }
    kept, support = [], {}
    # What a member withdrew, with its reason (Treatment answering an objection), stays on
    # the record as a rejected option.
    rejected = [r for report in reports.values() for r in report.rejected]
    conflicts: list[ConflictRecord] = []
    for description, (component, proposers) in proposals.items():
        numerator = denominator = 0.0
        for role, report in reports.items():
            weight = weights.get(role, 1.0)
            confidence = report.confidence
            if role in proposers:
                grounded = description not in unsupported.get(role, set())
                decision = 1.0 if grounded else 0.5
            elif role in disputed.get(description, []):
                decision = -1.0
            else:
                continue  # a role that neither proposes nor disputes abstains
            numerator += weight * decision * confidence
            denominator += weight * confidence
        score = numerator / denominator if denominator else 0.0
        support[description] = round(score, 3)
        restrictions = _restrictions(safety_evidence, component)
        # A veto of an agent with an interchangeable partner (cisplatin -> carboplatin) is the
        # safety gate's to apply: it withdraws the agent and keeps the item.
        vetoing = [
            (u, rule, hit)
            for u, rule, hit in restrictions
            if rule.vetoes()
            and substitution(component, hit, rule) is None
            and not addressed(rule, component)
        ]
        if vetoing:
            unit, rule, hit = vetoing[0]
            reason = f"{unit.title}: {rule.advice} ({unit.unit_id})"
            rejected.append(RejectedOption(option=description, reason=reason))
            conflicts.append(
                conflict_record(
                    between=["treatment", "safety"],
                    semantic=1.0,
                    risk=rule.risk,
                    implementation=0.0,
                    resolution=f"Removed {', '.join(hit)}: safety first ({unit.unit_id}).",
                )
            )
            continue
        if score < KEEP_THRESHOLD:
            rejected.append(
                RejectedOption(
                    option=description,
                    reason=f"weighted support {score:.2f} below {KEEP_THRESHOLD}",
                )
            )
            continue
        if not any(description not in unsupported.get(role, set()) for role in proposers):
            # Only members citing no knowledge unit that backs it: their half-weight support
            # can reach the threshold but never passes it, and a tie does not keep an item.
            rejected.append(
                RejectedOption(
                    option=description,
                    reason=f"weighted support {score:.2f} from members citing no knowledge "
                    "unit that supports it",
                )
            )
            continue
        kept.append(component)
    intents = [r.intent for r in reports.values() if r.intent]
    intent = (
        Intent.CURATIVE
        if Intent.CURATIVE in intents
        else (Intent.PALLIATIVE if Intent.PALLIATIVE in intents else Intent.SURVEILLANCE)
    )
    total_weight = sum(weights.get(role, 1.0) for role in reports)
    confidence = sum(weights.get(role, 1.0) * r.confidence for role, r in reports.items())
    return Consensus(
        kept,
        rejected,
        intent,
        round(confidence / total_weight, 2) if total_weight else 0.0,
        support,
        conflicts,
    )


def conflict_record(
    *, between: list[str], semantic: float, risk: float, implementation: float, resolution: str
) -> ConflictRecord:
    score = ALPHA * semantic + BETA * risk + GAMMA * implementation
    parts = {
        "semantic": ALPHA * semantic,
        "risk": BETA * risk,
        "implementation": GAMMA * implementation,
    }
    kind = max(parts, key=lambda k: parts[k])
    return ConflictRecord(
        between=between,
        kind=kind,  # type: ignore[arg-type]
        score=round(score, 3),
        resolution=resolution,
    )


def critique_conflicts(
    critiques: Sequence[tuple[str, str, CrossReview]], safety_evidence: Sequence[Evidence]
) -> list[ConflictRecord]:
    """A scored conflict record for every disagreement raised in cross-validation."""
    records = []
    for reviewer, target, critique in critiques:
        if critique.agree:
            continue
        # The risk of the most severe applicable rule the critique cites (whoever raises it:
        # a specialist citing a critical rule weighs as much as Safety), else moderate for
        # Safety and none for the others.
        cited = [
            u.safety.risk if u.safety is not None else Severity.MINOR.risk
            for u in safety_evidence
            if u.applies is True and u.unit_id in critique.critique
        ]
        risk = max(cited, default=0.5 if reviewer == "safety" else 0.0)
        implementation = 1.0 if "not available" in critique.critique else 0.0
        records.append(
            conflict_record(
                between=[reviewer, target],
                semantic=1.0 if critique.concerns else 0.5,
                risk=risk,
                implementation=implementation,
                resolution=f"Raised in cross-validation: {critique.critique[:300]}",
            )
        )
    return records
