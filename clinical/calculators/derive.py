"""Run the calculators relevant to a case and map them to the plan's staging block."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from clinical.calculators.allergies import allergies_unmapped, allergy_classes
from clinical.calculators.breast import adjuvant_cdk46, breast_subtype
from clinical.calculators.breast_genomics import (
    esr1_mutation,
    pi3k_pathway_altered,
    pik3ca_mutation,
)
from clinical.calculators.breast_local import breast_surgery_done
from clinical.calculators.course import (
    days_since_bleeding,
    early_relapse_with_course,
    gelf_high_burden,
    months_since_anti_cd20,
    months_since_endocrine,
    months_since_immunotherapy,
    months_since_last_treatment,
    months_since_platinum,
    oligoprogression,
    operations_done,
    platinum_naive,
    primary_operation_done,
    rechallenge_barred,
    relapse_timing,
)
from clinical.calculators.dosing import (
    bsa_m2,
    capecitabine_renal_dose_pct,
    carboplatin_gfr_basis,
    carboplatin_gfr_ml_min,
    docetaxel_hepatic_dose_pct,
    doxorubicin_hepatic_dose_pct,
    irinotecan_hepatic_dose_pct,
    paclitaxel_hepatic_dose_pct,
)
from clinical.calculators.germline import germline_testing_indicated
from clinical.calculators.history import (
    intolerant_of,
    prior_regimens_with_history,
    progressed_on,
    treatment_line_with_history,
)
from clinical.calculators.liver import (
    albi_grade,
    albi_score,
    bclc_stage,
    child_pugh_class,
    child_pugh_score,
    liver_decompensated,
)
from clinical.calculators.lung import (
    lung_cns_active_targeted,
    lung_drivers,
    lung_first_line_targeted,
)
from clinical.calculators.lymphoma import (
    ann_arbor_stage,
    cns_ipi,
    flipi,
    flipi_risk,
    h_pylori_status,
    hodgkin_stage_group,
    ipi,
    lymphoma_entity,
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
    frailty,
    months_to_relapse,
    pregnancy_recorded,
    pregnancy_trimester,
)
from clinical.calculators.renal import (
    carboplatin_auc5_mg,
    carboplatin_auc6_mg,
    crcl_cockcroft_gault,
    egfr_ckd_epi_2021,
)
from clinical.calculators.response import (
    continues_current_line_fact,
    new_lesions,
    progression_on_imaging,
    response_category,
    response_criteria_used,
    response_oligoprogression,
)
from clinical.calculators.safety_history import bleeding_within_6_months, prior_irae_severity
from clinical.calculators.situations import situations
from clinical.calculators.tnm import breast_tnm_stage, lung_tnm_stage
from clinical.calculators.transplant import (
    tumour_burden_score,
    within_milan,
    within_ucsf,
    within_up_to_7,
)
from clinical.calculators.tumour_lysis import tls_risk
from clinical.results import CalcResult, CalcValue, lookup
from clinical.text.preferences import declines, fertility_declined, wants
from clinical.text.textfacts import (
    bone_metastases,
    brain_metastases_symptomatic,
    oligometastatic,
    recorded_inoperable,
    recorded_unresectable,
    steroids_for_brain_metastases,
)
from clinical.vocab import STAGING_KEYS

Calculator = Callable[[Mapping[str, Any]], CalcResult]

# Kidney function matters for drug dosing in every cancer type.
RENAL: Final[dict[str, Calculator]] = {
    "egfr_ckd_epi_2021": egfr_ckd_epi_2021,
    "crcl_cockcroft_gault": crcl_cockcroft_gault,
}

# Patient-level facts for every cancer type: dosing, interactions, preferences, history.
PATIENT: Final[dict[str, Calculator]] = {
    "carboplatin_auc5_mg": carboplatin_auc5_mg,
    "carboplatin_auc6_mg": carboplatin_auc6_mg,
    "carboplatin_gfr_ml_min": carboplatin_gfr_ml_min,
    "carboplatin_gfr_basis": carboplatin_gfr_basis,
    "bsa_m2": bsa_m2,
    "capecitabine_renal_dose_pct": capecitabine_renal_dose_pct,
    "doxorubicin_hepatic_dose_pct": doxorubicin_hepatic_dose_pct,
    "paclitaxel_hepatic_dose_pct": paclitaxel_hepatic_dose_pct,
    "irinotecan_hepatic_dose_pct": irinotecan_hepatic_dose_pct,
    "docetaxel_hepatic_dose_pct": docetaxel_hepatic_dose_pct,
    "liver_decompensated": liver_decompensated,
    "frailty": frailty,
    "declines": declines,
    "wants": wants,
    "fertility_declined": fertility_declined,
    "bone_metastases": bone_metastases,
    "brain_metastases_symptomatic": brain_metastases_symptomatic,
    "steroids_for_brain_metastases": steroids_for_brain_metastases,
    "strong_cyp3a4_inhibitors": strong_cyp3a4_inhibitors,
    "strong_cyp3a4_inducers": strong_cyp3a4_inducers,
    "qt_prolonging_drugs": qt_prolonging_drugs,
    "anticoagulants": anticoagulants,
    "antiplatelets": antiplatelets,
    "cyp2d6_inhibitors": cyp2d6_inhibitors,
    "months_to_relapse": months_to_relapse,
    "prior_regimens": prior_regimens_with_history,
    "early_relapse": early_relapse_with_course,
    "line": treatment_line_with_history,
    "pregnancy_trimester": pregnancy_trimester,
    "pregnancy_recorded": pregnancy_recorded,
    "progressed_on": progressed_on,
    "intolerant_of": intolerant_of,
    "allergy_classes": allergy_classes,
    "allergies_unmapped": allergies_unmapped,
    # serial lesion measurements (FORMAT.md §4 lesions[]): the computed response
    "response": response_category,
    "response_criteria": response_criteria_used,
    "new_lesions": new_lesions,
    "progression_on_imaging": progression_on_imaging,
    "response_oligoprogression": response_oligoprogression,
    "continues_current_line": continues_current_line_fact,
    "prior_irae_severity": prior_irae_severity,
    "bleeding_within_6_months": bleeding_within_6_months,
    # The course of the disease in time (clinical/calculators/course.py, issue 23).
    "months_since_last_treatment": months_since_last_treatment,
    "months_since_platinum": months_since_platinum,
    "months_since_immunotherapy": months_since_immunotherapy,
    "months_since_anti_cd20": months_since_anti_cd20,
    "months_since_endocrine": months_since_endocrine,
    "relapse_timing": relapse_timing,
    "operations_done": operations_done,
    "primary_operation_done": primary_operation_done,
    "oligoprogression": oligoprogression,
    "rechallenge_barred": rechallenge_barred,
    "days_since_bleeding": days_since_bleeding,
    "platinum_naive": platinum_naive,
    # The case's situation (variant histology, site, emergency, newer biopsy): the units
    # written for one name its id; the abstention reads it against the coverage map.
    "situations": situations,
}

_COMMON: Final[dict[str, Calculator]] = {**RENAL, **PATIENT}

CALCULATORS_BY_CANCER_TYPE: Final[dict[str, dict[str, Calculator]]] = {
    "hcc": {
        "child_pugh_score": child_pugh_score,
        "child_pugh_class": child_pugh_class,
        "albi_score": albi_score,
        "albi_grade": albi_grade,
        "bclc": bclc_stage,
        "within_milan": within_milan,
        "within_up_to_7": within_up_to_7,
        "within_ucsf": within_ucsf,
        "tumour_burden_score": tumour_burden_score,
    },
    "lung_adenocarcinoma": {
        "tnm_stage": lung_tnm_stage,
        "lung_drivers": lung_drivers,
        "lung_first_line_targeted": lung_first_line_targeted,
        "lung_cns_active_targeted": lung_cns_active_targeted,
        "recorded_inoperable": recorded_inoperable,
        "recorded_unresectable": recorded_unresectable,
        "oligometastatic": oligometastatic,
    },
    "breast": {
        "tnm_stage": breast_tnm_stage,
        "breast_subtype": breast_subtype,
        "adjuvant_cdk46": adjuvant_cdk46,
        "esr1_mutation": esr1_mutation,
        "pik3ca_mutation": pik3ca_mutation,
        "pi3k_pathway_altered": pi3k_pathway_altered,
        "breast_surgery_done": breast_surgery_done,
        "germline_testing_indicated": germline_testing_indicated,
    },
    "lymphoma": {
        "ann_arbor_stage": ann_arbor_stage,
        "ipi": ipi,
        "cns_ipi": cns_ipi,
        "flipi": flipi,
        "flipi_risk": flipi_risk,
        "lymphoma_entity": lymphoma_entity,
        "hodgkin_stage_group": hodgkin_stage_group,
        "h_pylori": h_pylori_status,
        "gelf_high_burden": gelf_high_burden,
        "tls_risk": tls_risk,
    },
}


def derive_all(case: Mapping[str, Any]) -> dict[str, CalcResult]:
    """Results keyed by calculator name: the cancer-type-specific ones plus the common ones
    (kidney function and the patient-level facts in PATIENT).

    An unknown or missing cancer_type runs only the common calculators.
    """
    cancer_type = lookup(case, "cancer_type")
    specific = (
        CALCULATORS_BY_CANCER_TYPE.get(cancer_type, {}) if isinstance(cancer_type, str) else {}
    )
    return {name: calc(case) for name, calc in {**specific, **_COMMON}.items()}


def staging_summary(results: Mapping[str, CalcResult]) -> dict[str, CalcValue]:
    """The plan's staging block: every key present, None where not derived."""
    summary: dict[str, CalcValue] = {}
    for key in STAGING_KEYS:
        value = results[key].value if key in results else None
        summary[key] = None if isinstance(value, list) else value
    return summary
