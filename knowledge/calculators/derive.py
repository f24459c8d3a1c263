"""Run the calculators relevant to a case and map them to the plan's staging block."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from knowledge.calculators._common import CalcResult, CalcValue, lookup
from knowledge.calculators.breast import breast_subtype
from knowledge.calculators.liver import (
    albi_grade,
    albi_score,
    bclc_stage,
    child_pugh_class,
    child_pugh_score,
)
from knowledge.calculators.lymphoma import ann_arbor_stage, cns_ipi, ipi
from knowledge.calculators.renal import crcl_cockcroft_gault, egfr_ckd_epi_2021
from knowledge.calculators.tnm import breast_tnm_stage, lung_tnm_stage

Calculator = Callable[[Mapping[str, Any]], CalcResult]

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
)

# Kidney function matters for drug dosing in every cancer type.
_COMMON: Final[dict[str, Calculator]] = {
    "egfr_ckd_epi_2021": egfr_ckd_epi_2021,
    "crcl_cockcroft_gault": crcl_cockcroft_gault,
}

CALCULATORS_BY_CANCER_TYPE: Final[dict[str, dict[str, Calculator]]] = {
    "hcc": {
        "child_pugh_score": child_pugh_score,
        "child_pugh_class": child_pugh_class,
        "albi_score": albi_score,
        "albi_grade": albi_grade,
        "bclc": bclc_stage,
    },
    "lung_adenocarcinoma": {"tnm_stage": lung_tnm_stage},
    "breast": {"tnm_stage": breast_tnm_stage, "breast_subtype": breast_subtype},
    "lymphoma": {"ann_arbor_stage": ann_arbor_stage, "ipi": ipi, "cns_ipi": cns_ipi},
}


def derive_all(case: Mapping[str, Any]) -> dict[str, CalcResult]:
    """Results keyed by calculator name: the cancer-type-specific ones plus eGFR and CrCl.

    An unknown or missing cancer_type runs only the common calculators.
    """
    cancer_type = lookup(case, "cancer_type")
    specific = (
        CALCULATORS_BY_CANCER_TYPE.get(cancer_type, {}) if isinstance(cancer_type, str) else {}
    )
    return {name: calc(case) for name, calc in {**specific, **_COMMON}.items()}


def staging_summary(results: Mapping[str, CalcResult]) -> dict[str, CalcValue]:
    """The plan's staging block: every key present, None where not derived."""
    return {key: (results[key].value if key in results else None) for key in STAGING_KEYS}
