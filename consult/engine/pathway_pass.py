"""The pathway checked as a whole after the safety gate (issue 23), and repaired where the repair
is certain.

- A baseline or prophylaxis step (CNS staging, cardio-oncology, HBV prophylaxis, fertility
  preservation, dental review) placed after the treatment it protects moves before it.
- Every pathway step says when it is given relative to the one before it (``timing``): before
  (baseline, prophylaxis), with (supportive or antiviral care, and an adjunct that does not say
  it follows), then (the rest).
- Two backbones of one class side by side (two endocrine backbones): the later one becomes an
  alternative to the first.
- An alternative whose ``when`` already holds for the patient, the intent contradicting the
  steps, wording for the other sex: reported, for the board to settle.

Findings are the properties of ``consult/engine/coherence.py`` (``PATHWAY_CHECKS``); each is kept
on the plan (``coherence``) with whether it was repaired.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal

from clinical.plan import CoherenceNote, Plan, PlanComponent
from clinical.vocab import ComponentRole, Intent
from consult.engine.coherence import (
    ACTIVE,
    INTENT_CONTRADICTS_STEPS,
    TWO_BACKBONES,
    alternative_already_true,
    baseline_after_treatment,
    curative_capable,
    intent_contradicts_steps,
    is_baseline,
    recommends_ruled_out,
    two_backbones,
    wrong_sex_wording,
)
from consult.engine.weight_doses import resolved_doses

# How consult/engine/options.py words a main option that never applied to the patient.
NOT_INDICATED: Final = "not indicated now"
_CONCURRENT_MODALITIES: Final = frozenset({"supportive", "antiviral"})
_FOLLOWS = re.compile(r"^\W*(?:\S+\s+){0,5}?(?:after|following|at\s+progression)\b", re.I)
# A step that says itself it comes first ("Before ribociclib: confirm QTc").
_OPENS_BEFORE = re.compile(r"^\W*before\b", re.I)
_DURING = re.compile(r"\bduring\b|\bthroughout\b|\bwith\s+each\b|\balongside\b|\bconcurrent", re.I)


def _dump(component: PlanComponent) -> dict[str, Any]:
    return component.model_dump(mode="json")


Timing = Literal["", "before", "with", "then"]


def timing_of(item: Mapping[str, Any]) -> Timing:
    """When a pathway step (a plan or proposed component as a dict) is given relative to the
    step before it: before (baseline, prophylaxis started before the first dose), with
    (supportive or antiviral care, an adjunct that does not say it follows, a step given
    during or alongside), then (the rest)."""
    text = str(item.get("description") or "")
    if is_baseline(item) or _OPENS_BEFORE.match(text):
        return "before"
    modality = str(item.get("modality") or "")
    if _FOLLOWS.search(text):
        return "then"
    if modality in _CONCURRENT_MODALITIES or _DURING.search(text):
        return "with"
    if item.get("adjunct") and modality not in ACTIVE:
        return "with"
    return "then"


# How the summary joins a step to the one before it: a concurrent step is not "then".
JOINERS: Final[dict[str, str]] = {"with": "; alongside: ", "before": "; then ", "then": "; then "}


def joined(descriptions: list[str], timings: list[str]) -> str:
    """The pathway's steps in one line, each joined to the one before by its timing."""
    text = ""
    for index, (description, timing) in enumerate(zip(descriptions, timings, strict=True)):
        text += description if index == 0 else JOINERS.get(timing, "; then ") + description
    return text


def _pathway_line(steps: list[PlanComponent]) -> str:
    """The pathway as ``guideline.plan_summary`` writes it (doses and preconditions in
    brackets), so that a repaired order or timing can replace it in the summary."""
    return joined(
        [
            c.description
            + (f" [dose: {'; '.join(c.dose_adjustments)}]" if c.dose_adjustments else "")
            + (f" [only once {c.waits_for}]" if c.waits_for else "")
            for c in steps
        ],
        [timing_of(_dump(c)) for c in steps],
    )


# Supportive care that a treatment step may already name in its own words.
SUPPORTIVE_ALREADY_INCLUDED: Final = "supportive_care_already_included"
_SUPPORTIVE_CARE: Final[dict[str, re.Pattern[str]]] = {
    "steroid pre-phase": re.compile(r"\bpre-?phase\b", re.I),
    "G-CSF support": re.compile(r"\bG-CSF\b|\b(?:peg)?filgrastim\b", re.I),
    "tumour-lysis prophylaxis": re.compile(r"\brasburicase\b|\btumou?r[- ]lysis\b", re.I),
}


def _care_named(step: PlanComponent) -> str:
    return next((n for n, p in _SUPPORTIVE_CARE.items() if p.search(step.description)), "")


def already_included(step: PlanComponent, pathway: list[PlanComponent]) -> str:
    """The supportive care (a steroid pre-phase, G-CSF) a supportive adjunct gives that a
    treatment step of the pathway already names; empty when it adds care of its own."""
    if not step.adjunct or step.modality in ACTIVE:
        return ""
    care = _care_named(step)
    if care and care_step(step, pathway):
        return care
    return ""


def care_step(step: PlanComponent, pathway: list[PlanComponent]) -> str:
    """The treatment step of the pathway that names the care ``step`` gives ('' when none)."""
    pattern = _SUPPORTIVE_CARE.get(_care_named(step))
    if pattern is None:
        return ""
    return next(
        (
            o.description
            for o in pathway
            if o is not step and o.modality in ACTIVE and pattern.search(o.description)
        ),
        "",
    )


def _timing(component: PlanComponent) -> Timing:
    return timing_of(_dump(component))


# --- whether an alternative's "when" already holds ------------------------------------------------
_ECOG = re.compile(
    r"\b(?:ecog|performance\s+status|ps)\s*(?:ps\s*)?(\d)(?:\s*(?:-|–|to)\s*(\d))?"
    r"(\s*(?:or\s+(?:more|higher|worse|above|greater)|\+))?",
    re.I,
)
_AGE = re.compile(
    r"\b(?:age|aged)\s*(\d{2})\s*(?:or\s+(?:over|older|more|above)|\+|and\s+over)", re.I
)
_FRAIL = re.compile(r"^\s*(?:frail|frailty)\b(?:\s*/\s*vulnerable)?", re.I)


def _clause(clause: str, facts: Mapping[str, Any]) -> bool | None:
    text = clause.strip(" .;")
    if not text:
        return None
    match = _ECOG.fullmatch(text) or _ECOG.match(text)
    if match and match.end() >= len(text) - 1:
        ecog = facts.get("patient.ecog")
        if not isinstance(ecog, int) or isinstance(ecog, bool):
            return None
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else (4 if match.group(3) else low)
        return low <= ecog <= high
    match = _AGE.match(text)
    if match and match.end() >= len(text) - 1:
        age = facts.get("patient.age_years")
        if not isinstance(age, int | float) or isinstance(age, bool):
            return None
        return age >= int(match.group(1))
    if _FRAIL.match(text) and len(text) < 60:
        frailty = facts.get("derived.frailty")
        if frailty is None:
            return None
        return bool(frailty == "frail")
    return None


def when_holds(when: str, facts: Mapping[str, Any]) -> bool | None:
    """True when an alternative's ``when`` is a list of conditions the engine can read (ECOG,
    age, frailty; "or" between them) and one holds for the patient; None when it cannot tell
    (a condition it does not read, or a conjunction)."""
    text = when.strip()
    if not text or re.search(r"\b(?:and|with|if|unless|when|once|after|declin\w*)\b", text, re.I):
        return None
    clauses = [c for c in re.split(r",|\bor\b(?!\s+(?:more|higher|over|older|worse|above))", text)]
    verdicts = [_clause(c, facts) for c in clauses if c.strip(" .;")]
    if any(v is True for v in verdicts):
        return True  # one of the conditions in "or" holds
    if not verdicts or any(v is None for v in verdicts):
        return None
    return False


def _intent_of_steps(document: Mapping[str, Any]) -> str | None:
    """The intent the pathway's steps bear out: curative when one can cure (an operation,
    ablation, transplant, radiotherapy, curative systemic therapy), else palliative when it
    treats, else surveillance."""
    pathway = [
        c
        for c in (document.get("recommendation") or {}).get("components") or []
        if c.get("role") == "primary"
    ]
    if not pathway:
        return None
    if any(curative_capable(c) for c in pathway):
        return "curative"
    if any(str(c.get("modality") or "") in ACTIVE for c in pathway):
        return "palliative"
    return "surveillance"


# --- the pass -------------------------------------------------------------------------------------


def pathway_pass(plan: Plan, facts: Mapping[str, Any]) -> Plan:
    """The plan with its pathway repaired where certain, each step's timing stated, and every
    finding of the pathway checks recorded (``coherence``)."""
    components = [c.model_copy(deep=True) for c in plan.recommendation.components]
    primary = sorted(
        (c for c in components if c.role is ComponentRole.PRIMARY), key=lambda c: c.order or 0
    )
    alternatives = sorted(
        (c for c in components if c.role is ComponentRole.ALTERNATIVE), key=lambda c: c.rank or 0
    )
    notes: list[CoherenceNote] = []
    # The summary's pathway line as it was written, to be rewritten in the repaired order.
    before_line = _pathway_line(primary)

    # Supportive care a treatment step already includes ("R-mini-CHOP after a steroid
    # pre-phase") is not a step of its own as well.
    for c in list(primary):
        care = already_included(c, primary)
        if care:
            primary.remove(c)
            notes.append(
                CoherenceNote(
                    property=SUPPORTIVE_ALREADY_INCLUDED,
                    sentence=f"The {care} is part of “{care_step(c, primary)[:80]}”; "
                    "it is not given a second time as a step of its own.",
                    repaired=True,
                )
            )

    # A baseline step after the treatment it protects moves before it.
    kept = {"recommendation": {"components": [_dump(c) for c in [*primary, *alternatives]]}}
    for finding in baseline_after_treatment(kept):
        notes.append(
            CoherenceNote(property=finding.property, sentence=finding.sentence, repaired=True)
        )
    first_active = next(
        (i for i, c in enumerate(primary) if c.modality in ACTIVE and not is_baseline(_dump(c))),
        None,
    )
    if first_active is not None:
        late = [c for c in primary[first_active + 1 :] if is_baseline(_dump(c))]
        if late:
            rest = [c for c in primary if c not in late]
            primary = rest[:first_active] + late + rest[first_active:]

    # Two backbones of one class: the later one becomes an alternative to the first.
    dumped = {"recommendation": {"components": [_dump(c) for c in primary]}}
    moved: list[PlanComponent] = []
    finding_of: dict[str, str] = {}
    for finding in two_backbones(dumped):
        finding_of.setdefault(finding.items[1], finding.items[0])
        later = next((c for c in primary if c.description == finding.items[1]), None)
        if later is None or later in moved:
            continue
        moved.append(later)
        notes.append(
            CoherenceNote(property=TWO_BACKBONES, sentence=finding.sentence, repaired=True)
        )
    if moved:
        primary = [c for c in primary if c not in moved]
        for c in moved:
            c.role = ComponentRole.ALTERNATIVE
            c.order = None
            first = finding_of.get(c.description, "")
            c.when = f"instead of: {first[:120]}" if first else "instead of the pathway's backbone"
        alternatives = moved + alternatives

    for index, c in enumerate(primary, start=1):
        c.order = index
        c.timing = "" if index == 1 and not is_baseline(_dump(c)) else _timing(c)
        c.rank = None
    for index, c in enumerate(alternatives, start=1):
        c.rank = index
        c.order = None
        c.timing = ""
    after_line = _pathway_line(primary)
    # Doses by weight band, per kilogram or per square metre, worked out for this patient.
    for c in [*primary, *alternatives]:
        adjustments, doses = resolved_doses(c.description, facts)
        c.dose_adjustments = [*c.dose_adjustments, *adjustments]
        c.doses = doses
    repaired = plan.model_copy(deep=True)
    repaired.recommendation.components = [*primary, *alternatives]
    if before_line and after_line != before_line:
        repaired.recommendation.summary = repaired.recommendation.summary.replace(
            before_line, after_line, 1
        )

    # An intent its steps do not bear out takes the intent the steps give.
    document = repaired.model_dump(mode="json")
    contradictions = intent_contradicts_steps(document)
    if contradictions:
        intent = _intent_of_steps(document)
        stated = repaired.recommendation.intent
        if intent is not None and intent != stated:
            repaired.recommendation.intent = Intent(intent)
            written = stated.value if isinstance(stated, Intent) else str(stated or "")
            old = f"Recommended pathway ({written})"
            repaired.recommendation.summary = repaired.recommendation.summary.replace(
                old, f"Recommended pathway ({intent})"
            )
            for finding in contradictions:
                notes.append(
                    CoherenceNote(
                        property=INTENT_CONTRADICTS_STEPS,
                        sentence=f"{finding.sentence} (Intent set to {intent}.)",
                        repaired=True,
                    )
                )
    # An alternative whose "when" already holds is not a fallback for that reason: its "when"
    # says so, and that it is chosen if the pathway cannot be given.
    document = repaired.model_dump(mode="json")
    for finding in alternative_already_true(document, lambda when: when_holds(when, facts)):
        for c in repaired.recommendation.components:
            if c.role is ComponentRole.ALTERNATIVE and c.description == finding.items[0]:
                c.when = f"{c.when} (the case for this patient): if the pathway cannot be given"
        notes.append(
            CoherenceNote(property=finding.property, sentence=finding.sentence, repaired=True)
        )
    # A main option listed as "not indicated now" that the plan's own items give: the items
    # stand (they passed the gate), the listing goes. A rejection for another reason (a safety
    # rule, a decision) is only reported.
    document = repaired.model_dump(mode="json")
    for finding in recommends_ruled_out(document):
        option = finding.items[1]
        listed = [
            r
            for r in repaired.rejected_options
            if r.option.startswith(option[:40]) and r.reason.startswith(NOT_INDICATED)
        ]
        if listed:
            repaired.rejected_options = [r for r in repaired.rejected_options if r not in listed]
        notes.append(
            CoherenceNote(
                property=finding.property, sentence=finding.sentence, repaired=bool(listed)
            )
        )
    document = repaired.model_dump(mode="json")
    sex = facts.get("patient.sex")
    for finding in [
        *intent_contradicts_steps(document),
        *wrong_sex_wording(document, sex if isinstance(sex, str) else None),
    ]:
        notes.append(CoherenceNote(property=finding.property, sentence=finding.sentence))
    repaired.coherence = notes
    return repaired
