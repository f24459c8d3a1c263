"""The guideline engine: a deterministic provider of every role, built from the calculators
and the published knowledge units that apply to the case, with citations.

It is the offline default, the fallback when an LLM reply cannot be used, and the baseline an
LLM plan is compared against. It never guesses: a unit whose conditions cannot be decided for
lack of data is not acted on; it is reported as data needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clinical.calculators.medications import MEDICATION_FACTS, POLYPHARMACY_COUNT
from clinical.plan import RejectedOption
from clinical.rules import TherapyAction
from clinical.vocab import (
    CORE_ROLES,
    NO_PAST_CASE,
    PHASE_LABELS,
    RELEVANT_STAGING,
    STAGING_LABELS,
    ComponentRole,
    Intent,
    SafetyEffect,
)
from consult.engine.context import (
    SPECIALISTS,
    ReviewInput,
    RoleInput,
    SynthesisInput,
    Triage,
    VoteInput,
)
from consult.engine.matching import addressed, drug_key, substitution, targets
from consult.engine.pathway import arrange, is_adjunct, modalities_done
from consult.engine.pathway_pass import joined, timing_of
from consult.engine.protocols import Evidence, PastCase
from consult.engine.schemas import (
    Claim,
    Constraint,
    CrossReview,
    DraftPlan,
    MonitoringProposal,
    ObjectionAnswer,
    ProposedComponent,
    ResidualContext,
    RoleReport,
    Synthesis,
    Vote,
)

ENGINE_NAME = "guideline-engine"
GRADE_CONFIDENCE = {1: 0.95, 2: 0.88, 3: 0.8, 4: 0.7, 5: 0.6}


def relevant_staging(case: Mapping[str, Any]) -> tuple[str, ...]:
    """The staging systems of the case's cancer: follicular lymphoma is scored with FLIPI,
    aggressive lymphomas with IPI and CNS-IPI."""
    cancer = str(case.get("cancer_type") or "other")
    if cancer == "lymphoma":
        diagnosis = case.get("diagnosis") or {}
        words = f"{diagnosis.get('histology') or ''} {diagnosis.get('subtype') or ''}".casefold()
        if "follicular" in words and "large" not in words:
            return ("ann_arbor_stage", "flipi")
        # IPI and CNS-IPI were built for aggressive B-cell lymphoma: Hodgkin, mantle cell and
        # marginal zone lymphoma are shown with their Ann Arbor stage only.
        hodgkin = "hodgkin" in words.replace("non-hodgkin", "").replace("non hodgkin", "")
        if hodgkin or any(w in words for w in ("mantle", "marginal zone", "malt")):
            return ("ann_arbor_stage",)
    return RELEVANT_STAGING.get(cancer, ())


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


def triage(
    case: dict[str, object],
    facts: dict[str, object],
    interacting: Sequence[str] | None = None,
) -> Triage:
    """Core roles always; specialists when the case gives a stated reason. ``interacting``:
    the knowledge base's interaction rules that the patient's current medications trigger
    (None: not looked up, and any current medication invites Pharmacy)."""
    cancer = str(case.get("cancer_type") or "other")
    chosen: dict[str, str] = {}
    if cancer == "hcc":
        chosen["hepatology"] = "hepatocellular carcinoma: liver function decides every option"
        if facts.get("derived.bclc") in ("0", "A", "B"):
            chosen["interventional_radiology"] = "early or intermediate HCC: ablation or TACE"
    lvef = facts.get("organ_function.lvef_pct")
    if isinstance(lvef, int | float) and lvef < 55:
        chosen["cardio_oncology"] = f"LVEF {lvef}% before potentially cardiotoxic therapy"
    wants = facts.get("derived.wants") or []
    if isinstance(wants, list) and "fertility_preservation" in wants:
        chosen["fertility"] = "the patient wishes to preserve fertility"
    if facts.get("patient.pregnant") is True:
        chosen["fertility"] = "the patient is pregnant: obstetric and fetal safety"
    medications = facts.get("patient.medications") or []
    count = len(medications) if isinstance(medications, list) else 0
    if interacting:
        chosen["pharmacy"] = "current medications interact: " + "; ".join(interacting)
    elif count and interacting is None:
        chosen["pharmacy"] = f"{count} current medication(s) to check for interactions"
    elif count >= POLYPHARMACY_COUNT:
        chosen["pharmacy"] = f"polypharmacy: {count} current medications"
    brain = facts.get("staging.brain_metastases_count")
    if isinstance(brain, int) and brain > 0:
        chosen["radiation_oncology"] = f"{brain} brain metastases"
    simple = not chosen
    return Triage(
        panel=(*CORE_ROLES, *chosen),
        specialists=chosen,
        simple=simple,
    )


# --- the roles --------------------------------------------------------------------------------


def diagnostic(inp: RoleInput) -> RoleReport:
    keys = relevant_staging(inp.case)
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


def _display(value: object) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


# Facts whose values name drugs, regimens or treatments: the rationale names the fact, not the
# values, so that a plan item never reads as recommending what the patient took, must avoid or
# declined (the dossier and the summary say which).
_DRUG_LISTS = frozenset(
    {
        "derived.prior_regimens",
        "derived.progressed_on",
        "derived.intolerant_of",
        "derived.declines",
        "derived.wants",
        "patient.preferences",
        "diagnosis.prior_therapies",
        *MEDICATION_FACTS,  # the medication list and each interacting class read from it
    }
)


def rationale(unit: Evidence, labels: Mapping[str, str]) -> list[str]:
    """The patient facts that made the unit apply, in clinical words: "BCLC stage: B ✓"."""
    lines = []
    for fact, value in unit.held:
        label = labels.get(fact) or STAGING_LABELS.get(fact.removeprefix("derived."))
        label = label or fact.split(".")[-1].replace("_", " ")
        if fact in _DRUG_LISTS:
            lines.append(f"{label} \u2713")
        else:
            lines.append(f"{label}: {_display(value)} \u2713")
    return lines


def component_from_unit(
    unit: Evidence, step: TherapyAction, labels: Mapping[str, str]
) -> ProposedComponent:
    """The plan item a therapy step (``step``, the unit's action) proposes."""
    return ProposedComponent(
        modality=step.modality,
        description=step.description or unit.title,
        agents=list(step.agents),
        evidence=[unit.unit_id],
        adjunct=step.role == "adjunct",
        preference=step.preference,
        with_modalities=list(step.with_modalities),
        with_agents=list(step.with_agents),
        care_class=step.care_class,
        declined_if=list(step.declined_if),
        interchangeable=[list(group) for group in step.interchangeable],
        dose_adjustments=list(step.dose_adjustments),
        when=step.when,
        rationale=rationale(unit, labels),
    )


def adjuncts_applying(
    evidence: Sequence[Evidence], labels: Mapping[str, str]
) -> list[ProposedComponent]:
    """The adjuncts (antiviral prophylaxis, supportive care ...) whose context holds, for a
    pathway built outside the options' competition (restaging: a line that continues)."""
    out: list[ProposedComponent] = []
    for unit in sorted(_applying(evidence), key=lambda u: (u.grade_ordinal, u.unit_id)):
        step = unit.therapy
        if step is not None and step.role == "adjunct":
            out.append(component_from_unit(unit, step, labels))
    return out


def _objections(
    inp: RoleInput, descriptions: set[str]
) -> tuple[dict[str, str], dict[str, str], list[ObjectionAnswer]]:
    """What the members asked Treatment to change in the previous round (their cross-reviews
    and the advice of their votes), and Treatment's answer to each."""
    removed: dict[str, str] = {}
    demoted: dict[str, str] = {}
    answers: list[ObjectionAnswer] = []
    for reviewer, critique in inp.critiques:
        if critique.agree:
            continue
        responses = []
        for description in critique.concerns:
            if description not in descriptions:
                continue
            reason = critique.reasons.get(description) or critique.critique
            removed.setdefault(description, f"{reviewer.replace('_', ' ')}: {reason}")
            responses.append(f"withdrew {description}")
        for description in critique.demote:
            if description not in descriptions or description in removed:
                continue
            reason = critique.reasons.get(description) or critique.critique
            demoted.setdefault(description, reason)
            responses.append(f"put {description} behind the next safe option until: {reason}")
        answers.append(
            ObjectionAnswer(
                objection=critique.critique[:500],
                by=reviewer,
                response=(
                    "; ".join(responses)
                    if responses
                    else "kept the pathway: the objection names no item of the proposal"
                ),
            )
        )
    return removed, demoted, answers


def _intent(option: Evidence | None, units: Sequence[Evidence]) -> Intent:
    chosen = option.therapy if option is not None else None
    if chosen is not None and chosen.intent.plan_intent in (Intent.CURATIVE, Intent.PALLIATIVE):
        return Intent(chosen.intent)
    intents = {u.therapy.intent.plan_intent for u in units if u.therapy is not None}
    if Intent.CURATIVE in intents:
        return Intent.CURATIVE
    if Intent.PALLIATIVE in intents:
        return Intent.PALLIATIVE
    return Intent.SURVEILLANCE


def treatment(inp: RoleInput) -> RoleReport:
    """One pathway: the applicable options ranked by guideline preference and grade, the
    patient's declined treatments and the objections of the previous round taken into
    account; adjuncts join the chosen pathway."""
    units = sorted(_applying(inp.evidence), key=lambda u: (u.grade_ordinal, u.unit_id))
    proposals: list[ProposedComponent] = []
    source: dict[str, Evidence] = {}
    for unit in units:
        step = unit.therapy
        if step is None:
            continue  # not a therapy step: nothing to propose
        component = component_from_unit(unit, step, inp.labels)
        if component.description in source:
            continue
        source[component.description] = unit
        proposals.append(component)
    removed, demoted, answers = _objections(inp, set(source))
    declines = inp.facts.get("derived.declines") or []
    arranged = arrange(
        proposals,
        removed=removed,
        demoted=demoted,
        declines=declines if isinstance(declines, list) else [],
        done=modalities_done(inp.facts),
    )
    option = arranged.option
    claims = [
        Claim(
            text=f"{unit.title} ({unit.grade})",
            evidence=[unit.unit_id],
            confidence=GRADE_CONFIDENCE.get(unit.grade_ordinal, 0.7),
        )
        for unit in units
    ]
    if option is not None:
        conclusion = "Recommend: " + "; then ".join(c.description for c in arranged.primary)
        if arranged.alternatives:
            conclusion += ". Alternatives: " + "; ".join(
                f"{c.description} ({c.when})" for c in arranged.alternatives
            )
    elif arranged.components:
        conclusion = "No treatment option can be recommended as it stands: " + "; ".join(
            f"{c.description} ({c.when})" for c in arranged.alternatives
        )
    else:
        conclusion = "No treatment step applies with the data available."
    chosen = [source[option.description]] if option is not None else []
    return RoleReport(
        conclusion=conclusion,
        claims=claims,
        intent=_intent(chosen[0] if chosen else None, units),
        components=arranged.components,
        rejected=arranged.rejected,
        needs_data=_needs(inp.evidence),
        answers=answers,
        confidence=_confidence(chosen or units),
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
    phases = [PHASE_LABELS[p] for p in PHASE_LABELS if p in {x.phase for x in proposals}]
    claims = [
        Claim(
            text=f"{PHASE_LABELS.get(p.phase, p.phase)}: {p.what}, {p.interval} ({p.anchor})",
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


def restrictions(
    units: Sequence[Evidence], components: Sequence[ProposedComponent]
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """What the applicable rules of a reviewer's domain say about the proposal: items to
    remove (critical/major "remove", in the pathway or among the alternatives), primary items
    to demote (a failed precondition), and notes for the rest."""
    remove: dict[str, str] = {}
    demote: dict[str, str] = {}
    notes: list[str] = []
    for unit in _applying(units):
        rule = unit.safety
        if rule is None or rule.effect is SafetyEffect.FLAG:
            continue
        for component in components:
            hit = targets(rule, component)
            if not hit:
                continue
            reason = f"{unit.title}: {rule.advice} ({unit.unit_id})"
            if (
                rule.vetoes()
                and substitution(component, hit, rule) is None
                and not addressed(rule, component)
            ):
                remove.setdefault(component.description, reason)
            elif rule.demotes and component.role == "primary":
                demote.setdefault(component.description, rule.advice or unit.title)
            notes.append(
                f"{component.description}: {unit.title} "
                f"({rule.severity}, {rule.effect}, {unit.unit_id})"
            )
    return remove, demote, notes


def review(inp: ReviewInput) -> CrossReview:
    """Safety and every specialist check Treatment's proposal against the rules of their
    domain, and object (with the reason) to what must go or wait; Diagnostic names the
    missing data the options depend on; Treatment checks Monitoring covers the plan."""
    if inp.target == "treatment" and inp.reviewer not in ("diagnostic", "monitoring"):
        remove, demote, domain_notes = restrictions(inp.evidence, inp.report.components)
        if not remove and not demote:
            return CrossReview(agree=True, critique="; ".join(domain_notes) or "No objection.")
        objections = [f"Remove {d}: {r}" for d, r in remove.items()] + [
            f"Not first: {d} (only once {r})" for d, r in demote.items()
        ]
        return CrossReview(
            agree=False,
            critique="; ".join(objections),
            concerns=sorted(remove),
            demote=sorted(demote),
            reasons={**demote, **remove},
        )
    concerns: list[str] = []
    notes: list[str] = []
    if inp.reviewer == "diagnostic" and inp.report.components and inp.report.needs_data:
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
    # The Coordinator keeps one pathway, whoever proposed what; Treatment's intent decides.
    # An item a reviewer says must wait for a precondition (untreated varices before
    # bevacizumab) is not the draft's first step: the next option goes first, as a veto
    # removes an item at once, so the members vote on a draft that is already safe (Treatment
    # may still contest it in its vote). Every option is checked as the first step would be:
    # a reviewer demotes only the item in first place, the next may wait for the same
    # precondition, and when every option waits the preferred one leads with it stated.
    demoted: dict[str, str] = {}
    for _reviewer, _target, critique in inp.critiques:
        for description in critique.demote:
            if description not in critique.concerns:
                demoted.setdefault(
                    description, critique.reasons.get(description) or critique.critique
                )
    units = list({e.unit_id: e for es in inp.evidence.values() for e in es}.values())
    for component in components:
        first = component.model_copy(update={"role": ComponentRole.PRIMARY})
        for description, reason in restrictions(units, [first])[1].items():
            demoted.setdefault(description, reason)
    declines = inp.facts.get("derived.declines") or []
    arranged = arrange(
        components,
        demoted=demoted,
        declines=declines if isinstance(declines, list) else [],
        done=modalities_done(inp.facts),
    )
    components = arranged.components
    rejected = [*rejected, *arranged.rejected]
    treatment_intent = reports["treatment"].intent if "treatment" in reports else None
    intent = treatment_intent or intent
    summary = plan_summary(
        question=str(inp.case.get("question") or ""),
        case=inp.case,
        staging=inp.staging,
        components=components,
        rejected=rejected,
        intent=intent,
        done=modalities_done(inp.facts),
    )
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
        long_term_memory=long_term_memory(inp.experience),
    )
    draft = DraftPlan(
        summary=summary,
        intent=intent,
        components=components,
        rejected=rejected,
        monitoring=monitoring,
    )
    return Synthesis(residual=residual, draft=draft, confidence=confidence)


def long_term_memory(experience: Sequence[PastCase]) -> str:
    """The residual context's "Long-term memory": each past case recalled, how similar, and
    its lesson (MDTeamGPT)."""
    return (
        " | ".join(
            f"{p.label or p.kind} (similarity {p.similarity:.2f}): {p.lesson}" for p in experience
        )
        or NO_PAST_CASE
    )


def staging_text(case: Mapping[str, Any], staging: Mapping[str, object]) -> str:
    """The staging of the case's cancer only, in clinical words."""
    keys = relevant_staging(case)
    return ", ".join(
        f"{STAGING_LABELS.get(k, k)} {staging[k]}" for k in keys if staging.get(k) is not None
    )


def plan_summary(
    *,
    question: str,
    case: Mapping[str, Any],
    staging: Mapping[str, object],
    components: Sequence[ProposedComponent],
    rejected: Sequence[RejectedOption],
    intent: str,
    waits: Mapping[str, str] | None = None,
    confirm: Sequence[str] = (),
    done: Mapping[str, str] | None = None,
) -> str:
    """The answer to the case's question first: the recommended pathway in order (an option
    that waits for a precondition, nothing safer being on offer, says so: ``waits``), then the
    alternatives with when, then what was ruled out and why. ``done``: modalities already
    given (``pathway.modalities_done``): the steps that follow them are the pathway (adjuvant
    therapy after the operation on record)."""
    waits = waits or {}
    stage = staging_text(case, staging) or "Staging incomplete"
    primary = [c for c in components if c.role == "primary"]
    alternatives = [c for c in components if c.role == "alternative"]
    # With the main step done (the operation on record), the steps that follow it are the
    # pathway: the plan carries no "with" modalities, so any primary step answers.
    options = [c for c in primary if not is_adjunct(c)] or (list(primary) if done else [])
    asked = f"{question.strip()} " if question.strip() else ""
    if not options:
        if alternatives:
            answer = (
                "No option can be recommended outright: "
                + "; ".join(f"{c.description} ({c.when})" for c in alternatives)
                + "."
            )
        else:
            answer = (
                "No guideline treatment step applies with the data available; the MDT should "
                "obtain the missing data."
            )
        text = f"{asked}{stage}. {answer}"
        if primary:
            text += " With it: " + "; ".join(c.description for c in primary) + "."
    else:
        text = (
            f"{asked}{stage}. Recommended pathway ({intent}): "
            + joined(
                [
                    c.description
                    + (f" [dose: {'; '.join(c.dose_adjustments)}]" if c.dose_adjustments else "")
                    + (f" [only once {waits[c.description]}]" if c.description in waits else "")
                    for c in primary
                ],
                # A step given alongside the one before it (supportive or antiviral care) is
                # joined by "alongside", not "then".
                [timing_of(c.model_dump(mode="json")) for c in primary],
            )
            + "."
        )
        if confirm:
            text += " Conditional: " + "; ".join(confirm) + "."
        if alternatives:
            text += " Alternatives: " + "; ".join(
                f"{c.rank}. {c.description} ({c.when})" for c in alternatives
            )
            text += "."
    if rejected:
        text += " Not advised: " + "; ".join(f"{r.option} ({r.reason})" for r in rejected) + "."
    return text


def vote(inp: VoteInput) -> Vote:
    """Agree with the draft, or ask for a revision with advice the next round answers."""
    if inp.role not in ("diagnostic", "treatment", "monitoring"):
        remove, demote, _notes = restrictions(inp.evidence, inp.draft.components)
        if remove or demote:
            advice = [f"Remove {d}: {r}" for d, r in remove.items()] + [
                f"Not first: {d} (only once {r})" for d, r in demote.items()
            ]
            return Vote(agree=False, advice="; ".join(advice), concerns=sorted(remove))
        return Vote(agree=True, advice="No remaining objection from this domain.")
    if inp.role == "treatment":
        draft_descriptions = {c.description for c in inp.draft.components}
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
        mine = [c.description for c in inp.report.components if c.role == "primary"]
        theirs = [c.description for c in inp.draft.components if c.role == "primary"]
        if mine and theirs and mine[0] != theirs[0] and mine[0] in draft_descriptions:
            return Vote(
                agree=False,
                advice=f"The pathway should start with {mine[0]}, not {theirs[0]}.",
            )
        return Vote(agree=True, advice="Draft reflects the recommended pathway.")
    if inp.role == "monitoring" and not inp.draft.monitoring and inp.report.monitoring:
        return Vote(agree=False, advice="Add the surveillance schedule to the plan.")
    return Vote(agree=True, advice="")
