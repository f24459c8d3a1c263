"""Two facts of the patient's history that drug-safety rules need as a three-valued answer:
a severe immune-related adverse event on a prior checkpoint inhibitor, and a significant
bleed within the last six months.

Each is true when the record says so, false only when the record positively excludes it
("none" recorded, a bleed older than six months, no checkpoint inhibitor ever given), and
None (unknown) when the dossier leaves the question open, so that a rule reading it is
"unknown", never "pass", until a clinician records the answer (FORMAT.md §2).

The structured fields are filled from the notes before the calculators run
(clinical/text/notes.py), so a grade 3 colitis written in the notes counts here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any, Final

from clinical import lexicon
from clinical.calculators.history import prior_regimens_with_history
from clinical.results import CalcResult, lookup
from clinical.text.notes import reference_date

IRAE_SOURCE: Final = (
    "ESMO Clinical Practice Guideline: Management of toxicities from immunotherapy "
    "(Haanen J et al., Ann Oncol 2022;33:1217-1238), rechallenge after grade 3-4 toxicity; "
    "ASCO 2021 irAE guideline (Schneider BJ et al., J Clin Oncol 2021;39:4073-4126)."
)
BLEEDING_SOURCE: Final = (
    "Bevacizumab SmPC 4.4 (haemorrhage, recent haemoptysis) and ramucirumab SmPC 4.4; "
    "IMbrave150 excluded bleeding within 6 months (Finn RS et al., N Engl J Med 2020)."
)

# Organs whose grade 3 event ESMO 2022 treats as permanently ruling out the class (myocarditis,
# pneumonitis, neurological toxicity, nephritis); endocrine events on hormone replacement do
# not rule out a rechallenge whatever their grade.
_LIFE_THREATENING_ORGANS: Final = frozenset({"heart", "lung", "nervous", "neurological", "kidney"})
_ENDOCRINE_ORGANS: Final = frozenset({"thyroid", "pituitary", "adrenal", "endocrine", "pancreas"})
_BLEEDING_WINDOW: Final = timedelta(days=183)


def _prior_ici(case: Mapping[str, Any]) -> bool | None:
    """Whether a prior regimen gave a checkpoint inhibitor (None when the history is not
    recorded)."""
    regimens = prior_regimens_with_history(case).value
    if not isinstance(regimens, list):
        return None
    return any("ici" in lexicon.classes_of(d) for d in lexicon.history_agents(regimens))


def _toxicity_grades(case: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(organ, grade) of the toxicities recorded with prior therapies (FORMAT.md §4)."""
    therapies = lookup(case, "diagnosis.prior_therapies")
    found: list[tuple[str, int]] = []
    if not isinstance(therapies, list):
        return found
    for therapy in therapies:
        if not isinstance(therapy, Mapping):
            continue
        toxicity = therapy.get("toxicity")
        regimen = str(therapy.get("regimen") or "")
        if not isinstance(toxicity, Mapping):
            continue
        drugs = lexicon.history_agents([regimen])
        if not any("ici" in lexicon.classes_of(d) for d in drugs):
            continue
        grade = toxicity.get("grade")
        if isinstance(grade, int) and not isinstance(grade, bool):
            found.append((str(toxicity.get("organ") or "").casefold(), grade))
    return found


def _severity(organ: str, grade: int) -> str:
    if organ in _ENDOCRINE_ORGANS or grade <= 2:
        return "mild"
    if grade >= 4 or organ in _LIFE_THREATENING_ORGANS:
        return "life_threatening"
    return "severe"


_ORDER: Final = ("life_threatening", "severe", "mild", "none")


def prior_irae_severity(case: Mapping[str, Any]) -> CalcResult:
    """The worst immune-related adverse event of a prior checkpoint inhibitor:
    "life_threatening" (grade 4, or grade 3 myocarditis, pneumonitis, nephritis or neurological
    toxicity), "severe" (other grade 3), "mild" (grade 1-2, or endocrine on replacement),
    "none" (recorded as none, or no checkpoint inhibitor ever given); None when a checkpoint
    inhibitor was given and no event, nor its absence, is recorded."""
    organ = lookup(case, "patient.prior_irae_organ")
    grade = lookup(case, "patient.prior_irae_grade")
    used: dict[str, object] = {
        "patient.prior_irae_organ": organ,
        "patient.prior_irae_grade": grade,
    }
    seen: list[str] = []
    if isinstance(organ, str) and organ.casefold() == "none":
        seen.append("none")
    elif isinstance(grade, int) and not isinstance(grade, bool):
        seen.append(_severity(str(organ or "").casefold(), grade))
    elif isinstance(organ, str) and organ:
        # An event recorded without its grade: it cannot be called mild.
        return CalcResult(
            "prior_irae_severity", None, used, ["patient.prior_irae_grade"], IRAE_SOURCE,
            f"prior immune-related adverse event ({organ}) recorded without its grade",
        )  # fmt: skip
    seen.extend(_severity(o, g) for o, g in _toxicity_grades(case))
    if seen:
        worst = min(seen, key=_ORDER.index)
        return CalcResult("prior_irae_severity", worst, used, [], IRAE_SOURCE, worst)
    exposed = _prior_ici(case)
    if exposed is False:
        return CalcResult(
            "prior_irae_severity", "none", used, [], IRAE_SOURCE,
            "no checkpoint inhibitor in the treatment history",
        )  # fmt: skip
    return CalcResult(
        "prior_irae_severity", None, used, ["patient.prior_irae_organ", "patient.prior_irae_grade"],
        IRAE_SOURCE,
        "a checkpoint inhibitor was given; its immune-related adverse events are not recorded"
        if exposed
        else "treatment history not recorded",
    )  # fmt: skip


def bleeding_within_6_months(case: Mapping[str, Any]) -> CalcResult:
    """Whether a significant bleed (haemoptysis, gastrointestinal, variceal, intracranial,
    tumour) happened within six months of the case's reference date: true, false ("none"
    recorded, or the last bleed is older), None when the dossier does not say."""
    organ = lookup(case, "organ_function")
    organ = dict(organ) if isinstance(organ, Mapping) else {}
    site = lookup(case, "organ_function.recent_bleeding_site")
    when = lookup(case, "organ_function.recent_bleeding_date")
    used: dict[str, object] = {
        "organ_function.recent_bleeding_site": site,
        "organ_function.recent_bleeding_date": when,
    }
    name = "bleeding_within_6_months"
    if not isinstance(site, str) or not site:
        return CalcResult(
            name, None, used, ["organ_function.recent_bleeding_site"], BLEEDING_SOURCE
        )
    if site == "none":
        return CalcResult(
            name, False, used, [], BLEEDING_SOURCE, "no significant bleeding recorded"
        )
    if not isinstance(when, str):
        # A bleed recorded without its date counts as recent: the safe reading.
        return CalcResult(
            name, True, used, [], BLEEDING_SOURCE, f"{site} bleeding, date not recorded"
        )
    try:
        day = date.fromisoformat(when)
    except ValueError:
        return CalcResult(
            name, True, used, [], BLEEDING_SOURCE, f"{site} bleeding, date unreadable"
        )
    # Counted back from the newest other date of the file (the bleed's own date would make
    # every bleed "today"), else from today.
    others = {**case, "organ_function": {**organ, "recent_bleeding_date": None}}
    recent = reference_date(others) - day <= _BLEEDING_WINDOW
    detail = f"{site} bleeding on {when}" + ("" if recent else ", more than 6 months ago")
    return CalcResult(name, recent, used, [], BLEEDING_SOURCE, detail)
