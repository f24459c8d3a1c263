"""The guideline engine: a deterministic provider of every role, built from the calculators
and the published knowledge units that apply to the case, with citations.

It is the offline default, the fallback when an LLM reply cannot be used, and the baseline an
LLM plan is compared against. It never guesses: a unit whose conditions cannot be decided for
lack of data is not acted on; it is reported as data needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from consult.engine.context import (
    SPECIALISTS,
    ReviewInput,
    RoleInput,
    SynthesisInput,
    Triage,
    VoteInput,
)
from consult.engine.matching import drug_key, targets, vetoes
from consult.engine.protocols import Evidence
from consult.engine.schemas import (
    Claim,
    Constraint,
    CrossReview,
    DraftPlan,
    Intent,
    MonitoringProposal,
    ProposedComponent,
    RejectedOption,
    ResidualContext,
    RoleReport,
    Synthesis,
    Vote,
)

ENGINE_NAME = "guideline-engine"
GRADE_CONFIDENCE = {1: 0.95, 2: 0.88, 3: 0.8, 4: 0.7, 5: 0.6}
STAGING_LABELS = {
    "child_pugh_score": "Child–Pugh score",
    "child_pugh_class": "Child–Pugh class",
    "albi_grade": "ALBI grade",
    "bclc": "BCLC stage",
    "tnm_stage": "AJCC 8 stage",
    "breast_subtype": "subtype",
    "ann_arbor_stage": "Ann Arbor stage",
    "ipi": "IPI",
    "cns_ipi": "CNS-IPI",
}
RELEVANT_STAGING = {
    "hcc": ("bclc", "child_pugh_class", "child_pugh_score", "albi_grade"),
    "lung_adenocarcinoma": ("tnm_stage",),
    "breast": ("tnm_stage", "breast_subtype"),
    "lymphoma": ("ann_arbor_stage", "ipi", "cns_ipi"),
}


def _confidence(evidence: Sequence[Evidence]) -> float:
    if not evidence:
        return 0.5
    return round(
        sum(GRADE_CONFIDENCE.get(e.grade_ordinal, 0.6) for e in evidence) / len(evidence), 2
    )


def _needs(evidence: Sequence[Evidence]) -> list[str]:
    return sorted(
        {f"{fact} (for {e.unit_id})" for e in evidence if e.applies is None for fact in e.missing}
    )


def _applying(evidence: Sequence[Evidence]) -> list[Evidence]:
    return [e for e in evidence if e.applies is True]


def _tests_fact(unit: Evidence, fact: str) -> bool:
    """Whether one of the unit's conditions (a knowledge-base Context: flat ``all`` and ``any``
    lists) tests exactly this fact; the words of ``exceptions`` are not conditions."""
    context = unit.content.get("context") or {}
    conditions = [*(context.get("all") or ()), *(context.get("any") or ())]
    return any(condition.get("fact") == fact for condition in conditions)


# --- triage --------------------------------------------------------------------------------


def triage(case: dict[str, object], facts: dict[str, object]) -> Triage:
    """Core roles always; specialists when the case gives a stated reason."""
    cancer = str(case.get("cancer_type") or "other")
    chosen: dict[str, str] = {}
    if cancer == "hcc":
        chosen["hepatology"] = "hepatocellular carcinoma: liver function decides every option"
        if facts.get("derived.bclc") in ("0", "A", "B"):
            chosen["interventional_radiology"] = "early or intermediate HCC: ablation or TACE"
    lvef = facts.get("organ_function.lvef_pct")
    if isinstance(lvef, int | float) and lvef < 55:
        chosen["cardio_oncology"] = f"LVEF {lvef}% before potentially cardiotoxic therapy"
    preferences = str(facts.get("patient.preferences") or "").casefold()
    if "fertil" in preferences or "pregnan" in preferences:
        chosen["fertility"] = "the patient's preferences mention fertility"
    medications = facts.get("patient.medications") or []
    if isinstance(medications, list) and len(medications) >= 1:
        chosen["pharmacy"] = f"{len(medications)} current medication(s) to check for interactions"
    brain = facts.get("staging.brain_metastases_count")
    if isinstance(brain, int) and brain > 0:
        chosen["radiation_oncology"] = f"{brain} brain metastases"
    simple = not chosen
    return Triage(
        panel=("diagnostic", "treatment", "safety", "monitoring", *chosen),
        specialists=chosen,
        simple=simple,
    )


# --- the roles --------------------------------------------------------------------------------


def diagnostic(inp: RoleInput) -> RoleReport:
    cancer = str(inp.case.get("cancer_type") or "other")
    keys = RELEVANT_STAGING.get(cancer, ())
    parts, claims, needs = [], [], []
    staging_units = _applying(inp.evidence)
    for key in keys:
        value = inp.staging.get(key)
        label = STAGING_LABELS[key]
        if value is None:
            needs.append(f"derived.{key}")
            parts.append(f"{label} not derivable")
            continue
        parts.append(f"{label} {value}")
        cited = [e.unit_id for e in staging_units if _tests_fact(e, f"derived.{key}")]
        claims.append(
            Claim(
                text=f"{label}: {value} (calculated from the dossier)",
                evidence=cited,
                confidence=0.95 if cited else 0.85,
            )
        )
    for unit in staging_units:
        statement = unit.action.get("statement") or unit.title
        claims.append(
            Claim(
                text=str(statement),
                evidence=[unit.unit_id],
                confidence=GRADE_CONFIDENCE.get(unit.grade_ordinal, 0.7),
            )
        )
    conclusion = "; ".join(parts) if parts else "No staging system applies to this cancer type."
    return RoleReport(
        conclusion=conclusion,
        claims=claims,
        needs_data=sorted(set(needs) | set(_needs(inp.evidence))),
        confidence=0.9 if not needs else 0.6,
    )


def _vetoed_by_critique(inp: RoleInput) -> set[str]:
    """Components a reviewer disputed in the previous round (safety first: drop them)."""
    disputed: set[str] = set()
    for reviewer, critique in inp.critiques:
        if reviewer == "safety" and not critique.agree:
            disputed |= set(critique.concerns)
    return disputed


def _intent(units: Sequence[Evidence]) -> Intent:
    intents = {str(u.action.get("intent")) for u in units}
    if "curative" in intents:
        return "curative"
    if "palliative" in intents:
        return "palliative"
    return "surveillance"


def treatment(inp: RoleInput) -> RoleReport:
    units = _applying(inp.evidence)
    disputed = _vetoed_by_critique(inp)
    components, rejected = [], []
    for unit in sorted(units, key=lambda u: (u.grade_ordinal, u.unit_id)):
        action = unit.action
        component = ProposedComponent(
            modality=action.get("modality", "systemic"),
            description=str(action.get("description") or unit.title),
            agents=[str(a) for a in action.get("agents") or []],
            evidence=[unit.unit_id],
        )
        if component.description in disputed:
            rejected.append(
                RejectedOption(
                    option=component.description, reason="disputed by Safety in the previous round"
                )
            )
            continue
        components.append(component)
    claims = [
        Claim(
            text=f"{unit.title} ({unit.grade})",
            evidence=[unit.unit_id],
            confidence=GRADE_CONFIDENCE.get(unit.grade_ordinal, 0.7),
        )
        for unit in units
    ]
    if components:
        conclusion = "Recommend: " + "; ".join(c.description for c in components)
    else:
        conclusion = "No treatment step applies with the data available."
    return RoleReport(
        conclusion=conclusion,
        claims=claims,
        intent=_intent(units),
        components=components,
        rejected=rejected,
        needs_data=_needs(inp.evidence),
        confidence=_confidence(units),
    )


def safety(inp: RoleInput) -> RoleReport:
    units = _applying(inp.evidence)
    constraints = [
        Constraint(
            severity=unit.action.get("severity", "major"),
            text=f"{unit.title}: {unit.action.get('advice', '')}".strip(": "),
            agents=[str(a) for a in unit.action.get("agents") or []]
            + [str(m) for m in unit.action.get("modalities") or []],
            evidence=[unit.unit_id],
        )
        for unit in units
    ]
    claims = [Claim(text=c.text, evidence=c.evidence, confidence=0.9) for c in constraints]
    unknown = [e for e in inp.evidence if e.applies is None]
    conclusion = f"{len(constraints)} safety constraint(s) apply" + (
        f"; {len(unknown)} check(s) need data" if unknown else ""
    )
    return RoleReport(
        conclusion=conclusion,
        claims=claims,
        constraints=constraints,
        needs_data=_needs(inp.evidence),
        confidence=0.9,
    )


def monitoring(inp: RoleInput) -> RoleReport:
    units = _applying(inp.evidence)
    proposals = [
        MonitoringProposal(
            phase=unit.action["phase"],
            what=str(unit.action["what"]),
            interval=str(unit.action["interval"]),
            anchor=unit.action.get("anchor", "other"),
            evidence=[unit.unit_id],
        )
        for unit in units
        if unit.action.get("type") == "surveillance"
    ]
    phases = sorted({p.phase for p in proposals})
    claims = [
        Claim(
            text=f"{p.phase}: {p.what}, {p.interval} ({p.anchor})",
            evidence=p.evidence,
            confidence=0.85,
        )
        for p in proposals
    ]
    return RoleReport(
        conclusion=f"Surveillance planned for {', '.join(phases) or 'no phase'}",
        claims=claims,
        monitoring=proposals,
        needs_data=_needs(inp.evidence),
        confidence=0.85 if len(phases) == 3 else 0.7,
    )


def specialist(inp: RoleInput) -> RoleReport:
    """An advisory view from the units of the specialist's domain; specialists add claims and
    the constraints of their domain, not components (Treatment owns those)."""
    units = _applying(inp.evidence)
    claims = [
        Claim(
            text=f"{unit.title}",
            evidence=[unit.unit_id],
            confidence=GRADE_CONFIDENCE.get(unit.grade_ordinal, 0.7),
        )
        for unit in units
    ]
    focus = SPECIALISTS.get(inp.role, inp.role)
    return RoleReport(
        conclusion=f"{inp.role.replace('_', ' ').title()} ({focus}): "
        f"{len(units)} relevant unit(s); {inp.reason}",
        claims=claims,
        needs_data=_needs(inp.evidence),
        confidence=_confidence(units),
    )


ROLE_FUNCTIONS = {
    "diagnostic": diagnostic,
    "treatment": treatment,
    "safety": safety,
    "monitoring": monitoring,
}


def role_report(inp: RoleInput) -> RoleReport:
    return ROLE_FUNCTIONS.get(inp.role, specialist)(inp)


# --- cross-validation, synthesis, votes --------------------------------------------------------


def review(inp: ReviewInput) -> CrossReview:
    concerns: list[str] = []
    notes: list[str] = []
    if inp.reviewer == "safety":
        for unit in _applying(inp.evidence):
            effect = unit.action.get("effect")
            if effect not in ("remove", "condition"):
                continue
            for component in inp.report.components:
                if not targets(unit.action, component):
                    continue
                # Only a rule that vetoes (a critical or major "remove") disputes the option;
                # any other is a note: the safety gate will attach it as a condition.
                if vetoes(unit.action):
                    concerns.append(component.description)
                notes.append(
                    f"{component.description}: {unit.title} "
                    f"({unit.action.get('severity')}, {effect}, {unit.unit_id})"
                )
    elif inp.reviewer == "diagnostic" and inp.report.components and inp.report.needs_data:
        notes.append(
            "Some options depend on data that is not available: "
            + ", ".join(inp.report.needs_data[:5])
        )
    elif inp.reviewer == "treatment" and inp.target == "monitoring" and not inp.report.monitoring:
        notes.append("No surveillance schedule was proposed.")
        concerns.append("monitoring")
    agree = not concerns
    critique = "; ".join(notes) if notes else "No objection."
    return CrossReview(agree=agree, critique=critique, concerns=sorted(set(concerns)))


def synthesis(
    inp: SynthesisInput,
    *,
    components: list[ProposedComponent],
    rejected: list[RejectedOption],
    intent: Intent,
    confidence: float,
    conflicts_text: str,
) -> Synthesis:
    reports = inp.reports
    agreeing = [f"{target}←{reviewer}" for reviewer, target, c in inp.critiques if c.agree]
    disputes = [
        f"{reviewer} on {target}: {c.critique}"
        for reviewer, target, c in inp.critiques
        if not c.agree
    ]
    monitoring = [
        p for p in reports.get("monitoring", RoleReport(conclusion="", confidence=0)).monitoring
    ]
    summary = _summary(inp, components, intent)
    residual = ResidualContext(
        consistency="Agreement: " + (", ".join(agreeing) or "none yet"),
        conflict="; ".join(disputes) or conflicts_text or "No conflict.",
        independence="; ".join(
            f"{role}: {report.conclusion}"
            for role, report in reports.items()
            if role not in ("treatment",)
        ),
        integration=summary,
        tools_usage="Calculators: "
        + ", ".join(f"{k}={v}" for k, v in inp.staging.items() if v is not None)
        + "; KB units cited: "
        + str(len({e for r in reports.values() for c in r.claims for e in c.evidence})),
        long_term_memory="; ".join(p.lesson for p in inp.experience) or "No similar past case.",
    )
    draft = DraftPlan(
        summary=summary,
        intent=intent,
        components=components,
        rejected=rejected,
        monitoring=monitoring,
    )
    return Synthesis(residual=residual, draft=draft, confidence=confidence)


def _summary(inp: SynthesisInput, components: Sequence[ProposedComponent], intent: str) -> str:
    staging = ", ".join(
        f"{STAGING_LABELS.get(k, k)} {v}" for k, v in inp.staging.items() if v is not None
    )
    if not components:
        return (
            f"{staging or 'Staging incomplete'}. No guideline treatment step applies with "
            "the data available; the MDT should obtain the missing data."
        )
    return (
        f"{staging or 'Staging incomplete'}. {intent.capitalize()} intent: "
        + "; ".join(c.description for c in components)
        + "."
    )


def vote(inp: VoteInput) -> Vote:
    draft_descriptions = {c.description for c in inp.draft.components}
    if inp.role == "safety":
        restricted = [
            c.description
            for c in inp.draft.components
            for unit in _applying(inp.evidence)
            if vetoes(unit.action) and targets(unit.action, c)
        ]
        if restricted:
            return Vote(agree=False, advice="Remove: " + "; ".join(sorted(set(restricted))))
        return Vote(agree=True, advice="No remaining safety objection.")
    if inp.role == "treatment":
        # An item merged into another with the same drugs is not dropped.
        same_drugs = {drug_key(c) for c in inp.draft.components if c.agents}
        dropped = [
            c.description
            for c in inp.report.components
            if c.description not in draft_descriptions and drug_key(c) not in same_drugs
        ]
        rejected = {r.option for r in inp.draft.rejected}
        unexplained = [d for d in dropped if d not in rejected]
        if unexplained:
            return Vote(agree=False, advice="Dropped without a reason: " + "; ".join(unexplained))
        return Vote(agree=True, advice="Draft reflects the applicable treatment steps.")
    if inp.role == "monitoring" and not inp.draft.monitoring and inp.report.monitoring:
        return Vote(agree=False, advice="Add the surveillance schedule to the plan.")
    return Vote(agree=True, advice="")
