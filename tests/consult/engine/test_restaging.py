"""Restaging cases: the computed response (not a typed one) steers the guideline engine's plan."""

from __future__ import annotations

import copy
import json
from typing import Any

from clinical.plan import PlanComponent
from consult.casefile.validate import parse_case_bytes
from consult.engine.restaging import name_current_treatment
from consult.evaluation import plan_offline
from tests.paths import REPO

CASES = REPO / "tests" / "cases"


def _case(name: str) -> dict[str, Any]:
    parsed = parse_case_bytes((CASES / name).read_bytes(), filename=name)
    assert parsed.ok, parsed.errors
    assert parsed.data is not None
    return parsed.data


def _primary(plan: dict[str, Any]) -> str:
    return " ".join(
        c["description"].lower()
        for c in plan["recommendation"]["components"]
        if c["role"] == "primary"
    )


def test_new_lesion_on_first_line_is_progression_and_the_next_line_leads(bundle: Any) -> None:
    # given an HCC on atezolizumab-bevacizumab, no setting typed, a new adrenal lesion
    case = _case("hcc-40.json")
    assert case["diagnosis"]["setting"] is None
    # when the engine plans
    plan = plan_offline(case, bundle)
    # then the response is computed (mRECIST, PD for the new lesion) and second line leads
    response = plan["response"]
    assert response["criteria"] == "mRECIST"
    assert response["category"] == "PD"
    assert response["new_lesions"] == ["L3"]
    assert response["baseline_sum_mm"] == 80
    assert "lenvatinib" in _primary(plan)
    assert "atezolizumab" not in _primary(plan)
    # and monitoring names the lesions to follow and the criteria
    follow = plan["monitoring"][0]
    assert follow["anchor"] == "mRECIST"
    assert "L3 (left adrenal gland)" in follow["what"]
    assert (
        "Restaging on 2026-10-12 (mRECIST): progressive disease"
        in (plan["recommendation"]["summary"])
    )


def test_same_patient_with_controlled_disease_continues_the_line(bundle: Any) -> None:
    # given the same measurements without the new lesion (stable disease)
    case = copy.deepcopy(_case("hcc-40.json"))
    case["lesions"] = [lesion for lesion in case["lesions"] if lesion["lesion_id"] != "L3"]
    # when
    plan = plan_offline(case, bundle)
    # then the ongoing therapy continues and the next line waits for progression
    assert plan["response"]["category"] == "SD"
    assert "continue atezolizumab + bevacizumab" in _primary(plan)
    assert "lenvatinib" not in _primary(plan)
    lenvatinib = next(
        c for c in plan["recommendation"]["components"] if "Lenvatinib" in c["description"]
    )
    assert lenvatinib["role"] == "alternative"
    assert lenvatinib["rank"] == 1
    assert "progression" in lenvatinib["when"]


def test_case_without_serial_measurements_has_no_response(bundle: Any) -> None:
    case = json.loads((CASES / "hcc-08.json").read_text())
    case.pop("expected")
    plan = plan_offline(case, bundle)
    assert plan["response"] is None
    assert "Restaging" not in plan["recommendation"]["summary"]


def test_pseudo_progression_on_immunotherapy_continues_pembrolizumab(bundle: Any) -> None:
    # given lesions that grew on pembrolizumab maintenance (iUPD), then shrank
    plan = plan_offline(_case("lung-40.json"), bundle)
    # then iRECIST reads a pseudo-progression and the line continues
    response = plan["response"]
    assert response["criteria"] == "iRECIST"
    assert [h["category"] for h in response["history"]] == ["SD", "iUPD", "PR"]
    assert any("pseudo-progression" in line for line in response["arithmetic"])
    primary = _primary(plan)
    assert "continue pembrolizumab + pemetrexed maintenance" in primary
    assert "carboplatin" not in primary  # the induction phase is over
    assert "sotorasib" not in primary
    assert plan["recommendation"]["intent"] == "palliative"


def test_unconfirmed_progression_on_immunotherapy_reimages_before_switching(
    bundle: Any,
) -> None:
    # given the same patient whose last scan is the iUPD
    case = copy.deepcopy(_case("lung-40.json"))
    for lesion in case["lesions"]:
        lesion["measurements"] = lesion["measurements"][:3]
    plan = plan_offline(case, bundle)
    assert plan["response"]["category"] == "iUPD"
    assert "repeat imaging in 4-8 weeks" in _primary(plan)
    sotorasib = next(
        c for c in plan["recommendation"]["components"] if "Sotorasib" in c["description"]
    )
    assert sotorasib["role"] == "alternative"
    assert "iCPD" in sotorasib["when"]
    assert plan["monitoring"][0]["interval"] == "in 4-8 weeks to confirm progression (iRECIST)"


def test_interim_pet_deauville_4_completes_the_course_with_prophylaxis(bundle: Any) -> None:
    # given a DLBCL on R-CHOP whose interim PET-CT scores Deauville 4 (baseline 5)
    plan = plan_offline(_case("lymph-40.json"), bundle)
    # then Lugano reads a partial metabolic response and the course is completed
    assert plan["response"]["category"] == "PMR"
    assert plan["response"]["max_deauville"] == 4
    primary = _primary(plan)
    assert "continue r-chop" in primary
    assert "entecavir" in primary  # the prophylaxis the anti-CD20 antibody needs stays
    assert "r-ice" not in primary
    assert "car t-cell therapy" not in primary
    assert plan["recommendation"]["intent"] == "curative"
    assert "end-of-treatment PET-CT" in plan["monitoring"][0]["interval"]


def test_residual_disease_after_neoadjuvant_therapy_leads_to_t_dm1(bundle: Any) -> None:
    # given HER2+ breast cancer with 14 mm left on the MRI after TCHP, then operated
    case = _case("breast-40.json")
    assert case["diagnosis"]["setting"] is None
    plan = plan_offline(case, bundle)
    # then the residual disease is computed and the adjuvant step for it leads
    assert plan["response"]["category"] == "PR"
    assert "trastuzumab emtansine" in _primary(plan)
    assert "surgical pathology" in plan["recommendation"]["summary"]


def test_recorded_progression_contradicted_by_a_pseudo_progression_continues(
    bundle: Any,
) -> None:
    # given the pseudo-progression case recorded as "progressive" by the clinician
    case = copy.deepcopy(_case("lung-40.json"))
    case["diagnosis"]["setting"] = "progressive"
    plan = plan_offline(case, bundle)
    # then the computed response wins, and the plan says why
    assert "continue pembrolizumab + pemetrexed maintenance" in _primary(plan)
    assert "The setting was recorded as progressive" in plan["recommendation"]["summary"]


def test_scan_that_cannot_be_read_does_not_end_a_curative_course(bundle: Any) -> None:
    # given the interim PET without baseline Deauville scores (uptake cannot be compared)
    case = copy.deepcopy(_case("lymph-40.json"))
    for lesion in case["lesions"]:
        lesion["measurements"][0]["deauville"] = None
    plan = plan_offline(case, bundle)
    # then the response is not evaluable and R-CHOP is not abandoned for salvage therapy
    assert plan["response"]["category"] == "NE"
    primary = _primary(plan)
    assert "continue r-chop" in primary
    assert "r-ice" not in primary


def test_lesions_without_target_flags_are_all_measured(bundle: Any) -> None:
    case = copy.deepcopy(_case("hcc-40.json"))
    for lesion in case["lesions"]:
        del lesion["target"]
    case["lesions"] = case["lesions"][:2]
    plan = plan_offline(case, bundle)
    assert plan["response"]["baseline_sum_mm"] == 80
    assert plan["response"]["category"] == "SD"


def test_local_steps_name_the_lesion_they_treat(bundle: Any) -> None:
    # given the HER2+ case after neoadjuvant therapy and breast-conserving surgery
    plan = plan_offline(_case("breast-40.json"), bundle)
    # then the radiotherapy says which lesion's site it treats, by id and site
    radiotherapy = next(
        c for c in plan["recommendation"]["components"] if c["modality"] == "radiotherapy"
    )
    assert radiotherapy["lesions"] == ["L1"]
    assert "index lesion L1 (left breast upper outer quadrant)" in radiotherapy["description"]
    # and systemic steps name none
    assert all(
        "lesions" not in c
        for c in plan["recommendation"]["components"]
        if c["modality"] == "systemic"
    )


def test_plans_without_lesions_are_unchanged_by_lesion_naming(bundle: Any) -> None:
    case = json.loads((CASES / "breast-07.json").read_text())
    case.pop("expected")
    plan = plan_offline(case, bundle)
    assert all("lesions" not in c for c in plan["recommendation"]["components"])
    assert all("index lesion" not in c["description"] for c in plan["recommendation"]["components"])


def test_oligoprogression_names_the_therapy_that_continues() -> None:
    step = PlanComponent.model_validate(
        {
            "modality": "radiotherapy",
            "role": "primary",
            "order": 1,
            "description": "Continue the current treatment that still controls the other sites, "
            "and give stereotactic radiotherapy to each progressing site",
        }
    )
    case = {
        "diagnosis": {
            "setting": "progressive",
            "prior_therapies": [
                {"regimen": "carboplatin-pemetrexed", "end_date": "2024-05-01"},
                {"regimen": "osimertinib 80 mg daily", "start_date": "2025-02-10"},
            ],
        }
    }
    (named,) = name_current_treatment([step], case)
    assert named.description.startswith(
        "Continue osimertinib 80 mg daily (this line since 2025-02-10), which still controls"
    )
    # nothing ongoing on record: the step keeps its words
    stopped = {
        "diagnosis": {"prior_therapies": [{"regimen": "osimertinib", "end_date": "2026-01-01"}]}
    }
    assert name_current_treatment([step], stopped) == [step]
