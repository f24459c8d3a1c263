"""Decisive facts: what would change this plan (DESIGN.md step 10, issue 23).

The engine re-runs its choice of the pathway with each borderline or missing fact varied -
performance status ± 1, each missing critical field set to its possible values, each value near a
threshold (LVEF, creatinine clearance, age, tumour size) moved across it - and reports those that
change the option that leads the pathway: "At ECOG 0 this would be BCLC A and liver resection
would be recommended; confirm whether the ECOG 1 is cancer-related (BCLC 2022)".

The choice re-run is the guideline engine's (the applicable therapy steps arranged by guideline
preference, then the deterministic safety gate), over the units retrieved once for the case and
judged again against each variant's facts: no database or LLM call per variation, so a plan with
its variations stays fast. A variant's facts and staging come from the same calculators as the
plan's (``case_facts`` / ``derive_all``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from clinical.applicability import case_facts, context_applies, missing_facts
from clinical.calculators import derive_all, staging_summary
from clinical.explain import failed_conditions, held_conditions
from clinical.plan import DecisiveFact
from clinical.rules import Context
from clinical.vocab import STAGING_LABELS
from consult.engine import guideline
from consult.engine.context import RoleInput
from consult.engine.matching import given
from consult.engine.pathway import is_adjunct
from consult.engine.protocols import Evidence
from consult.engine.safeguards import gate_with_fallback
from consult.engine.schemas import ProposedComponent

MAX_VARIATIONS: Final = 24


@dataclass(frozen=True)
class Variation:
    """One fact varied: the dotted paths set (a size is both the lesion's and the largest
    nodule's), the value recorded and the value tried, and what the board should confirm."""

    fact: str
    label: str
    paths: tuple[str, ...]
    recorded: Any
    varied_to: Any
    advice: str


def _get(case: Mapping[str, Any], path: str) -> Any:
    node: Any = case
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _set(case: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = case
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[last] = value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# --- which variations ----------------------------------------------------------------------------

# Missing critical fields by cancer: path -> (label, the values tried).
MISSING_CRITICAL: Final[Mapping[str, Mapping[str, tuple[str, tuple[Any, ...]]]]] = {
    "hcc": {
        "staging.macrovascular_invasion": ("macrovascular invasion", (True, False)),
        "staging.extrahepatic_spread": ("extrahepatic spread", (True, False)),
        "organ_function.clinically_significant_portal_hypertension": (
            "clinically significant portal hypertension",
            (True, False),
        ),
        "labs.bilirubin_mg_dl": ("bilirubin", (1.0, 2.5)),
        "labs.albumin_g_dl": ("albumin", (4.0, 3.0)),
        "labs.inr": ("INR", (1.1, 1.9)),
        "organ_function.ascites": ("ascites", ("none", "mild")),
        "organ_function.varices": ("varices", ("none", "large_untreated")),
    },
    "lung_adenocarcinoma": {
        "biomarkers.egfr": ("EGFR", ("exon19del", "negative")),
        "biomarkers.alk": ("ALK", ("positive", "negative")),
        "biomarkers.pdl1_tps_pct": ("PD-L1 TPS", (0, 60)),
        "staging.brain_metastases_count": ("brain metastases", (0, 2)),
    },
    "breast": {
        "biomarkers.er_pct": ("ER", (0, 90)),
        "biomarkers.her2": ("HER2", ("0", "3+")),
        "patient.menopausal_status": ("menopausal status", ("premenopausal", "postmenopausal")),
        "biomarkers.germline_brca": ("germline BRCA", ("BRCA1", "negative")),
    },
    "lymphoma": {
        "biomarkers.cd20": ("CD20", ("positive", "negative")),
        "staging.bulky_disease": ("bulky disease", (True, False)),
        "staging.b_symptoms": ("B symptoms", (True, False)),
    },
}
# Thresholds a value may sit near, by path: (label, thresholds, how near counts, step across).
NEAR_THRESHOLDS: Final[Mapping[str, tuple[str, tuple[float, ...], float]]] = {
    "patient.age_years": ("age", (60, 65, 70, 75, 80), 2),
    "organ_function.lvef_pct": ("LVEF", (40, 50, 55), 4),
}
SIZE_THRESHOLDS: Final[Mapping[str, tuple[float, ...]]] = {
    "hcc": (20, 30, 50),
    "lung_adenocarcinoma": (10, 20, 30, 40, 50, 70),
    "breast": (20, 50),
}
SIZE_NEAR_MM: Final = 3
CRCL_THRESHOLDS: Final = (30, 45, 60)
CRCL_NEAR: Final = 5


def _ecog_advice(cancer: str, recorded: Any) -> str:
    if cancer == "hcc" and isinstance(recorded, int) and recorded in (1, 2):
        return f"confirm whether the ECOG {recorded} is cancer-related (BCLC 2022)"
    if recorded is None:
        return "record the ECOG performance status"
    return f"confirm the ECOG {recorded} (it decides the pathway)"


def variations(case: Mapping[str, Any], facts: Mapping[str, Any]) -> list[Variation]:
    """The borderline and missing facts of this case, each with the values to try."""
    cancer = str(case.get("cancer_type") or "other")
    found: list[Variation] = []
    ecog = _get(case, "patient.ecog")
    if isinstance(ecog, int) and not isinstance(ecog, bool):
        for value in (ecog - 1, ecog + 1):
            if 0 <= value <= 4:
                found.append(
                    Variation(
                        "ecog",
                        "ECOG",
                        ("patient.ecog",),
                        ecog,
                        value,
                        _ecog_advice(cancer, ecog),
                    )
                )
    elif ecog is None:
        for value in (0, 1, 2, 3):
            found.append(
                Variation(
                    "ecog", "ECOG", ("patient.ecog",), None, value, _ecog_advice(cancer, None)
                )
            )
    for path, (label, values) in MISSING_CRITICAL.get(cancer, {}).items():
        # Read from the notes is recorded too (the plan flags it for checking): varying it
        # would tell the board to "record" what the letter already says.
        if _get(case, path) is not None or facts.get(path) is not None:
            continue
        for value in values:
            found.append(
                Variation(path.split(".")[-1], label, (path,), None, value, f"record the {label}")
            )
    for path, (label, thresholds, near) in NEAR_THRESHOLDS.items():
        near_value = _number(_get(case, path))
        if near_value is None:
            continue
        for threshold in thresholds:
            if abs(near_value - threshold) <= near:
                across = threshold - 1 if near_value >= threshold else threshold
                found.append(
                    Variation(
                        path.split(".")[-1],
                        label,
                        (path,),
                        _get(case, path),
                        across,
                        f"confirm the {label} ({_get(case, path)}); {threshold} is a threshold",
                    )
                )
    size_paths = ("index_lesion.size_mm",) + (
        ("staging.largest_nodule_mm",) if cancer == "hcc" else ()
    )
    size = _number(_get(case, "index_lesion.size_mm"))
    if size is not None:
        for threshold in SIZE_THRESHOLDS.get(cancer, ()):
            if abs(size - threshold) <= SIZE_NEAR_MM:
                across = threshold + 1 if size <= threshold else threshold
                paths = tuple(p for p in size_paths if _number(_get(case, p)) is not None)
                found.append(
                    Variation(
                        "size_mm",
                        "tumour size",
                        paths,
                        _get(case, "index_lesion.size_mm"),
                        across,
                        f"confirm the tumour size ({size:g} mm; {threshold:g} mm is a threshold)",
                    )
                )
    crcl = _number(facts.get("derived.crcl_cockcroft_gault"))
    creatinine = _number(_get(case, "labs.creatinine_mg_dl"))
    if crcl is not None and creatinine and crcl > 0:
        for threshold in CRCL_THRESHOLDS:
            if abs(crcl - threshold) <= CRCL_NEAR:
                target = threshold - 2 if crcl >= threshold else threshold + 2
                found.append(
                    Variation(
                        "crcl_ml_min",
                        "creatinine clearance",
                        ("labs.creatinine_mg_dl",),
                        round(crcl),
                        target,
                        f"confirm the creatinine clearance ({crcl:.0f} mL/min; {threshold} is a "
                        "threshold): repeat the creatinine or measure the clearance",
                    )
                )
    return found[:MAX_VARIATIONS]


def _variant(
    case: Mapping[str, Any], variation: Variation, facts: Mapping[str, Any]
) -> dict[str, Any]:
    varied = copy.deepcopy(dict(case))
    if variation.fact == "crcl_ml_min":
        crcl = float(facts["derived.crcl_cockcroft_gault"])
        creatinine = float(_get(case, "labs.creatinine_mg_dl"))
        _set(
            varied,
            "labs.creatinine_mg_dl",
            round(creatinine * crcl / float(variation.varied_to), 2),
        )
        return varied
    for path in variation.paths:
        _set(varied, path, variation.varied_to)
    return varied


# --- the choice, re-run --------------------------------------------------------------------------


_CONTEXTS: dict[tuple[str, str], Context] = {}


def _context_of(unit: Evidence) -> Context:
    key = (unit.unit_id, unit.version)
    found = _CONTEXTS.get(key)
    if found is None:
        found = Context.model_validate(unit.content.get("context") or {})
        if len(_CONTEXTS) > 4096:
            _CONTEXTS.clear()
        _CONTEXTS[key] = found
    return found


def rejudged(unit: Evidence, facts: Mapping[str, Any]) -> Evidence:
    """The unit judged again for other facts (the same reading as ``consult.evidence``)."""
    context = _context_of(unit)
    applies = context_applies(context, facts)
    return replace(
        unit,
        applies=applies,
        missing=tuple(missing_facts(context, facts)),
        held=held_conditions(context, facts),
        failed=failed_conditions(context, facts) if applies is False else (),
    )


@dataclass(frozen=True)
class Choice:
    lead: ProposedComponent | None
    staging: dict[str, Any]

    @property
    def key(self) -> tuple[str, frozenset[str], str]:
        if self.lead is None:
            return ("", frozenset(), "")
        drugs = frozenset(given(self.lead).drugs)
        return (str(self.lead.modality), drugs, "" if drugs else self.lead.description)


def choose(
    case: Mapping[str, Any],
    facts: Mapping[str, Any],
    units: Sequence[Evidence],
    labels: Mapping[str, str],
) -> Choice:
    """The option that would lead the pathway for these facts: the guideline engine's
    arrangement of the applicable therapy steps, through the safety gate."""
    staging = staging_summary(derive_all(case))
    judged = [rejudged(u, facts) for u in units]
    therapy = [u for u in judged if u.kind == "therapy_step"]
    safety = [u for u in judged if u.kind != "therapy_step"]
    report = guideline.treatment(
        RoleInput(
            role="treatment",
            round=1,
            case=case,
            facts=facts,
            staging=staging,
            evidence=[u for u in therapy if u.applies is not False],
            labels=dict(labels),
        )
    )
    components = list(report.components)
    declines = facts.get("derived.declines") or []
    outcome, _ = gate_with_fallback(
        components,
        safety,
        options=lambda: components,
        facts=facts,
        declines=declines if isinstance(declines, list) else [],
        labels=labels,
    )
    lead = next(
        (
            ProposedComponent.model_validate(c.model_dump())
            for c in outcome.components
            if c.role == "primary"
            and not is_adjunct(ProposedComponent.model_validate(c.model_dump()))
        ),
        None,
    )
    return Choice(lead=lead, staging=dict(staging))


def _shown(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


def _staging_change(
    case: Mapping[str, Any], before: Mapping[str, Any], after: Mapping[str, Any]
) -> dict[str, Any]:
    keys = guideline.relevant_staging(case)
    return {
        k: after.get(k) for k in keys if after.get(k) != before.get(k) and after.get(k) is not None
    }


def _sentence(variation: Variation, choice: Choice, staging: Mapping[str, Any]) -> str:
    at = (
        f"At {variation.label} {_shown(variation.varied_to)}"
        if variation.fact != "crcl_ml_min"
        else f"At a creatinine clearance of {variation.varied_to} mL/min"
    )
    stage = ", ".join(f"{STAGING_LABELS.get(k, k)} {v}" for k, v in staging.items())
    lead = choice.lead.description if choice.lead is not None else "no option"
    would = f"this would be {stage} and " if stage else ""
    if variation.recorded is None:
        at = f"{variation.label} is not recorded: at {_shown(variation.varied_to)}"
        return f"{at} {would}the pathway would start with: {lead}; {variation.advice}."
    return f"{at} {would}the pathway would start with: {lead}; {variation.advice}."


def decisive_facts(
    *,
    case: Mapping[str, Any],
    facts: Mapping[str, Any],
    units: Sequence[Evidence],
    labels: Mapping[str, str],
) -> tuple[list[DecisiveFact], int]:
    """The variations that change the option leading the pathway, and how many were tried."""
    tried = variations(case, facts)
    if not tried:
        return [], 0
    baseline = choose(case, facts, units, labels)
    found: list[DecisiveFact] = []
    seen: set[tuple[str, Any]] = set()
    for variation in tried:
        variant = _variant(case, variation, facts)
        variant_facts = case_facts(variant)
        choice = choose(variant, variant_facts, units, labels)
        if choice.key == baseline.key:
            continue
        key = (variation.fact, _shown(variation.varied_to))
        if key in seen:
            continue
        seen.add(key)
        staging = _staging_change(case, baseline.staging, choice.staging)
        found.append(
            DecisiveFact(
                fact=variation.fact,
                recorded=variation.recorded,
                varied_to=variation.varied_to,
                primary_would_be=choice.lead.description if choice.lead is not None else "",
                advice=variation.advice,
                text=_sentence(variation, choice, staging),
                staging_would_be=staging,
            )
        )
    return found, len(tried)
