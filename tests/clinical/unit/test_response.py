"""Response calculators: RECIST 1.1, mRECIST, iRECIST and Lugano from serial measurements."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.response import (
    LesionInputError,
    case_response,
    irecist,
    lesions_from_case,
    lugano,
    mrecist,
    oligoprogression,
    recist,
    residual_after_neoadjuvant,
    response_criteria,
)

D0, D1, D2, D3 = "2026-01-10", "2026-03-10", "2026-05-10", "2026-07-10"


def lesion(
    lesion_id: str,
    sizes: dict[str, float | None],
    *,
    kind: str = "metastasis",
    target: bool = True,
    field: str = "longest_diameter_mm",
    modality: str = "CT",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "lesion_id": lesion_id,
        "site": f"site of {lesion_id}",
        "kind": kind,
        "target": target,
        "measurements": [
            {"date": day, "modality": modality, field: size} for day, size in sizes.items()
        ],
        **extra,
    }


def read(*lesions: dict[str, Any]) -> list[Any]:
    return lesions_from_case({"lesions": list(lesions)})


# --- RECIST 1.1 -------------------------------------------------------------------------------


def test_recist_partial_response_is_a_30_percent_fall_from_baseline() -> None:
    """Eisenhauer 2009 §4.3.1: PR = at least a 30 % decrease in the sum of diameters of target
    lesions, taking the baseline sum as reference."""
    # given a baseline sum of 58 mm (30 + 28) falling to 40 mm (-31 %)
    lesions = read(lesion("L1", {D0: 30, D1: 21}), lesion("L2", {D0: 28, D1: 19}))
    # when
    result = recist(lesions)
    # then
    assert result is not None
    assert result.latest.category == "PR"
    assert result.latest.sum_mm == 40
    assert result.baseline_sum_mm == 58
    assert any("-31 %" in line for line in result.latest.arithmetic)


def test_recist_29_percent_fall_is_stable_disease() -> None:
    lesions = read(lesion("L1", {D0: 100, D1: 71}))
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "SD"


def test_recist_progression_needs_20_percent_and_5_mm_over_the_nadir() -> None:
    """Eisenhauer 2009 §4.3.1: PD = at least a 20 % increase in the sum of diameters taking as
    reference the smallest sum on study (the nadir); in addition the sum must also demonstrate
    an absolute increase of at least 5 mm."""
    # given a small tumour: 20 mm, nadir 15 mm, then 19 mm (+27 % but only +4 mm)
    lesions = read(lesion("L1", {D0: 20, D1: 15, D2: 19, D3: 21}))
    result = recist(lesions)
    assert result is not None
    categories = [tp.category for tp in result.time_points]
    # then +4 mm is not progression; +6 mm (40 % over the nadir) is
    assert categories == ["SD", "SD", "PD"]
    assert result.time_points[1].nadir_mm == 15
    assert any("only +4 mm" in line for line in result.time_points[1].arithmetic)


def test_recist_progression_is_measured_from_the_nadir_not_the_baseline() -> None:
    # given 100 -> 50 (PR, nadir) -> 61 (+22 % over the nadir, still 39 % below baseline)
    lesions = read(lesion("L1", {D0: 100, D1: 50, D2: 61}))
    result = recist(lesions)
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["PR", "PD"]
    assert result.latest.nadir_mm == 50


def test_recist_a_new_lesion_is_progression_whatever_the_sum() -> None:
    """Eisenhauer 2009 §4.3.1 and Table 1: the appearance of one or more new lesions is
    progression, even while the target lesions shrink."""
    lesions = read(
        lesion("L1", {D0: 40, D1: 20}),
        lesion("L4", {D1: 12}, target=False),  # first seen after baseline: a new lesion
    )
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "PD"
    assert result.latest.new_lesions == ("L4",)
    assert result.to_plan()["new_lesions"] == ["L4"]


def test_recist_node_measured_by_short_axis() -> None:
    """Eisenhauer 2009 §3.1/§4.2: an abdominal node reported as 20 mm x 30 mm has a short axis of
    20 mm, and 20 mm is recorded as its measurement in the sum."""
    lesions = read(
        {
            "lesion_id": "N1",
            "kind": "nodal",
            "target": True,
            "measurements": [
                {"date": D0, "longest_diameter_mm": 30, "short_axis_mm": 20},
                {"date": D1, "longest_diameter_mm": 30, "short_axis_mm": 20},
            ],
        },
        lesion("L1", {D0: 30, D1: 30}),
    )
    result = recist(lesions)
    assert result is not None
    assert result.baseline_sum_mm == 50  # 20 (short axis) + 30, not 30 + 30


def test_recist_complete_response_allows_nodes_under_10_mm_short_axis() -> None:
    """Eisenhauer 2009 §4.3.1: CR = disappearance of all target lesions; any pathological node
    must have reduced in short axis to < 10 mm. The sum need not be zero."""
    node = {
        "lesion_id": "N1",
        "kind": "nodal",
        "target": True,
        "measurements": [
            {"date": D0, "short_axis_mm": 18},
            {"date": D1, "short_axis_mm": 9},
        ],
    }
    result = recist(read(node, lesion("L1", {D0: 25, D1: 0})))
    assert result is not None
    assert result.latest.category == "CR"
    assert result.latest.sum_mm == 9


def test_recist_node_at_10_mm_is_not_complete_response() -> None:
    node = {
        "lesion_id": "N1",
        "kind": "nodal",
        "target": True,
        "measurements": [
            {"date": D0, "short_axis_mm": 18},
            {"date": D1, "short_axis_mm": 10},
        ],
    }
    result = recist(read(node, lesion("L1", {D0: 25, D1: 0})))
    assert result is not None
    assert result.latest.category == "PR"  # 43 -> 10 is -77 %


def test_recist_table1_target_cr_with_nontarget_present_is_pr() -> None:
    """Eisenhauer 2009 Table 1: target CR + non-target non-CR/non-PD + no new lesion = PR."""
    lesions = read(
        lesion("L1", {D0: 25, D1: 0}),
        lesion("L2", {D0: 15, D1: 12}, target=False),
    )
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "PR"


def test_recist_table1_target_cr_with_nontarget_not_evaluated_is_pr() -> None:
    """Eisenhauer 2009 Table 1: target CR + non-target not evaluated = PR."""
    lesions = read(
        lesion("L1", {D0: 25, D1: 0}),
        lesion("L2", {D0: 15}, target=False),
    )
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "PR"


def test_recist_missing_target_measurement_is_not_evaluable() -> None:
    """Eisenhauer 2009 Table 1: target lesions not all evaluated = NE (unless PD otherwise)."""
    lesions = read(lesion("L1", {D0: 25, D1: 20}), lesion("L2", {D0: 25}))
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "NE"


def test_recist_stays_progression_once_recorded() -> None:
    lesions = read(lesion("L1", {D0: 20}), lesion("L2", {D0: 20, D1: 30, D2: 10}))
    result = recist(lesions)
    assert result is not None
    assert result.time_points[0].category == "NE"
    lesions = read(lesion("L1", {D0: 20, D1: 40, D2: 10}))
    result = recist(lesions)
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["PD", "PD"]


def test_recist_single_time_point_has_no_response() -> None:
    assert recist(read(lesion("L1", {D0: 20}))) is None


# --- mRECIST ----------------------------------------------------------------------------------


def test_mrecist_reads_the_viable_tumour_not_the_whole_lesion() -> None:
    """Lencioni & Llovet 2010: after TACE a lesion may keep its size while its enhancing part
    shrinks; mRECIST measures the viable (arterially enhancing) diameter."""
    liver = {
        "lesion_id": "L1",
        "kind": "primary",
        "target": True,
        "measurements": [
            {"date": D0, "modality": "MRI", "longest_diameter_mm": 40, "viable_enhancing_mm": 40},
            {"date": D1, "modality": "MRI", "longest_diameter_mm": 40, "viable_enhancing_mm": 12},
        ],
    }
    lesions = read(liver)
    assert recist(lesions).latest.category == "SD"  # type: ignore[union-attr]
    result = mrecist(lesions)
    assert result is not None
    assert result.latest.category == "PR"
    assert result.latest.sum_mm == 12


def test_mrecist_no_enhancement_left_is_complete_response() -> None:
    liver = lesion("L1", {D0: 35, D1: 0}, kind="primary", field="viable_enhancing_mm")
    result = mrecist(read(liver))
    assert result is not None
    assert result.latest.category == "CR"


def test_mrecist_progression_is_20_percent_over_the_viable_nadir() -> None:
    """Lencioni & Llovet 2010: PD = an increase of at least 20 % in the sum of viable target
    diameters over the smallest sum recorded since treatment started (no 5 mm floor)."""
    liver = lesion("L1", {D0: 20, D1: 10, D2: 12}, kind="primary", field="viable_enhancing_mm")
    result = mrecist(read(liver))
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["PR", "PD"]


def test_response_criteria_for_hcc_with_viable_diameters_is_mrecist() -> None:
    case = {
        "cancer_type": "hcc",
        "lesions": [lesion("L1", {D0: 20, D1: 10}, kind="primary", field="viable_enhancing_mm")],
    }
    assessment = case_response(case)
    assert assessment is not None
    assert assessment.criteria == "mRECIST"


# --- iRECIST ----------------------------------------------------------------------------------


def io_case(*lesions: dict[str, Any]) -> dict[str, Any]:
    return {
        "cancer_type": "lung_adenocarcinoma",
        "diagnosis": {
            "prior_therapies": [{"line": 1, "regimen": "pembrolizumab", "end_date": None}]
        },
        "lesions": list(lesions),
    }


def test_irecist_pseudo_progression_resets_the_bar() -> None:
    """Seymour 2017: RECIST progression on immunotherapy is iUPD; if the next assessment no
    longer shows progression, the iUPD is not confirmed and the category follows the lesions
    (here a fall of >= 30 % from baseline: PR)."""
    case = io_case(lesion("L1", {D0: 40, D1: 52, D2: 26}))
    assessment = case_response(case)
    assert assessment is not None
    assert assessment.criteria == "iRECIST"
    assert [tp.category for tp in assessment.time_points] == ["iUPD", "PR"]
    assert any("pseudo-progression" in line for line in assessment.latest.arithmetic)


def test_irecist_confirms_progression_by_a_further_5_mm() -> None:
    """Seymour 2017: iCPD when the next assessment shows a further increase of >= 5 mm in the
    sum of target lesions."""
    lesions = read(lesion("L1", {D0: 40, D1: 52, D2: 57}))
    result = irecist(lesions)
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["iUPD", "iCPD"]
    assert any("+5 mm" in line for line in result.latest.arithmetic)


def test_irecist_growth_under_5_mm_remains_unconfirmed() -> None:
    lesions = read(lesion("L1", {D0: 40, D1: 52, D2: 55}))
    result = irecist(lesions)
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["iUPD", "iUPD"]


def test_irecist_another_new_lesion_confirms_progression() -> None:
    """Seymour 2017: after iUPD for a new lesion, another new lesion confirms it (iCPD)."""
    lesions = read(
        lesion("L1", {D0: 40, D1: 38, D2: 36}),
        lesion("L4", {D1: 10, D2: 10}, target=False),
        lesion("L5", {D2: 8}, target=False),
    )
    result = irecist(lesions)
    assert result is not None
    assert [tp.category for tp in result.time_points] == ["iUPD", "iCPD"]
    assert "L5" in " ".join(result.latest.arithmetic)


def test_not_on_immunotherapy_uses_recist() -> None:
    case = io_case(lesion("L1", {D0: 40, D1: 52}))
    case["diagnosis"]["prior_therapies"] = [
        {"line": 1, "regimen": "carboplatin-pemetrexed", "end_date": None}
    ]
    assessment = case_response(case)
    assert assessment is not None
    assert assessment.criteria == "RECIST 1.1"
    assert assessment.latest.category == "PD"


def test_immunotherapy_that_ended_before_baseline_does_not_count() -> None:
    case = io_case(lesion("L1", {D0: 40, D1: 52}))
    case["diagnosis"]["prior_therapies"][0]["end_date"] = "2025-06-01"
    lesions = lesions_from_case(case)
    assert str(response_criteria(case, lesions)) == "RECIST 1.1"


# --- Lugano -----------------------------------------------------------------------------------


def pet(lesion_id: str, scores: dict[str, int | None], **extra: Any) -> dict[str, Any]:
    return {
        "lesion_id": lesion_id,
        "kind": "nodal",
        "target": True,
        "measurements": [
            {"date": day, "modality": "PET-CT", "deauville": score} for day, score in scores.items()
        ],
        **extra,
    }


def test_lugano_deauville_1_to_3_is_complete_metabolic_response() -> None:
    """Cheson 2014 Table 3: a score of 1, 2 or 3, with or without a residual mass, is a complete
    metabolic response."""
    result = lugano(read(pet("N1", {D0: 5, D1: 3}), pet("N2", {D0: 4, D1: 2})))
    assert result is not None
    assert result.latest.category == "CMR"
    assert result.latest.max_deauville == 3


def test_lugano_interim_deauville_4_below_baseline_is_partial_metabolic_response() -> None:
    """Cheson 2014 Table 3: a score of 4 or 5 with reduced uptake compared with baseline is a
    partial metabolic response (at interim, responding disease)."""
    result = lugano(read(pet("N1", {D0: 5, D1: 4})))
    assert result is not None
    assert result.latest.category == "PMR"
    assert result.to_plan()["category"] == "PMR"


def test_lugano_unchanged_score_4_5_is_no_metabolic_response() -> None:
    """Cheson 2014 Table 3: 4 or 5 with no significant change in uptake from baseline = NMR."""
    result = lugano(read(pet("N1", {D0: 5, D1: 5})))
    assert result is not None
    assert result.latest.category == "NMR"


def test_lugano_new_fdg_avid_lesion_is_progressive_metabolic_disease() -> None:
    """Cheson 2014 Table 3: new FDG-avid foci consistent with lymphoma = PMD."""
    result = lugano(read(pet("N1", {D0: 5, D1: 3}), pet("N9", {D1: 5})))
    assert result is not None
    assert result.latest.category == "PMD"
    assert result.latest.new_lesions == ("N9",)


def test_lugano_rising_uptake_is_progression() -> None:
    result = lugano(read(pet("N1", {D0: 5, D1: 3}), pet("N2", {D0: 3, D1: 4})))
    assert result is not None
    assert result.latest.category == "PMD"


def test_lugano_missing_site_blocks_complete_response() -> None:
    result = lugano(read(pet("N1", {D0: 5, D1: 2}), pet("N2", {D0: 4})))
    assert result is not None
    assert result.latest.category == "NE"


def test_response_criteria_for_lymphoma_on_pet_is_lugano() -> None:
    case = {"cancer_type": "lymphoma", "lesions": [pet("N1", {D0: 5, D1: 4})]}
    assessment = case_response(case)
    assert assessment is not None
    assert assessment.criteria == "Lugano"
    assert assessment.to_plan()["max_deauville"] == 4


# --- input errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("score", [0, 6, 4.5, "4"])
def test_deauville_outside_1_to_5_is_refused(score: object) -> None:
    with pytest.raises(LesionInputError) as error:
        read(pet("N1", {D0: 5, D1: score}))  # type: ignore[dict-item]
    assert error.value.path == "$.lesions[0].measurements[1].deauville"
    assert "1-5" in error.value.message


def test_lesion_measured_in_two_units_is_refused() -> None:
    raw = lesion("L1", {D0: 20})
    raw["measurements"].append({"date": D1, "longest_diameter_cm": 2.5})
    with pytest.raises(LesionInputError) as error:
        read(raw)
    assert "millimetres" in error.value.message
    assert "cm" in error.value.message


def test_measurement_before_diagnosis_is_refused() -> None:
    case = {
        "diagnosis": {"date": "2026-02-01"},
        "lesions": [lesion("L1", {D0: 20, D1: 18})],
    }
    with pytest.raises(LesionInputError) as error:
        lesions_from_case(case)
    assert "before the diagnosis date 2026-02-01" in error.value.message
    assert error.value.path == "$.lesions[0].measurements[0].date"


def test_duplicate_lesion_ids_and_dates_are_refused() -> None:
    with pytest.raises(LesionInputError, match="used twice"):
        read(lesion("L1", {D0: 20}), lesion("L1", {D1: 20}))
    raw = lesion("L1", {D0: 20})
    raw["measurements"].append({"date": D0, "longest_diameter_mm": 21})
    with pytest.raises(LesionInputError, match="measured twice"):
        read(raw)


def test_old_file_imports_as_one_lesion() -> None:
    case = {"index_lesion": {"site": "liver segment VI", "size_mm": 28, "laterality": None}}
    lesions = lesions_from_case(case)
    assert len(lesions) == 1
    assert lesions[0].is_index
    assert lesions[0].measurements[0].longest_diameter_mm == 28
    assert case_response(case) is None


# --- oligoprogression -------------------------------------------------------------------------


def test_oligoprogression_one_growing_lesion_among_controlled_ones() -> None:
    lesions = read(
        lesion("L1", {D0: 20, D1: 18, D2: 18}),
        lesion("L2", {D0: 20, D1: 18, D2: 18}),
        lesion("L3", {D0: 15, D1: 15, D2: 15}),
        lesion("L4", {D2: 14}, target=False),
    )
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "PD"
    assert oligoprogression(result, lesions)


def test_widespread_progression_is_not_oligoprogression() -> None:
    lesions = read(*(lesion(f"L{i}", {D0: 20, D1: 30}) for i in range(1, 5)))
    result = recist(lesions)
    assert result is not None
    assert result.latest.category == "PD"
    assert not oligoprogression(result, lesions)


def test_lesions_without_target_flags_become_targets_at_baseline() -> None:
    raw = [lesion("L1", {D0: 20, D1: 30}), lesion("L2", {D1: 10})]
    for item in raw:
        del item["target"]
    lesions = read(*raw)
    assert [x.target for x in lesions] == [True, False]
    result = recist(lesions)
    assert result is not None
    assert result.baseline_sum_mm == 20
    assert result.latest.new_lesions == ("L2",)


def test_explicit_target_flags_are_kept() -> None:
    lesions = read(lesion("L1", {D0: 20, D1: 30}), lesion("L2", {D0: 10, D1: 10}, target=False))
    assert [x.target for x in lesions] == [True, False]


def _neoadjuvant_case(therapies: list[dict[str, Any]], last_mm: float) -> dict[str, Any]:
    return {
        "cancer_type": "breast",
        "diagnosis": {"prior_therapies": therapies},
        "lesions": [lesion("L1", {"2026-02-01": 40, "2026-04-01": 25, "2026-06-25": last_mm})],
    }


def test_residual_after_neoadjuvant_needs_the_operation_that_followed() -> None:
    course = {"regimen": "TCHP x6", "intent": "neoadjuvant", "start_date": "2026-02-10"}
    operation = {"regimen": "mastectomy", "kind": "operation", "start_date": "2026-07-10"}
    # given disease left on the pre-operative scan, then the operation
    assert residual_after_neoadjuvant(_neoadjuvant_case([course, operation], 12)) is True
    # an imaging complete response is not residual disease on imaging
    assert residual_after_neoadjuvant(_neoadjuvant_case([course, operation], 0)) is False
    # no operation yet: the next step is surgery, not an adjuvant choice
    assert residual_after_neoadjuvant(_neoadjuvant_case([course], 12)) is None
    # the operation written into the course's regimen counts
    written = {**course, "regimen": "TCHP x6, then breast-conserving surgery"}
    assert residual_after_neoadjuvant(_neoadjuvant_case([written], 12)) is True
