"""Case complexity, the second stratum of the randomisation (with the cancer type).

A case is **complex** when its dossier records at least one of the features below, and
**standard** otherwise. The definition reads only the frozen dossier, so the same dossier
always falls in the same stratum; a value that is not available never makes a case complex.

- performance status: ECOG 2 or worse
- age 75 or older
- frailty: vulnerable or frail (stated, or from a G8 score of 14 or less)
- pregnancy or breastfeeding
- previously treated: a prior line of therapy, or recurrent, progressive or residual disease
- organ dysfunction: Child–Pugh B or C, moderate or severe ascites, any hepatic
  encephalopathy, untreated large varices, creatinine clearance (Cockcroft–Gault) under
  50 mL/min, LVEF under 50 %, interstitial lung disease
- immune compromise: a transplant, HIV, active autoimmune disease, high-dose steroids or
  another immunosuppressant
- brain metastases
- three or more comorbidities

These are the situations that turn a guideline lookup into a tumor-board negotiation
(competing options, dose or organ constraints, patient factors); EvoMDT stratifies by
"case complexity" without publishing its definition, so this one is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clinical.calculators.liver import child_pugh_class
from clinical.calculators.patient import frailty
from clinical.calculators.renal import crcl_cockcroft_gault

STANDARD = "standard"
COMPLEX = "complex"
LEVELS = (STANDARD, COMPLEX)


def _get(case: Mapping[str, Any], section: str, key: str) -> Any:
    holder = case.get(section)
    return holder.get(key) if isinstance(holder, Mapping) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def complexity_reasons(case: Mapping[str, Any]) -> list[str]:
    """What makes the case complex, in words; empty for a standard case."""
    reasons: list[str] = []
    ecog = _number(_get(case, "patient", "ecog"))
    if ecog is not None and ecog >= 2:
        reasons.append("ECOG 2 or worse")
    age = _number(_get(case, "patient", "age_years"))
    if age is not None and age >= 75:
        reasons.append("age 75 or older")
    if frailty(case).value in ("vulnerable", "frail"):
        reasons.append("vulnerable or frail")
    if _get(case, "patient", "pregnant") is True or _get(case, "patient", "breastfeeding") is True:
        reasons.append("pregnant or breastfeeding")
    setting = _get(case, "diagnosis", "setting")
    if _get(case, "diagnosis", "prior_therapies") or setting in (
        "recurrent",
        "progressive",
        "residual_after_neoadjuvant",
    ):
        reasons.append("previously treated")
    if case.get("cancer_type") == "hcc" and child_pugh_class(case).value in ("B", "C"):
        reasons.append("Child–Pugh B or C")
    if _get(case, "organ_function", "ascites") == "moderate_severe":
        reasons.append("moderate or severe ascites")
    if _get(case, "organ_function", "encephalopathy") in ("grade_1_2", "grade_3_4"):
        reasons.append("hepatic encephalopathy")
    if _get(case, "organ_function", "varices") == "large_untreated":
        reasons.append("untreated large varices")
    crcl = _number(crcl_cockcroft_gault(case).value)
    if crcl is not None and crcl < 50:
        reasons.append("creatinine clearance under 50 mL/min")
    lvef = _number(_get(case, "organ_function", "lvef_pct"))
    if lvef is not None and lvef < 50:
        reasons.append("LVEF under 50 %")
    if _get(case, "organ_function", "interstitial_lung_disease") is True:
        reasons.append("interstitial lung disease")
    if _get(case, "diagnosis", "transplant_history") not in (None, "none"):
        reasons.append("transplant recipient")
    if _get(case, "labs", "hiv") == "positive":
        reasons.append("HIV")
    if _get(case, "organ_function", "autoimmune_activity") == "active":
        reasons.append("active autoimmune disease")
    if _get(case, "organ_function", "immunosuppression") in (
        "high_dose_steroids",
        "other_immunosuppressant",
    ):
        reasons.append("immunosuppressed")
    brain = _number(_get(case, "staging", "brain_metastases_count"))
    if brain is not None and brain >= 1:
        reasons.append("brain metastases")
    comorbidities = _get(case, "patient", "comorbidities")
    if isinstance(comorbidities, list) and len(comorbidities) >= 3:
        reasons.append("three or more comorbidities")
    return reasons


def case_complexity(case: Mapping[str, Any]) -> tuple[str, list[str]]:
    """("complex", reasons) or ("standard", [])."""
    reasons = complexity_reasons(case)
    return (COMPLEX if reasons else STANDARD), reasons
