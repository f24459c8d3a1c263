"""Issue 23, supportive care facts: the tumour-lysis risk group before the first cycle
(Cairo-Bishop 2010) and whether germline testing is offered (ASCO-SSO 2024)."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.applicability import case_facts
from clinical.calculators.germline import germline_testing_indicated
from clinical.calculators.tumour_lysis import tls_risk


def lymphoma(histology: str = "diffuse large B-cell lymphoma", **more: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "cancer_type": "lymphoma",
        "patient": {"age_years": 55, "sex": "male", "weight_kg": 80},
        "diagnosis": {"histology": histology},
        "staging": {"bulky_disease": False, "kidney_or_adrenal_involvement": False},
        "biomarkers": {"ldh_u_l": 200, "ldh_uln_u_l": 250},
        "labs": {"creatinine_mg_dl": 0.9},
    }
    for section, values in more.items():
        case[section] = {**case.get(section, {}), **values}
    return case


@pytest.mark.parametrize(
    ("case", "group"),
    [
        (lymphoma(), "low"),
        (lymphoma(biomarkers={"ldh_u_l": 400}), "intermediate"),
        (lymphoma(staging={"bulky_disease": True}), "intermediate"),
        (lymphoma(biomarkers={"ldh_u_l": 900}, staging={"bulky_disease": True}), "high"),
        # intermediate raised to high by a creatinine clearance below 60 mL/min
        (lymphoma(biomarkers={"ldh_u_l": 400}, labs={"creatinine_mg_dl": 2.0}), "high"),
        (
            lymphoma(biomarkers={"ldh_u_l": 400}, staging={"kidney_or_adrenal_involvement": True}),
            "high",
        ),
        (lymphoma("Burkitt lymphoma"), "high"),
        (lymphoma("follicular lymphoma grade 2", staging={"bulky_disease": True}), "low"),
        (lymphoma("classical Hodgkin lymphoma", biomarkers={"ldh_u_l": 900}), "low"),
    ],
)
def test_tumour_lysis_risk_group(case: dict[str, Any], group: str) -> None:
    assert tls_risk(case).value == group


def test_an_aggressive_lymphoma_without_ldh_or_bulk_has_no_group() -> None:
    case = lymphoma(biomarkers={"ldh_u_l": None}, staging={"bulky_disease": None})
    assert tls_risk(case).value is None


def test_a_high_risk_the_notes_state_is_the_risk_group() -> None:
    # given normal LDH and no bulk, but a laboratory tumour lysis before treatment in the notes
    case = lymphoma()
    case["notes"] = "Hyperuricaemia with rising potassium before any treatment."
    assert case_facts(case)["derived.tls_risk"] == "high"
    assert case_facts(lymphoma())["derived.tls_risk"] == "low"


def breast(**more: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "cancer_type": "breast",
        "patient": {"age_years": 70, "sex": "female"},
        "biomarkers": {"er_pct": 90, "pr_pct": 50, "her2": "0", "germline_brca": None},
        "staging": {"t": "T2", "n": "N0", "m": "M0"},
        "notes": None,
    }
    for section, values in more.items():
        case[section] = {**case.get(section, {}), **values} if isinstance(values, dict) else values
    return case


@pytest.mark.parametrize(
    ("case", "offered"),
    [
        (breast(patient={"age_years": 48}), True),
        (breast(patient={"age_years": 65}), True),
        (breast(), False),
        (breast(biomarkers={"er_pct": 0, "pr_pct": 0}), True),  # triple-negative at 70
        (breast(patient={"sex": "male"}), True),
        (breast(notes="Her mother had breast cancer at 44."), True),
        (breast(notes="No family history of breast or ovarian cancer."), False),
        (breast(notes="Ashkenazi Jewish ancestry."), True),
        (breast(staging={"m": "M1"}), True),  # HER2-negative metastatic: PARP-inhibitor candidate
        (breast(patient={"age_years": 40}, biomarkers={"germline_brca": "negative"}), False),
    ],
)
def test_germline_testing_is_offered_by_the_guideline_criteria(
    case: dict[str, Any], offered: bool
) -> None:
    assert germline_testing_indicated(case).value is offered


def test_without_an_age_and_no_other_criterion_it_is_unknown() -> None:
    assert germline_testing_indicated(breast(patient={"age_years": None})).value is None
