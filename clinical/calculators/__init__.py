"""Pure-Python clinical calculators that read an mdtboard.case/1 dict and cite their sources.

Every calculator takes the case dict and returns a :class:`CalcResult`; a missing or invalid
required input gives ``value=None`` and names the dotted path in ``inputs_missing``.
"""

from __future__ import annotations

from clinical.calculators.allergies import allergies_unmapped, allergy_classes
from clinical.calculators.breast import breast_subtype
from clinical.calculators.derive import derive_all, staging_summary
from clinical.calculators.liver import (
    albi_grade,
    albi_grade_for,
    albi_linear_predictor,
    albi_score,
    bclc_stage,
    child_pugh_class,
    child_pugh_class_for,
    child_pugh_points,
    child_pugh_score,
    liver_decompensated,
)
from clinical.calculators.lymphoma import (
    ann_arbor_stage,
    classify_lymphoma,
    cns_ipi,
    flipi,
    flipi_risk,
    h_pylori_status,
    hodgkin_stage_group,
    ipi,
    lymphoma_entity,
    parse_ann_arbor,
)
from clinical.calculators.medications import (
    anticoagulants,
    antiplatelets,
    cyp2d6_inhibitors,
    qt_prolonging_drugs,
    strong_cyp3a4_inducers,
    strong_cyp3a4_inhibitors,
)
from clinical.calculators.patient import (
    early_relapse,
    frailty,
    months_to_relapse,
    pregnancy_recorded,
    pregnancy_trimester,
    prior_regimens,
)
from clinical.calculators.renal import (
    calvert_dose_mg,
    carboplatin_auc5_mg,
    carboplatin_auc6_mg,
    ckd_epi_2021,
    cockcroft_gault,
    crcl_cockcroft_gault,
    egfr_ckd_epi_2021,
)
from clinical.calculators.tnm import (
    breast_stage_group,
    breast_tnm_stage,
    lung_stage_group,
    lung_tnm_stage,
    tnm_stage,
)
from clinical.calculators.transplant import (
    tumour_burden_score,
    within_milan,
    within_ucsf,
    within_up_to_7,
)
from clinical.results import CalcResult, CalcValue, FactValue
from clinical.text.preferences import declines, parse_preferences, wants
from clinical.vocab import STAGING_KEYS

__all__ = [
    "STAGING_KEYS",
    "CalcResult",
    "CalcValue",
    "FactValue",
    "albi_grade",
    "albi_grade_for",
    "albi_linear_predictor",
    "albi_score",
    "allergies_unmapped",
    "allergy_classes",
    "ann_arbor_stage",
    "anticoagulants",
    "antiplatelets",
    "bclc_stage",
    "breast_stage_group",
    "breast_subtype",
    "breast_tnm_stage",
    "calvert_dose_mg",
    "carboplatin_auc5_mg",
    "carboplatin_auc6_mg",
    "child_pugh_class",
    "child_pugh_class_for",
    "child_pugh_points",
    "child_pugh_score",
    "ckd_epi_2021",
    "classify_lymphoma",
    "cns_ipi",
    "cockcroft_gault",
    "crcl_cockcroft_gault",
    "cyp2d6_inhibitors",
    "declines",
    "derive_all",
    "early_relapse",
    "egfr_ckd_epi_2021",
    "flipi",
    "flipi_risk",
    "frailty",
    "h_pylori_status",
    "hodgkin_stage_group",
    "ipi",
    "liver_decompensated",
    "lung_stage_group",
    "lung_tnm_stage",
    "lymphoma_entity",
    "months_to_relapse",
    "parse_ann_arbor",
    "parse_preferences",
    "pregnancy_recorded",
    "pregnancy_trimester",
    "prior_regimens",
    "qt_prolonging_drugs",
    "staging_summary",
    "strong_cyp3a4_inducers",
    "strong_cyp3a4_inhibitors",
    "tnm_stage",
    "tumour_burden_score",
    "wants",
    "within_milan",
    "within_ucsf",
    "within_up_to_7",
]
