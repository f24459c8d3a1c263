"""Restaging cases: the computed response (not a typed one) steers the guideline engine's plan."""

from __future__ import annotations

import copy
import json
from typing import Any

from consult.casefile.validate import parse_case_bytes
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
    assert "Restaging on 2026-10-12 (mRECIST): progressive disease" in (
        plan["recommendation"]["summary"]
    )


def test_same_patient_with_controlled_disease_continues_the_line(bundle: Any) -> None:
    # given the same measurements without the new lesion (stable disease)
    case = copy.deepcopy(_case("hcc-40.json"))
    case["lesions"] = [lesion for lesion in case["lesions"] if lesion["lesion_id"] != "L3"]
    # when
    plan = plan_offline(case, bundle)
    # then the ongoing therapy continues and the next line waits for progression
    assert plan["response"]["category"] == "SD"
    assert _primary(plan).startswith("continue atezolizumab + bevacizumab")
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
