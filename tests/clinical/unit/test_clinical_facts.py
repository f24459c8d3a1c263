"""Derived facts for HCC tumour burden, the lymphoma entity, the Hodgkin risk group, the
Helicobacter pylori status and the trimester of a pregnancy: worked examples."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.lymphoma import (
    classify_lymphoma,
    esr_from_notes,
    h_pylori_status,
    hodgkin_stage_group,
    lymphoma_entity,
)
from clinical.calculators.patient import pregnancy_recorded, pregnancy_trimester
from clinical.calculators.transplant import tumour_burden_score


def case(cancer_type: str = "lymphoma", **sections: dict[str, Any] | str) -> dict[str, Any]:
    return {"format": "mdtboard.case/1", "case_id": "t", "cancer_type": cancer_type, **sections}


# --- HCC tumour burden -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "largest_mm", "score"),
    [
        (4, 45, 8.5),  # beyond up-to-7, still in the six-and-twelve middle band
        (7, 55, 12.5),  # high band: TACE gives the poorest survival
        (1, 20, 3.0),
        (3, 30, 6.0),
    ],
)
def test_clinical_facts_tumour_burden_score(count: int, largest_mm: int, score: float) -> None:
    result = tumour_burden_score(
        case("hcc", staging={"nodules_count": count, "largest_nodule_mm": largest_mm})
    )
    assert result.value == score


def test_clinical_facts_tumour_burden_needs_both_inputs_not_invasion() -> None:
    result = tumour_burden_score(case("hcc", staging={"nodules_count": 3}))
    assert result.value is None
    assert result.inputs_missing == ["staging.largest_nodule_mm"]
    # invasion status is not needed for the sum
    known = tumour_burden_score(case("hcc", staging={"nodules_count": 3, "largest_nodule_mm": 40}))
    assert known.value == 7.0
    assert known.inputs_missing == []


# --- lymphoma entity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("histology", "site", "entity"),
    [
        ("classic Hodgkin lymphoma, nodular sclerosis", "", "classic_hodgkin"),
        ("Hodgkin's lymphoma, mixed cellularity", "", "classic_hodgkin"),
        ("nodular lymphocyte-predominant Hodgkin lymphoma", "", "nlphl"),
        ("diffuse large B-cell lymphoma (non-Hodgkin)", "", "dlbcl"),
        ("mantle cell lymphoma, blastoid", "", "mantle_cell"),
        ("extranodal marginal zone lymphoma of MALT type", "stomach", "mzl_gastric_malt"),
        ("MALT lymphoma", "left orbit", "mzl_extragastric_malt"),
        ("splenic marginal zone lymphoma", "spleen", "mzl_splenic"),
        ("nodal marginal zone lymphoma", "cervical nodes", "mzl_nodal"),
        ("follicular lymphoma, grade 1-2", "", "follicular"),
        ("DLBCL transformed from follicular lymphoma", "", "dlbcl"),
        ("high-grade B-cell lymphoma with MYC and BCL2 rearrangements", "", "hgbl"),
        ("peripheral T-cell lymphoma, NOS", "", "t_cell"),
        ("lymphoma, unclassifiable", "", "other"),
    ],
)
def test_clinical_facts_lymphoma_entity(histology: str, site: str, entity: str) -> None:
    assert classify_lymphoma(histology, site) == entity


def test_clinical_facts_lymphoma_entity_needs_histology() -> None:
    result = lymphoma_entity(case(diagnosis={"histology": None}))
    assert result.value is None
    assert "diagnosis.histology" in result.inputs_missing


# --- Hodgkin risk group ------------------------------------------------------------------------


def _hodgkin(stage: str, notes: str | None = None, **staging: Any) -> dict[str, Any]:
    full = {
        "ann_arbor_stage": stage,
        "bulky_disease": False,
        "extranodal_sites_count": 0,
        "nodal_regions_involved": 2,
        "b_symptoms": False,
        **staging,
    }
    return case(
        diagnosis={"histology": "classic Hodgkin lymphoma"}, staging=full, notes=notes or ""
    )


def test_clinical_facts_hodgkin_advanced_stage() -> None:
    assert hodgkin_stage_group(_hodgkin("IV")).value == "advanced"


def test_clinical_facts_hodgkin_early_favourable_needs_a_normal_esr() -> None:
    # no risk factor but no ESR: never guessed favourable, the ESR is pending
    assert hodgkin_stage_group(_hodgkin("II")).value == "early_esr_unknown"
    assert hodgkin_stage_group(_hodgkin("II", "ESR 18 mm/h")).value == "early_favourable"
    # a risk factor not recorded at all leaves the group undecided
    unknown = hodgkin_stage_group(_hodgkin("II", nodal_regions_involved=None))
    assert unknown.value is None
    assert "staging.nodal_regions_involved" in unknown.inputs_missing


@pytest.mark.parametrize(
    ("staging", "notes"),
    [
        ({"bulky_disease": True}, None),  # large mediastinal mass
        ({"extranodal_sites_count": 1}, None),
        ({"nodal_regions_involved": 3}, None),
        ({}, "ESR 55 mm/h"),  # >= 50 without B symptoms
        ({"b_symptoms": True}, "ESR 32 mm/h"),  # >= 30 with B symptoms
    ],
)
def test_clinical_facts_hodgkin_one_risk_factor_makes_early_unfavourable(
    staging: dict[str, Any], notes: str | None
) -> None:
    assert hodgkin_stage_group(_hodgkin("II", notes, **staging)).value == "early_unfavourable"


def test_clinical_facts_hodgkin_iib_with_bulk_is_advanced() -> None:
    group = hodgkin_stage_group(_hodgkin("II", None, b_symptoms=True, bulky_disease=True))
    assert group.value == "advanced"


def test_clinical_facts_hodgkin_group_only_for_classic_hodgkin() -> None:
    dlbcl = case(diagnosis={"histology": "diffuse large B-cell lymphoma"}, staging={})
    assert hodgkin_stage_group(dlbcl).value is None


def test_clinical_facts_esr_read_from_notes() -> None:
    assert esr_from_notes("Hb 12.1. ESR of 38 mm/h; CRP 12") == 38
    assert esr_from_notes("erythrocyte sedimentation rate 61") == 61
    assert esr_from_notes("CRP 40 mg/L") is None


# --- Helicobacter pylori -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("notes", "status"),
    [
        ("H. pylori positive on gastric biopsy.", "positive"),
        ("Biopsy positive for Helicobacter pylori.", "positive"),
        ("Active H. pylori infection.", "positive"),
        ("Helicobacter pylori negative on histology and breath test.", "negative"),
        ("No Helicobacter pylori seen on biopsy.", "negative"),
        ("H. pylori serology pending.", None),
        ("Gastric MALT lymphoma.", None),
        # the last statement wins: eradicated, now negative
        (
            "H. pylori positive in 2024; eradicated, breath test now negative for H. pylori.",
            "negative",
        ),
    ],
)
def test_clinical_facts_h_pylori_status(notes: str, status: str | None) -> None:
    assert h_pylori_status(case(notes=notes)).value == status


# --- pregnancy trimester -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patient", "notes", "trimester"),
    [
        ({"pregnant": False}, None, "not_pregnant"),
        ({"pregnant": None}, None, None),
        ({"pregnant": True}, None, "unknown"),
        ({"pregnant": True}, "Dating scan not yet done.", "unknown"),
        ({"pregnant": True}, "Singleton pregnancy at 24 weeks' gestation.", "second"),
        ({"pregnant": True}, "Gestational age 9+3 weeks.", "first"),
        ({"pregnant": True}, "32 weeks of pregnancy", "third"),
        ({"pregnant": True}, "Pregnant, first trimester.", "first"),
        ({"pregnant": True, "comorbidities": ["pregnancy, 13 weeks' gestation"]}, None, "first"),
        # the structured field, when the case carries it, wins over the notes
        ({"pregnant": True, "gestational_age_weeks": 20}, "first trimester", "second"),
    ],
)
def test_clinical_facts_pregnancy_trimester(
    patient: dict[str, Any], notes: str | None, trimester: str | None
) -> None:
    assert pregnancy_trimester(case(patient=patient, notes=notes or "")).value == trimester


@pytest.mark.parametrize(("pregnant", "recorded"), [(True, True), (False, False), (None, False)])
def test_clinical_facts_pregnancy_recorded_is_never_unknown(
    pregnant: bool | None, recorded: bool
) -> None:
    # PET-CT response imaging is planned unless a pregnancy is on record
    assert pregnancy_recorded(case(patient={"pregnant": pregnant})).value is recorded
