"""Restaging: when the computed response says the current line is working, the pathway keeps it.

A board that restages a patient on treatment asks first "does the disease respond?". If the
serial measurements show control (CR, PR, SD), an unconfirmed progression on a checkpoint
inhibitor (iUPD, iRECIST: re-image in 4-8 weeks before any change) or an interim metabolic
response (Lugano CMR/PMR), the therapy being given continues, and the knowledge base's options
for the next line become ranked alternatives for when progression is confirmed. The safety gate
runs after this step, so a continued drug is checked like any other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from clinical.calculators.response import (
    IUPD,
    PMR,
    Lesion,
    LesionInputError,
    case_response,
    continues_current_line,
    index_lesion,
    lesions_from_case,
    oligoprogression,
    ongoing_therapy,
)
from clinical.plan import PlanComponent
from clinical.vocab import ComponentRole, Intent, Modality, ResponseAnchor
from consult.engine.schemas import ProposedComponent

CONTINUE_PREFIX = "Continue "
# The words that open a knowledge-base step keeping the therapy being given (oligoprogression:
# "Continue the current treatment that still controls the other sites, and give stereotactic
# radiotherapy ..."); the plan names that therapy instead.
CURRENT_TREATMENT = "the current treatment"


def _when(category: str, criteria: str) -> str:
    if category == IUPD:
        return "if the repeat scan in 4-8 weeks confirms progression (iCPD)"
    if criteria == ResponseAnchor.LUGANO and category == PMR:
        return (
            "if the end-of-treatment PET-CT still shows Deauville 4-5 and a biopsy confirms "
            "residual lymphoma"
        )
    return "if a later restaging shows progression"


def continue_on_response(
    components: Sequence[ProposedComponent],
    case: Mapping[str, Any],
    *,
    adjuncts: Sequence[ProposedComponent] = (),
) -> list[ProposedComponent]:
    """The draft pathway with "continue the ongoing therapy" first when the computed response
    says so; the draft's options follow as alternatives. The draft's adjuncts stay with the
    pathway, and ``adjuncts`` (those whose context holds) that go with a systemic therapy join
    it (antiviral prophylaxis under anti-CD20 therapy). Unchanged when the case has no serial
    measurements, no ongoing therapy, or progression."""
    found = continues_current_line(case)
    if found is None:
        return list(components)
    assessment, therapy = found
    last = assessment.latest
    since = f" (this line since {therapy.start_date})" if therapy.start_date else ""
    follow = (
        "repeat imaging in 4-8 weeks to confirm or refute progression"
        if last.category == IUPD
        else "restage at the usual interval"
    )
    keep = ProposedComponent(
        modality=Modality.SYSTEMIC,
        description=(
            f"{CONTINUE_PREFIX}{therapy.regimen}{since}: {assessment.criteria} response on "
            f"{last.date.isoformat()} is {last.label}; {follow}"
        ),
        agents=list(therapy.drugs),
        role=ComponentRole.PRIMARY,
        preference=1,
    )
    when = _when(last.category, assessment.criteria)
    out: list[ProposedComponent] = [keep]
    alternatives: list[ProposedComponent] = []
    for component in components:
        if component.adjunct or component.modality in (Modality.SUPPORTIVE, Modality.ANTIVIRAL):
            out.append(component)
            continue
        moved = component.model_copy(deep=True)
        if moved.role == ComponentRole.PRIMARY:
            moved.role = ComponentRole.ALTERNATIVE
            moved.when = when
        alternatives.append(moved)
    # one item per adjunct drug set: two units may advise the same prophylaxis
    present = {frozenset(c.agents) or c.description for c in out}
    for adjunct in adjuncts:
        follows = not adjunct.with_modalities or Modality.SYSTEMIC in adjunct.with_modalities
        key = frozenset(adjunct.agents) or adjunct.description
        if follows and key not in present:
            joined = adjunct.model_copy(deep=True)
            joined.role = ComponentRole.PRIMARY
            out.append(joined)
            present.add(key)
    # The draft's pathway first, then its own fallbacks in their order.
    alternatives.sort(key=lambda c: (c.when != when, c.rank or 0))
    for rank, moved in enumerate(alternatives, start=1):
        moved.rank = rank
    return out + alternatives


def name_current_treatment(
    components: Sequence[PlanComponent], case: Mapping[str, Any]
) -> list[PlanComponent]:
    """A step that continues "the current treatment" (oligoprogression: keep the systemic
    therapy, treat the progressing sites locally) names the therapy being given - the most
    recent course with no end date or stop reason - so the clinician reads "Continue osimertinib
    80 mg daily (this line since ...)". Named after the gate, as the step was judged: the
    wording changes, not what the step gives. Unchanged when no ongoing therapy is recorded."""
    therapy = ongoing_therapy(case)
    if therapy is None:
        return list(components)
    since = f" (this line since {therapy.start_date})" if therapy.start_date else ""
    out: list[PlanComponent] = []
    for component in components:
        if component.description.startswith(CONTINUE_PREFIX + CURRENT_TREATMENT):
            named = re.sub(
                rf"{CURRENT_TREATMENT}(?:\s+that\b)?",
                f"{therapy.regimen}{since}, which",
                component.description,
                count=1,
            )
            component = component.model_copy(update={"description": named})
        out.append(component)
    return out


def continued_intent(case: Mapping[str, Any]) -> Intent | None:
    """The intent of a continued line: as recorded (a curative first-line lymphoma course),
    palliative otherwise; None when no line continues."""
    found = continues_current_line(case)
    if found is None:
        return None
    return Intent.CURATIVE if found[1].intent == "curative" else Intent.PALLIATIVE


LOCAL_MODALITIES = frozenset(
    {Modality.SURGERY, Modality.ABLATION, Modality.RADIOTHERAPY, Modality.LOCOREGIONAL}
)


def _growing(lesions: Sequence[Lesion], case: Mapping[str, Any]) -> list[Lesion]:
    """The lesions that progress at the latest scan (new, or 5 mm larger than at the scan
    before), when progression is confined to a few of them."""
    assessment = case_response(case)
    if assessment is None or not oligoprogression(assessment, lesions):
        return []
    last = assessment.latest
    earlier = sorted(
        {m.date for x in lesions for m in x.measurements if m.date and m.date < last.date}
    )
    before = earlier[-1] if earlier else None
    out = []
    for lesion in lesions:
        now = lesion.size_mm(last.date)
        then = lesion.size_mm(before) if before else None
        if lesion.lesion_id in last.new_lesions or (
            now is not None and then is not None and now - then >= 5
        ):
            out.append(lesion)
    return out


def name_treated_lesions(
    components: Sequence[PlanComponent], case: Mapping[str, Any]
) -> list[PlanComponent]:
    """Each local step (operation, ablation, radiotherapy, locoregional therapy) names the
    lesions it treats: the progressing ones under oligoprogression, else the index lesion.
    Only for a case file that lists its lesions; other plans are returned unchanged."""
    if case.get("lesions") is None:
        return list(components)
    try:
        lesions = lesions_from_case(case)
    except LesionInputError:
        return list(components)
    treated = _growing(lesions, case)
    words = "progressing lesion" if treated else "index lesion"
    if not treated:
        index = index_lesion(lesions)
        treated = [index] if index is not None else []
    if not treated:
        return list(components)
    named = ", ".join(x.lesion_id + (f" ({x.site})" if x.site else "") for x in treated)
    out: list[PlanComponent] = []
    for component in components:
        if component.modality in LOCAL_MODALITIES and not component.lesions:
            component = component.model_copy(
                update={
                    "lesions": [x.lesion_id for x in treated],
                    "description": f"{component.description} — {words}"
                    f"{'s' if len(treated) > 1 else ''} {named}",
                }
            )
        out.append(component)
    return out
