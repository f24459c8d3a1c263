"""Unit tests for the pure-Python clinical calculators in clinical.calculators."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clinical.calculators import (
    STAGING_KEYS,
    CalcResult,
    albi_grade,
    albi_grade_for,
    albi_linear_predictor,
    albi_score,
    ann_arbor_stage,
    bclc_stage,
    breast_stage_group,
    breast_subtype,
    child_pugh_class,
    child_pugh_class_for,
    child_pugh_score,
    ckd_epi_2021,
    cns_ipi,
    crcl_cockcroft_gault,
    derive_all,
    egfr_ckd_epi_2021,
    ipi,
    lung_stage_group,
    parse_ann_arbor,
    staging_summary,
    tnm_stage,
)
from tests.paths import PUBLIC_CASES

# --- case builders ------------------------------------------------------------------------------


def make_case(cancer_type: str | None = None, **sections: dict[str, Any]) -> dict[str, Any]:
    """A minimal mdtboard.case/1 dict; unspecified sections are simply absent."""
    case: dict[str, Any] = {"format": "mdtboard.case/1", "case_id": "t", "cancer_type": cancer_type}
    case.update(sections)
    return case


def liver_case(
    bili: float | None = 0.9,
    alb: float | None = 4.1,
    inr: float | None = 1.1,
    ascites: str | None = "none",
    he: str | None = "none",
    ecog: int | None = 0,
    nodules: int | None = 1,
    largest_mm: float | None = 28,
    mvi: bool | None = False,
    ehs: bool | None = False,
) -> dict[str, Any]:
    return make_case(
        "hcc",
        patient={"age_years": 58, "sex": "male", "ecog": ecog, "weight_kg": 74},
        labs={"bilirubin_mg_dl": bili, "albumin_g_dl": alb, "inr": inr},
        organ_function={"ascites": ascites, "encephalopathy": he},
        staging={
            "nodules_count": nodules,
            "largest_nodule_mm": largest_mm,
            "macrovascular_invasion": mvi,
            "extrahepatic_spread": ehs,
        },
    )


def tnm_case(
    cancer_type: str, t: str | None, n: str | None, m: str | None, edition: int | None = 8
) -> dict[str, Any]:
    return make_case(cancer_type, staging={"t": t, "n": n, "m": m, "tnm_edition": edition})


def lymphoma_case(
    age: float | None = 64,
    ldh: float | None = 410,
    uln: float | None = 250,
    ecog: int | None = 1,
    stage: str | None = "IV",
    extranodal: int | None = 2,
    kidney: bool | None = False,
    b_symptoms: bool | None = True,
    bulky: bool | None = False,
) -> dict[str, Any]:
    return make_case(
        "lymphoma",
        patient={"age_years": age, "sex": "male", "ecog": ecog},
        biomarkers={"ldh_u_l": ldh, "ldh_uln_u_l": uln},
        staging={
            "ann_arbor_stage": stage,
            "extranodal_sites_count": extranodal,
            "kidney_or_adrenal_involvement": kidney,
            "b_symptoms": b_symptoms,
            "bulky_disease": bulky,
        },
    )


def renal_case(
    scr: float | None, age: float | None, sex: str | None, weight: float | None = 72
) -> dict[str, Any]:
    return make_case(
        "other",
        patient={"age_years": age, "sex": sex, "weight_kg": weight},
        labs={"creatinine_mg_dl": scr},
    )


def breast_markers(er: float | None, pr: float | None, her2: str | None) -> dict[str, Any]:
    return make_case("breast", biomarkers={"er_pct": er, "pr_pct": pr, "her2": her2})


# --- CalcResult contract ------------------------------------------------------------------------


def test_calcresult_is_frozen_and_cites_a_source() -> None:
    # given a complete liver case
    case = liver_case()
    # when Child-Pugh is computed
    result = child_pugh_score(case)
    # then the result is immutable, cites Pugh 1973 and records the inputs it used
    assert isinstance(result, CalcResult)
    with pytest.raises(AttributeError):
        result.value = 7  # type: ignore[misc]
    assert "Pugh" in result.source
    assert "1973" in result.source
    assert result.inputs_used["labs.albumin_g_dl"] == 4.1
    assert result.inputs_missing == []
    assert result.to_dict()["value"] == 5


# --- Child-Pugh ---------------------------------------------------------------------------------


def test_child_pugh_worked_example_class_a() -> None:
    # given bilirubin 0.9 (<2: 1), albumin 4.1 (>3.5: 1), INR 1.1 (<1.7: 1), no ascites (1),
    # no encephalopathy (1) -- the pub-hcc-01 values
    case = liver_case()
    # when
    score, klass = child_pugh_score(case), child_pugh_class(case)
    # then 1+1+1+1+1 = 5, class A
    assert score.value == 5
    assert klass.value == "A"


def test_child_pugh_worked_example_class_b() -> None:
    # given bilirubin 2.5 (2-3: 2), albumin 3.0 (2.8-3.5: 2), INR 1.8 (1.7-2.3: 2),
    # mild ascites (2), no encephalopathy (1)
    case = liver_case(bili=2.5, alb=3.0, inr=1.8, ascites="mild")
    # when
    score, klass = child_pugh_score(case), child_pugh_class(case)
    # then 2+2+2+2+1 = 9, class B (upper edge of 7-9)
    assert score.value == 9
    assert klass.value == "B"


def test_child_pugh_worked_example_maximum_class_c() -> None:
    # given every criterion in its worst band
    case = liver_case(bili=3.5, alb=2.5, inr=2.5, ascites="moderate_severe", he="grade_3_4")
    # when
    score, klass = child_pugh_score(case), child_pugh_class(case)
    # then 3 x 5 = 15, class C
    assert score.value == 15
    assert klass.value == "C"


@pytest.mark.parametrize(
    ("bili", "alb", "inr", "expected"),
    [
        (2.0, 4.1, 1.1, 6),  # bilirubin exactly 2 is in the 2-3 band
        (3.0, 4.1, 1.1, 6),  # bilirubin exactly 3 is still in the 2-3 band
        (3.01, 4.1, 1.1, 7),
        (0.9, 3.5, 1.1, 6),  # albumin exactly 3.5 is in the 2.8-3.5 band
        (0.9, 2.8, 1.1, 6),  # albumin exactly 2.8 is still in the 2.8-3.5 band
        (0.9, 2.79, 1.1, 7),
        (0.9, 4.1, 1.7, 6),  # INR exactly 1.7 is in the 1.7-2.3 band
        (0.9, 4.1, 2.3, 6),
        (0.9, 4.1, 2.31, 7),
    ],
)
def test_child_pugh_band_edges(bili: float, alb: float, inr: float, expected: int) -> None:
    # given a case at a lab band edge (other criteria at 1 point each)
    case = liver_case(bili=bili, alb=alb, inr=inr)
    # when
    result = child_pugh_score(case)
    # then the edge value falls in the middle band
    assert result.value == expected


def test_child_pugh_missing_inr_returns_none_and_names_path() -> None:
    # given an INR that is not available
    case = liver_case(inr=None)
    # when
    score, klass = child_pugh_score(case), child_pugh_class(case)
    # then no score is guessed and the path is named
    assert score.value is None
    assert klass.value is None
    assert score.inputs_missing == ["labs.inr"]
    assert klass.inputs_missing == ["labs.inr"]


def test_child_pugh_absent_sections_list_every_path() -> None:
    # given a case with no labs or organ_function sections at all
    case = make_case("hcc")
    # when
    result = child_pugh_score(case)
    # then all five inputs are reported missing
    assert result.value is None
    assert sorted(result.inputs_missing) == sorted(
        [
            "labs.bilirubin_mg_dl",
            "labs.albumin_g_dl",
            "labs.inr",
            "organ_function.ascites",
            "organ_function.encephalopathy",
        ]
    )


def test_child_pugh_rejects_albumin_in_wrong_unit() -> None:
    # given albumin 41 written into the g/dL field (it is g/L)
    case = liver_case(alb=41)
    # when
    result = child_pugh_score(case)
    # then it is treated as unusable rather than scored as normal
    assert result.value is None
    assert "labs.albumin_g_dl" in result.inputs_missing
    assert "plausible range" in result.detail


def test_child_pugh_rejects_unknown_ascites_grade() -> None:
    # given an ascites value outside the enumeration
    case = liver_case(ascites="massive")
    # when
    result = child_pugh_score(case)
    # then
    assert result.value is None
    assert result.inputs_missing == ["organ_function.ascites"]


@pytest.mark.parametrize(
    ("score", "klass"), [(5, "A"), (6, "A"), (7, "B"), (9, "B"), (10, "C"), (15, "C")]
)
def test_child_pugh_class_boundaries(score: int, klass: str) -> None:
    # given / when / then: A 5-6, B 7-9, C 10-15
    assert child_pugh_class_for(score) == klass


def test_child_pugh_class_rejects_impossible_score() -> None:
    # given a score outside 5-15 / when classified / then it is an error, not a class
    with pytest.raises(ValueError, match="5-15"):
        child_pugh_class_for(4)


_BILI = st.floats(min_value=0.1, max_value=20, allow_nan=False)
_ALB = st.floats(min_value=1.0, max_value=6.0, allow_nan=False)
_INR = st.floats(min_value=0.8, max_value=6.0, allow_nan=False)
_ASC = st.sampled_from(["none", "mild", "moderate_severe"])
_HE = st.sampled_from(["none", "grade_1_2", "grade_3_4"])


@given(bili=_BILI, alb=_ALB, inr=_INR, ascites=_ASC, he=_HE)
def test_child_pugh_class_matches_score_boundaries(
    bili: float, alb: float, inr: float, ascites: str, he: str
) -> None:
    # given any complete set of valid inputs
    case = liver_case(bili=bili, alb=alb, inr=inr, ascites=ascites, he=he)
    # when
    score = child_pugh_score(case).value
    klass = child_pugh_class(case).value
    # then the class follows the 6/7 and 9/10 cut-offs
    assert isinstance(score, int)
    assert 5 <= score <= 15
    assert klass == ("A" if score <= 6 else "B" if score <= 9 else "C")


@given(
    bili=_BILI,
    alb=_ALB,
    inr=_INR,
    ascites=_ASC,
    he=_HE,
    d_bili=st.floats(min_value=0, max_value=10),
    d_alb=st.floats(min_value=0, max_value=0.9),
    d_inr=st.floats(min_value=0, max_value=3),
)
def test_child_pugh_score_monotone_in_each_input(
    bili: float,
    alb: float,
    inr: float,
    ascites: str,
    he: str,
    d_bili: float,
    d_alb: float,
    d_inr: float,
) -> None:
    # given a baseline case and one input made more severe at a time
    base = child_pugh_score(liver_case(bili, alb, inr, ascites, he)).value
    worse_asc = {"none": "mild", "mild": "moderate_severe"}.get(ascites, ascites)
    worse_he = {"none": "grade_1_2", "grade_1_2": "grade_3_4"}.get(he, he)
    variants = [
        liver_case(bili + d_bili, alb, inr, ascites, he),
        liver_case(bili, alb - d_alb, inr, ascites, he),  # lower albumin is worse
        liver_case(bili, alb, inr + d_inr, ascites, he),
        liver_case(bili, alb, inr, worse_asc, he),
        liver_case(bili, alb, inr, ascites, worse_he),
    ]
    # when
    scores = [child_pugh_score(v).value for v in variants]
    # then no worsening lowers the score
    assert isinstance(base, int)
    for s in scores:
        assert isinstance(s, int)
        assert s >= base


# --- ALBI ---------------------------------------------------------------------------------------


def test_albi_worked_example_grade_1() -> None:
    # given bilirubin 0.9 mg/dL (x17.1 = 15.39 umol/L) and albumin 4.1 g/dL (41 g/L)
    case = liver_case(bili=0.9, alb=4.1)
    # when
    score, grade = albi_score(case), albi_grade(case)
    # then 0.66*log10(15.39) - 0.085*41 = 0.66*1.18724 - 3.485 = -2.7014 -> -2.70, grade 1
    assert score.value == -2.70
    assert grade.value == 1
    assert "Johnson" in score.source
    assert "2015" in score.source


def test_albi_worked_example_grade_2() -> None:
    # given bilirubin 1.4 mg/dL (23.94 umol/L), albumin 3.2 g/dL (32 g/L)
    case = liver_case(bili=1.4, alb=3.2)
    # when
    score, grade = albi_score(case), albi_grade(case)
    # then 0.66*1.37912 - 2.72 = -1.8098 -> -1.81, grade 2
    assert score.value == -1.81
    assert grade.value == 2


def test_albi_worked_example_grade_3() -> None:
    # given bilirubin 3.0 mg/dL (51.3 umol/L), albumin 2.5 g/dL (25 g/L)
    case = liver_case(bili=3.0, alb=2.5)
    # when
    score, grade = albi_score(case), albi_grade(case)
    # then 0.66*1.71012 - 2.125 = -0.9963 -> -1.00, grade 3
    assert score.value == -1.00
    assert grade.value == 3


def test_albi_grade_uses_unrounded_score() -> None:
    # given bilirubin 0.96 mg/dL, albumin 4.0 g/dL: 0.66*log10(16.416) - 3.4 = -2.5979
    case = liver_case(bili=0.96, alb=4.0)
    # when
    score, grade = albi_score(case), albi_grade(case)
    # then the displayed score rounds to -2.60 but the grade is 2 (-2.5979 > -2.60)
    assert score.value == -2.60
    assert grade.value == 2


def test_albi_missing_albumin_returns_none() -> None:
    # given no albumin
    case = liver_case(alb=None)
    # when
    score, grade = albi_score(case), albi_grade(case)
    # then
    assert score.value is None
    assert grade.value is None
    assert grade.inputs_missing == ["labs.albumin_g_dl"]


def test_albi_grade_exact_boundaries() -> None:
    # given scores exactly on and just above each cut-point
    # when / then: <= -2.60 is grade 1, <= -1.39 is grade 2, above is grade 3
    assert albi_grade_for(-2.60) == 1
    assert albi_grade_for(math.nextafter(-2.60, 0.0)) == 2
    assert albi_grade_for(-1.39) == 2
    assert albi_grade_for(math.nextafter(-1.39, 0.0)) == 3


@given(st.floats(min_value=-6.0, max_value=2.0, allow_nan=False))
def test_albi_grade_boundaries_property(score: float) -> None:
    # given any score / when graded / then the grade follows the -2.60 / -1.39 cut-points
    grade = albi_grade_for(score)
    if score <= -2.60:
        assert grade == 1
    elif score <= -1.39:
        assert grade == 2
    else:
        assert grade == 3


@given(
    bili=st.floats(min_value=0.1, max_value=9.9),
    alb=_ALB,
    factor=st.floats(min_value=1.0, max_value=10.0),
)
def test_albi_higher_bilirubin_never_lowers_score(bili: float, alb: float, factor: float) -> None:
    # given the same albumin and a bilirubin at least as high
    # when / then the score (and grade) do not fall
    assert albi_linear_predictor(bili * factor, alb) >= albi_linear_predictor(bili, alb)
    assert albi_grade(liver_case(bili=bili * factor, alb=alb)).value >= (  # type: ignore[operator]
        albi_grade(liver_case(bili=bili, alb=alb)).value
    )


@given(bili=_BILI, alb=_ALB, delta=st.floats(min_value=0.0, max_value=3.0))
def test_albi_higher_albumin_never_raises_score(bili: float, alb: float, delta: float) -> None:
    # given the same bilirubin and an albumin at least as high
    # when / then the score does not rise
    assert albi_linear_predictor(bili, alb + delta) <= albi_linear_predictor(bili, alb)


# --- BCLC ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "stage"),
    [
        ({"nodules": 1, "largest_mm": 15}, "0"),  # single <= 2 cm, ECOG 0, CP A
        ({"nodules": 1, "largest_mm": 20}, "0"),  # 2 cm exactly is still very early
        ({"nodules": 1, "largest_mm": 28}, "A"),  # single, any size
        ({"nodules": 1, "largest_mm": 90}, "A"),
        ({"nodules": 3, "largest_mm": 30}, "A"),  # 2-3 nodules each <= 3 cm
        ({"nodules": 3, "largest_mm": 31}, "B"),  # beyond A
        ({"nodules": 4, "largest_mm": None}, "B"),  # >= 4 nodules: size not needed
        ({"mvi": True, "nodules": None, "largest_mm": None}, "C"),
        ({"ehs": True}, "C"),
        ({"ecog": 1}, "C"),
        ({"ecog": 2, "nodules": None, "largest_mm": None}, "C"),
        ({"ecog": 3, "bili": None}, "D"),  # ECOG > 2 is D whatever the liver data
        ({"bili": 3.5, "alb": 2.5, "inr": 2.5}, "D"),  # CP C (3+3+3+1+1 = 11)
    ],
)
def test_bclc_stage_table(kwargs: dict[str, Any], stage: str) -> None:
    # given a liver case varied from the pub-hcc-01 baseline (CP A 5, ECOG 0)
    case = liver_case(**kwargs)
    # when
    result = bclc_stage(case)
    # then
    assert result.value == stage, result.detail
    assert result.inputs_missing == []
    assert "Reig" in result.source
    assert "2022" in result.source


def test_bclc_compensated_child_pugh_b_is_preserved() -> None:
    # given Child-Pugh B7 (bilirubin 2.5: 2, albumin 3.2: 2) with no ascites or encephalopathy
    case = liver_case(bili=2.5, alb=3.2, nodules=4)
    # when
    result = bclc_stage(case)
    # then liver function counts as preserved and the tumour burden decides (B)
    assert result.value == "B"
    assert "Child-Pugh B (7) compensated" in result.detail


def test_bclc_decompensated_child_pugh_b_is_stage_d() -> None:
    # given Child-Pugh B8 because of mild ascites (bilirubin 2 + albumin 2 + INR 1 + ascites 2
    # + encephalopathy 1 = 8)
    case = liver_case(bili=2.5, alb=3.2, ascites="mild")
    # when
    result = bclc_stage(case)
    # then BCLC 2022 end-stage liver function: D, with the transplant caveat in the detail
    assert result.value == "D"
    assert result.inputs_missing == []
    assert "decompensated" in result.detail
    assert "transplant" in result.detail


@pytest.mark.parametrize(
    ("bili", "alb", "score"),
    [
        (1.0, 4.0, 6),  # Child-Pugh A6 only because of the ascites
        (1.0, 3.2, 7),  # Child-Pugh B7 with mild ascites
    ],
)
def test_bclc_mild_ascites_is_stage_d_with_the_reason(bili: float, alb: float, score: int) -> None:
    # given mild ascites with otherwise good liver tests, ECOG 0 and a single 28 mm nodule
    # (BCLC A by tumour burden alone)
    case = liver_case(bili=bili, alb=alb, ascites="mild")
    assert child_pugh_score(case).value == score
    # when
    result = bclc_stage(case)
    # then BCLC 2022 counts liver function as preserved only without any ascites: stage D,
    # transplant if within criteria, and the detail says why
    assert result.value == "D"
    assert "not preserved" in result.detail
    assert "without any ascites" in result.detail
    assert "transplant" in result.detail


def test_bclc_missing_tumour_data_at_ecog_0_names_paths() -> None:
    # given ECOG 0, CP A, no invasion, but nodule count not available
    case = liver_case(nodules=None)
    # when
    result = bclc_stage(case)
    # then
    assert result.value is None
    assert result.inputs_missing == ["staging.nodules_count"]


def test_bclc_missing_ecog_names_path() -> None:
    # given no ECOG (cannot separate A from C)
    case = liver_case(ecog=None)
    # when
    result = bclc_stage(case)
    # then
    assert result.value is None
    assert result.inputs_missing == ["patient.ecog"]


def test_bclc_missing_liver_data_names_child_pugh_paths() -> None:
    # given ECOG 0 and a single 28 mm nodule but no albumin
    case = liver_case(alb=None)
    # when
    result = bclc_stage(case)
    # then liver function cannot be judged
    assert result.value is None
    assert result.inputs_missing == ["labs.albumin_g_dl"]


# --- AJCC 8 lung --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "n", "m", "stage"),
    [
        ("Tis", "N0", "M0", "0"),
        ("T1mi", "N0", "M0", "IA1"),
        ("T1a", "N0", "M0", "IA1"),
        ("T1b", "N0", "M0", "IA2"),
        ("T1c", "N0", "M0", "IA3"),
        ("T2a", "N0", "M0", "IB"),
        ("T2b", "N0", "M0", "IIA"),
        ("T1c", "N1", "M0", "IIB"),
        ("T2a", "N1", "M0", "IIB"),
        ("T3", "N0", "M0", "IIB"),
        ("T2b", "N2", "M0", "IIIA"),
        ("T3", "N1", "M0", "IIIA"),
        ("T4", "N0", "M0", "IIIA"),
        ("T4", "N1", "M0", "IIIA"),
        ("T1a", "N3", "M0", "IIIB"),
        ("T3", "N2", "M0", "IIIB"),
        ("T4", "N2", "M0", "IIIB"),
        ("T3", "N3", "M0", "IIIC"),
        ("T4", "N3", "M0", "IIIC"),
        ("T1a", "N0", "M1a", "IVA"),
        ("T4", "N3", "M1b", "IVA"),
        ("T1a", "N0", "M1c", "IVB"),
    ],
)
def test_lung_stage_table(t: str, n: str, m: str, stage: str) -> None:
    # given concrete AJCC 8 categories / when staged / then the chapter-36 stage group
    result = tnm_stage(tnm_case("lung_adenocarcinoma", t, n, m))
    assert result.value == stage
    assert lung_stage_group(t, n, m) == stage


def test_lung_generic_t1_when_group_does_not_depend_on_sub_letter() -> None:
    # given T1 without a/b/c but N2 (T1a/b/c N2 are all IIIA)
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T1", "N2", "M0"))
    # then
    assert result.value == "IIIA"


def test_lung_generic_t1_n0_needs_sub_letter() -> None:
    # given T1 N0 M0 (IA1, IA2 or IA3 depending on size)
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T1", "N0", "M0"))
    # then not derivable, and the T category is named
    assert result.value is None
    assert result.inputs_missing == ["staging.t"]
    assert "IA1" in result.detail
    assert "IA3" in result.detail


def test_lung_generic_m1_is_ambiguous() -> None:
    # given M1 without a/b/c (IVA or IVB)
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T2a", "N0", "M1"))
    # then
    assert result.value is None
    assert result.inputs_missing == ["staging.m"]


def test_lung_tx_n0_m0_is_not_derivable() -> None:
    # given TX (cannot be assessed)
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "TX", "N0", "M0"))
    # then missing-equivalent
    assert result.value is None
    assert result.inputs_missing == ["staging.t"]
    assert "occult" in result.detail


def test_lung_m1c_is_ivb_whatever_t_and_n() -> None:
    # given T and N not available but M1c
    result = tnm_stage(tnm_case("lung_adenocarcinoma", None, "NX", "M1c"))
    # then any T any N M1c is IVB
    assert result.value == "IVB"
    assert result.inputs_missing == []


def test_lung_missing_m_is_not_derivable() -> None:
    # given T2a N0 with M not available
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T2a", "N0", None))
    # then
    assert result.value is None
    assert result.inputs_missing == ["staging.m"]


def test_lung_accepts_prefixes_and_case() -> None:
    # given clinical/pathological prefixes and odd capitalisation
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "cT2A", "pn1", "cM0"))
    # then T2a N1 M0 = IIB
    assert result.value == "IIB"


def test_lung_invalid_code_returns_none_with_detail() -> None:
    # given a T category that does not exist
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T5", "N0", "M0"))
    # then
    assert result.value is None
    assert "T5" in result.detail


def test_lung_t1mi_with_nodes_has_no_group() -> None:
    # given T1mi N1 (not a cell of the stage table)
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T1mi", "N1", "M0"))
    # then
    assert result.value is None
    assert "no AJCC 8 stage group" in result.detail


def test_tnm_other_edition_is_refused() -> None:
    # given a 7th-edition staging
    result = tnm_stage(tnm_case("lung_adenocarcinoma", "T2a", "N0", "M0", edition=7))
    # then
    assert result.value is None
    assert "8th" in result.detail


# --- AJCC 8 breast ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "n", "m", "stage"),
    [
        ("Tis", "N0", "M0", "0"),
        ("T1", "N0", "M0", "IA"),
        ("T1mi", "N0", "M0", "IA"),
        ("T1c", "N0", "M0", "IA"),
        ("T0", "N1mi", "M0", "IB"),
        ("T1b", "N1mi", "M0", "IB"),
        ("T0", "N1", "M0", "IIA"),
        ("T1", "N1a", "M0", "IIA"),
        ("T2", "N0", "M0", "IIA"),
        ("T2", "N1", "M0", "IIB"),
        ("T2", "N1mi", "M0", "IIB"),
        ("T3", "N0", "M0", "IIB"),
        ("T0", "N2", "M0", "IIIA"),
        ("T2", "N2a", "M0", "IIIA"),
        ("T3", "N1", "M0", "IIIA"),
        ("T3", "N2b", "M0", "IIIA"),
        ("T4b", "N0", "M0", "IIIB"),
        ("T4d", "N2", "M0", "IIIB"),
        ("T4", "N1", "M0", "IIIB"),
        ("T1", "N3", "M0", "IIIC"),
        ("T4a", "N3c", "M0", "IIIC"),
        ("T2", "N1", "M1", "IV"),
        ("T1", "N0(i+)", "M0", "IA"),
    ],
)
def test_breast_stage_table(t: str, n: str, m: str, stage: str) -> None:
    # given AJCC 8 categories (sub-letters accepted) / when staged / then chapter-48 anatomic group
    result = tnm_stage(tnm_case("breast", t, n, m))
    assert result.value == stage, result.detail


def test_breast_stage_group_function_uses_folded_categories() -> None:
    # given folded categories / when / then
    assert breast_stage_group("T2", "N1", "M0") == "IIB"
    assert breast_stage_group("T0", "N0", "M0") is None


def test_breast_tx_with_n3_is_iiic() -> None:
    # given T not assessable but N3 M0 (any T N3 M0 is IIIC)
    result = tnm_stage(tnm_case("breast", "TX", "N3", "M0"))
    # then
    assert result.value == "IIIC"


def test_breast_nx_is_not_derivable() -> None:
    # given NX
    result = tnm_stage(tnm_case("breast", "T2", "NX", "M0"))
    # then missing-equivalent
    assert result.value is None
    assert result.inputs_missing == ["staging.n"]


def test_breast_t0_n0_has_no_group() -> None:
    # given T0 N0 M0 (no primary, no nodes)
    result = tnm_stage(tnm_case("breast", "T0", "N0", "M0"))
    # then
    assert result.value is None
    assert result.inputs_missing == []


def test_breast_lung_codes_are_invalid() -> None:
    # given a lung-only category in a breast case
    result = tnm_stage(tnm_case("breast", "T2a", "N0", "M0"))
    # then
    assert result.value is None
    assert "T2a" in result.detail


def test_tnm_for_lymphoma_is_not_derived() -> None:
    # given a cancer type without an implemented stage table
    result = tnm_stage(make_case("lymphoma", staging={"t": "T2"}))
    # then
    assert result.value is None


# --- breast subtype -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("er", "pr", "her2", "subtype"),
    [
        (0, 0, "3+", "HER2+"),
        (95, 60, "2+_ish_positive", "HER2+"),
        (None, None, "3+", "HER2+"),  # HR status not needed for the HER2+ label
        (95, 60, "1+", "HR+/HER2-"),
        (1, 0, "0", "HR+/HER2-"),  # 1% is positive (ASCO/CAP 2020)
        (0, 5, "2+_ish_negative", "HR+/HER2-"),
        (50, None, "0", "HR+/HER2-"),  # ER alone settles HR+
        (0, 0, "0", "TNBC"),
        (0.5, 0, "1+", "TNBC"),  # < 1% is negative
    ],
)
def test_breast_subtype_table(er: float | None, pr: float | None, her2: str, subtype: str) -> None:
    # given receptor results / when classified / then ASCO/CAP surrogate subtype
    result = breast_subtype(breast_markers(er, pr, her2))
    assert result.value == subtype
    assert result.inputs_missing == []


def test_breast_subtype_er_low_note() -> None:
    # given ER 5% (low positive)
    result = breast_subtype(breast_markers(5, 0, "0"))
    # then HR+/HER2- with a caveat
    assert result.value == "HR+/HER2-"
    assert "ER low positive" in result.detail


def test_breast_subtype_equivocal_her2_needs_ish() -> None:
    # given HER2 IHC 2+ without an ISH result
    result = breast_subtype(breast_markers(0, 0, "2+"))
    # then
    assert result.value is None
    assert "biomarkers.her2" in result.inputs_missing
    assert "ISH" in result.detail


def test_breast_subtype_tnbc_needs_both_receptors() -> None:
    # given HER2 0 and ER 0 but PR not available
    result = breast_subtype(breast_markers(0, None, "0"))
    # then TNBC cannot be called
    assert result.value is None
    assert result.inputs_missing == ["biomarkers.pr_pct"]


def test_breast_subtype_missing_her2() -> None:
    # given no HER2
    result = breast_subtype(breast_markers(90, 80, None))
    # then
    assert result.value is None
    assert result.inputs_missing == ["biomarkers.her2"]


# --- Ann Arbor ----------------------------------------------------------------------------------


def test_ann_arbor_bare_stage_with_suffixes_in_detail() -> None:
    # given stage IV with B symptoms
    result = ann_arbor_stage(lymphoma_case(stage="IV", b_symptoms=True))
    # then the value is bare, the designation is IVB
    assert result.value == "IV"
    assert "designation IVB" in result.detail


def test_ann_arbor_a_suffix_and_bulk() -> None:
    # given stage II without B symptoms, bulky
    result = ann_arbor_stage(lymphoma_case(stage="II", b_symptoms=False, bulky=True))
    # then
    assert result.value == "II"
    assert "designation IIAX" in result.detail


@pytest.mark.parametrize(
    ("raw", "stage"), [("IIIB", "III"), ("Stage II-E", "II"), ("iv", "IV"), ("1", "I")]
)
def test_ann_arbor_parses_written_variants(raw: str, stage: str) -> None:
    # given common spellings / when parsed / then the bare stage
    parsed = parse_ann_arbor(raw)
    assert parsed is not None
    assert parsed.stage == stage


def test_ann_arbor_invalid_stage() -> None:
    # given "V" (no such stage)
    result = ann_arbor_stage(lymphoma_case(stage="V"))
    # then
    assert result.value is None
    assert result.inputs_missing == ["staging.ann_arbor_stage"]


def test_ann_arbor_flags_marrow_inconsistency() -> None:
    # given marrow involvement recorded with stage II
    case = lymphoma_case(stage="II")
    case["staging"]["bone_marrow_involvement"] = True
    # when
    result = ann_arbor_stage(case)
    # then the recorded stage is kept but flagged
    assert result.value == "II"
    assert "bone marrow" in result.detail


# --- IPI / CNS-IPI ------------------------------------------------------------------------------


def test_ipi_worked_example() -> None:
    # given age 64 (>60: 1), LDH 410 > ULN 250 (1), ECOG 1 (0), stage IV (1), 2 extranodal (1)
    case = lymphoma_case()
    # when
    result = ipi(case)
    # then 4 = high risk
    assert result.value == 4
    assert "high risk" in result.detail
    assert "1993" in result.source


def test_ipi_thresholds_are_strict() -> None:
    # given age exactly 60, LDH equal to ULN, ECOG 1, stage II, one extranodal site
    case = lymphoma_case(age=60, ldh=250, uln=250, ecog=1, stage="II", extranodal=1)
    # when
    result = ipi(case)
    # then no factor is present
    assert result.value == 0
    assert "low risk" in result.detail


def test_ipi_ecog_2_counts() -> None:
    # given only ECOG 2 abnormal
    case = lymphoma_case(age=50, ldh=100, ecog=2, stage="I", extranodal=0)
    # when / then
    assert ipi(case).value == 1


def test_cns_ipi_adds_kidney_adrenal() -> None:
    # given the IPI-4 case with kidney involvement
    case = lymphoma_case(kidney=True)
    # when
    result = cns_ipi(case)
    # then 4 + 1 = 5, high risk (4-6)
    assert result.value == 5
    assert "high risk" in result.detail
    assert "Schmitz" in result.source


def test_cns_ipi_intermediate_group() -> None:
    # given age > 60 and stage III only, no kidney involvement
    case = lymphoma_case(age=72, ldh=190, ecog=0, stage="III", extranodal=0, kidney=False)
    # when
    result = cns_ipi(case)
    # then 2 = intermediate (2-3)
    assert result.value == 2
    assert "intermediate risk" in result.detail


def test_ipi_missing_uln_returns_none() -> None:
    # given LDH without its upper limit of normal
    case = lymphoma_case(uln=None)
    # when
    result = ipi(case)
    # then
    assert result.value is None
    assert result.inputs_missing == ["biomarkers.ldh_uln_u_l"]


def test_cns_ipi_missing_kidney_returns_none() -> None:
    # given kidney/adrenal involvement not available
    case = lymphoma_case(kidney=None)
    # when
    result = cns_ipi(case)
    # then IPI is still derivable but CNS-IPI is not
    assert ipi(case).value == 4
    assert result.value is None
    assert result.inputs_missing == ["staging.kidney_or_adrenal_involvement"]


@given(
    age=st.integers(min_value=18, max_value=100),
    ldh=st.integers(min_value=50, max_value=2000),
    ecog=st.integers(min_value=0, max_value=4),
    stage=st.sampled_from(["I", "II", "III", "IV"]),
    extranodal=st.integers(min_value=0, max_value=6),
    kidney=st.booleans(),
)
def test_ipi_range_property(
    age: int, ldh: int, ecog: int, stage: str, extranodal: int, kidney: bool
) -> None:
    # given any complete lymphoma case
    case = lymphoma_case(age, ldh, 250, ecog, stage, extranodal, kidney)
    # when
    i, c = ipi(case).value, cns_ipi(case).value
    # then IPI is 0-5 and CNS-IPI is IPI plus the kidney/adrenal point
    assert isinstance(i, int)
    assert 0 <= i <= 5
    assert c == i + int(kidney)


_IPI_PATHS = [
    "patient.age_years",
    "biomarkers.ldh_u_l",
    "biomarkers.ldh_uln_u_l",
    "patient.ecog",
    "staging.ann_arbor_stage",
    "staging.extranodal_sites_count",
]


@given(path=st.sampled_from(_IPI_PATHS))
def test_ipi_any_missing_factor_returns_none(path: str) -> None:
    # given a complete case with one required input set to null
    case = lymphoma_case()
    section, key = path.split(".")
    case[section][key] = None
    # when
    result = ipi(case)
    # then
    assert result.value is None
    assert result.inputs_missing == [path]


# --- eGFR (CKD-EPI 2021) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scr", "age", "sex", "expected"),
    [
        # Female 50 y, Scr 0.7 = kappa: both ratio terms are 1, so
        # 142 x 0.9938^50 (0.73277) x 1.012 = 105.30 -> 105.
        (0.7, 50, "female", 105),
        # Male 60 y, Scr 1.0: ratio 1.111 > 1 so 1.111^-1.200 = 0.88124;
        # 142 x 0.88124 x 0.9938^60 (0.68858) = 86.16 -> 86.
        (1.0, 60, "male", 86),
        # Female 70 y, Scr 0.5: ratio 0.714 < 1 so 0.714^-0.241 = 1.08447;
        # 142 x 1.08447 x 0.9938^70 (0.64705) x 1.012 = 100.84 -> 101.
        (0.5, 70, "female", 101),
        # Male 70 y, Scr 2.0: 2.222^-1.200 = 0.38357; 142 x 0.38357 x 0.64705 = 35.24 -> 35.
        (2.0, 70, "male", 35),
    ],
)
def test_egfr_worked_examples(scr: float, age: int, sex: str, expected: int) -> None:
    # given / when
    result = egfr_ckd_epi_2021(renal_case(scr, age, sex))
    # then
    assert result.value == expected
    assert "Inker" in result.source
    assert "2021" in result.source


def test_egfr_sex_other_is_not_computed() -> None:
    # given sex "other"
    result = egfr_ckd_epi_2021(renal_case(0.9, 50, "other"))
    # then no value, no missing input, and the reason is explained
    assert result.value is None
    assert result.inputs_missing == []
    assert "female or male" in result.detail


def test_egfr_missing_creatinine() -> None:
    # given no creatinine
    result = egfr_ckd_epi_2021(renal_case(None, 50, "male"))
    # then
    assert result.value is None
    assert result.inputs_missing == ["labs.creatinine_mg_dl"]


def test_egfr_refuses_children() -> None:
    # given a 12-year-old
    result = egfr_ckd_epi_2021(renal_case(0.5, 12, "male"))
    # then
    assert result.value is None
    assert "adults" in result.detail


@given(
    # Kept within the calculator's plausibility bound (creatinine <= 30 mg/dL).
    scr=st.floats(min_value=0.2, max_value=5.9),
    factor=st.floats(min_value=1.001, max_value=5.0),
    age=st.integers(min_value=18, max_value=100),
    female=st.booleans(),
)
def test_egfr_decreases_with_creatinine(scr: float, factor: float, age: int, female: bool) -> None:
    # given a higher creatinine, same age and sex
    # when / then eGFR is strictly lower (and the rounded value never higher)
    assert ckd_epi_2021(scr * factor, age, female) < ckd_epi_2021(scr, age, female)
    sex = "female" if female else "male"
    low = egfr_ckd_epi_2021(renal_case(scr, age, sex)).value
    high = egfr_ckd_epi_2021(renal_case(scr * factor, age, sex)).value
    assert isinstance(low, int)
    assert isinstance(high, int)
    assert high <= low


@given(
    scr=st.floats(min_value=0.2, max_value=15.0),
    age=st.integers(min_value=18, max_value=99),
    older=st.integers(min_value=1, max_value=20),
    female=st.booleans(),
)
def test_egfr_decreases_with_age(scr: float, age: int, older: int, female: bool) -> None:
    # given an older patient with the same creatinine / when / then eGFR is lower
    assert ckd_epi_2021(scr, age + older, female) < ckd_epi_2021(scr, age, female)


# --- Cockcroft-Gault ----------------------------------------------------------------------------


def test_crcl_worked_example_male() -> None:
    # given 60 y, 72 kg, Scr 1.0 mg/dL, male: (140-60) x 72 / (72 x 1.0) = 80
    result = crcl_cockcroft_gault(renal_case(1.0, 60, "male", weight=72))
    # then
    assert result.value == 80
    assert "actual body weight" in result.detail
    assert "Cockcroft" in result.source
    assert "1976" in result.source


def test_crcl_worked_example_female() -> None:
    # given the same values for a woman: 80 x 0.85 = 68
    result = crcl_cockcroft_gault(renal_case(1.0, 60, "female", weight=72))
    # then
    assert result.value == 68


def test_crcl_missing_weight() -> None:
    # given no weight
    result = crcl_cockcroft_gault(renal_case(1.0, 60, "male", weight=None))
    # then
    assert result.value is None
    assert result.inputs_missing == ["patient.weight_kg"]


def test_crcl_sex_other_is_not_computed() -> None:
    # given sex "other"
    result = crcl_cockcroft_gault(renal_case(1.0, 60, "other"))
    # then
    assert result.value is None
    assert "female or male" in result.detail


# --- missing inputs across calculators ----------------------------------------------------------

_REQUIRED = [
    (child_pugh_score, liver_case, "labs.bilirubin_mg_dl"),
    (child_pugh_score, liver_case, "organ_function.encephalopathy"),
    (albi_grade, liver_case, "labs.bilirubin_mg_dl"),
    (bclc_stage, liver_case, "staging.largest_nodule_mm"),
    (bclc_stage, liver_case, "organ_function.ascites"),
    (cns_ipi, lymphoma_case, "staging.kidney_or_adrenal_involvement"),
    (ipi, lymphoma_case, "patient.age_years"),
    (ann_arbor_stage, lymphoma_case, "staging.ann_arbor_stage"),
]


@given(entry=st.sampled_from(_REQUIRED), absent_section=st.booleans())
def test_missing_required_input_returns_none_and_names_path(
    entry: tuple[Any, Any, str], absent_section: bool
) -> None:
    # given a complete case with one required input null (or its whole section removed)
    calc, builder, path = entry
    case = builder()
    section, key = path.split(".")
    if absent_section:
        case[section] = None
    else:
        case[section][key] = None
    # when
    result = calc(case)
    # then nothing is guessed and the path is named; with a whole section gone the stepwise
    # calculators (BCLC) stop at the first unavailable input of that section
    assert result.value is None
    if absent_section:
        assert any(p.startswith(f"{section}.") for p in result.inputs_missing)
    else:
        assert path in result.inputs_missing


# --- derive_all / staging_summary ---------------------------------------------------------------


def test_derive_all_runs_relevant_calculators_only() -> None:
    # given an HCC case
    results = derive_all(liver_case())
    # then liver calculators plus the common ones, nothing else
    assert set(results) == {
        "child_pugh_score",
        "child_pugh_class",
        "albi_score",
        "albi_grade",
        "bclc",
        "within_milan",
        "within_up_to_7",
        "within_ucsf",
        "tumour_burden_score",
        *COMMON_FACTS,
    }


def test_staging_summary_has_every_key_with_none_when_not_derived() -> None:
    # given a lymphoma case
    summary = staging_summary(derive_all(lymphoma_case()))
    # then every plan key is present; non-lymphoma keys are None
    assert tuple(summary) == STAGING_KEYS
    assert summary["ann_arbor_stage"] == "IV"
    assert summary["ipi"] == 4
    assert summary["child_pugh_class"] is None
    assert summary["tnm_stage"] is None


COMMON_FACTS = {
    "egfr_ckd_epi_2021",
    "crcl_cockcroft_gault",
    "carboplatin_auc5_mg",
    "carboplatin_auc6_mg",
    "carboplatin_gfr_ml_min",
    "carboplatin_gfr_basis",
    "bsa_m2",
    "capecitabine_renal_dose_pct",
    "doxorubicin_hepatic_dose_pct",
    "paclitaxel_hepatic_dose_pct",
    "irinotecan_hepatic_dose_pct",
    "docetaxel_hepatic_dose_pct",
    "fertility_declined",
    "bone_metastases",
    "brain_metastases_symptomatic",
    "steroids_for_brain_metastases",
    "liver_decompensated",
    "frailty",
    "declines",
    "wants",
    "strong_cyp3a4_inhibitors",
    "strong_cyp3a4_inducers",
    "qt_prolonging_drugs",
    "anticoagulants",
    "antiplatelets",
    "cyp2d6_inhibitors",
    "months_to_relapse",
    "prior_regimens",
    "early_relapse",
    "line",
    "pregnancy_trimester",
    "pregnancy_recorded",
    "progressed_on",
    "intolerant_of",
    "allergy_classes",
    "allergies_unmapped",
    "situations",
}


def test_derive_all_unknown_cancer_type_runs_only_common() -> None:
    # given a case with no cancer type
    results = derive_all(renal_case(1.0, 60, "male"))
    # then
    assert set(results) == COMMON_FACTS
    assert results["crcl_cockcroft_gault"].value == 80


def _public_case_files() -> list[Path]:
    return sorted(PUBLIC_CASES.glob("*.json"))


def test_public_cases_folder_is_present() -> None:
    # given the shared evaluation folder beside the repository / then it holds the 12 cases
    assert len(_public_case_files()) >= 12, f"no public cases found in {PUBLIC_CASES}"


@pytest.mark.parametrize("path", _public_case_files(), ids=lambda p: p.stem)
def test_public_case_staging_matches_expected(path: Path) -> None:
    # given a public evaluation case
    case = json.loads(path.read_text(encoding="utf-8"))
    expected = case["expected"]["staging"]
    # when
    summary = staging_summary(derive_all(case))
    # then each expected key matches (strings case-insensitively)
    assert expected, "case lists no staging expectations"
    for key, want in expected.items():
        got = summary[key]
        if isinstance(want, str):
            assert isinstance(got, str), (key, got, want)
            assert got.lower() == want.lower(), (key, got, want)
        else:
            assert got == want, (key, got, want)
