"""Pure-Python clinical calculators that read an mdtboard.case/1 dict and cite their sources.

Every calculator takes the case dict and returns a :class:`CalcResult`; a missing or invalid
required input gives ``value=None`` and names the dotted path in ``inputs_missing``.
"""

from __future__ import annotations

from knowledge.calculators._common import CalcResult, CalcValue
from knowledge.calculators.breast import breast_subtype
from knowledge.calculators.derive import STAGING_KEYS, derive_all, staging_summary
from knowledge.calculators.liver import (
    albi_grade,
    albi_grade_for,
    albi_linear_predictor,
    albi_score,
    bclc_stage,
    child_pugh_class,
    child_pugh_class_for,
    child_pugh_points,
    child_pugh_score,
)
from knowledge.calculators.lymphoma import ann_arbor_stage, cns_ipi, ipi, parse_ann_arbor
from knowledge.calculators.renal import (
    ckd_epi_2021,
    cockcroft_gault,
    crcl_cockcroft_gault,
    egfr_ckd_epi_2021,
)
from knowledge.calculators.tnm import (
    breast_stage_group,
    breast_tnm_stage,
    lung_stage_group,
    lung_tnm_stage,
    tnm_stage,
)

__all__ = [
    "STAGING_KEYS",
    "CalcResult",
    "CalcValue",
    "albi_grade",
    "albi_grade_for",
    "albi_linear_predictor",
    "albi_score",
    "ann_arbor_stage",
    "bclc_stage",
    "breast_stage_group",
    "breast_subtype",
    "breast_tnm_stage",
    "child_pugh_class",
    "child_pugh_class_for",
    "child_pugh_points",
    "child_pugh_score",
    "ckd_epi_2021",
    "cns_ipi",
    "cockcroft_gault",
    "crcl_cockcroft_gault",
    "derive_all",
    "egfr_ckd_epi_2021",
    "ipi",
    "lung_stage_group",
    "lung_tnm_stage",
    "parse_ann_arbor",
    "staging_summary",
    "tnm_stage",
]
