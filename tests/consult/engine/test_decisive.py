"""Decisive facts (issue 23): every plan says which borderline or missing facts would change its
primary pathway - or that none of the variations tried does - and says it first on the page."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string

from consult.casefile.validate import parse_case_bytes
from consult.engine.decisive import variations
from consult.evaluation import plan_offline
from tests.paths import REPO, public_case_files


def _case(name: str) -> dict[str, Any]:
    path = REPO / "tests" / "cases" / f"{name}.json"
    parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
    assert parsed.ok, parsed.errors
    assert parsed.data is not None
    return dict(parsed.data)


def test_one_point_of_ecog_that_decides_curative_versus_palliative_is_reported(
    bundle: Any,
) -> None:
    # given a single 45 mm HCC, Child-Pugh A, ECOG 1 (BCLC C by the performance status alone)
    case = _case("course-02")
    # when the plan is made
    plan = plan_offline(case, bundle)
    # then it names ECOG as decisive: at ECOG 0 this is BCLC A with resection, and asks whether
    # the ECOG 1 is cancer-related
    ecog = [f for f in plan["decisive_facts"] if f["fact"] == "ecog"]
    assert ecog, plan["decisive_facts"]
    fact = ecog[0]
    assert (fact["recorded"], fact["varied_to"]) == (1, 0)
    assert "resection" in fact["primary_would_be"].lower()
    assert fact["staging_would_be"] == {"bclc": "A"}
    assert "cancer-related" in fact["advice"]
    assert fact["text"].startswith("At ECOG 0 this would be BCLC stage A")
    assert plan["variations_tried"] >= 2


def test_a_plan_no_variation_changes_says_so(bundle: Any) -> None:
    # given the same tumour at ECOG 0 in a patient of no borderline value
    case = _case("course-02")
    case = copy.deepcopy(case)
    case["patient"]["ecog"] = 0
    case["patient"]["age_years"] = 50
    plan = plan_offline(case, bundle)
    # then resection leads and no variation tried changes it
    assert plan["variations_tried"] >= 1
    assert [f for f in plan["decisive_facts"] if f["fact"] != "ecog"] == []


def test_missing_critical_fields_are_tried_across_their_values() -> None:
    # given a lung case with EGFR and PD-L1 not recorded
    case = {
        "cancer_type": "lung_adenocarcinoma",
        "patient": {"ecog": 1, "age_years": 64},
        "biomarkers": {"egfr": None, "alk": "negative", "pdl1_tps_pct": None},
        "staging": {"brain_metastases_count": 0},
    }
    tried = variations(case, {})
    varied = {(v.fact, v.varied_to) for v in tried}
    # then each missing field is set to its possible values, ECOG moves by one, and the age
    # next to 65 is moved across it
    assert {("egfr", "exon19del"), ("egfr", "negative")} <= varied
    assert {("pdl1_tps_pct", 0), ("pdl1_tps_pct", 60)} <= varied
    assert {("ecog", 0), ("ecog", 2)} <= varied
    assert ("age_years", 65) in varied
    assert not any(v.fact == "alk" for v in tried)


def test_creatinine_clearance_near_a_threshold_is_moved_across_it() -> None:
    case = {"cancer_type": "breast", "patient": {"ecog": 0}, "labs": {"creatinine_mg_dl": 1.5}}
    tried = variations(case, {"derived.crcl_cockcroft_gault": 31.0})
    crcl = [v for v in tried if v.fact == "crcl_ml_min"]
    assert [v.varied_to for v in crcl] == [28]


@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_every_public_plan_shows_its_decisive_facts(path: Path, bundle: Any) -> None:
    parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
    assert parsed.data is not None
    plan = plan_offline(parsed.data, bundle)
    assert isinstance(plan["variations_tried"], int)
    for fact in plan["decisive_facts"]:
        assert fact["primary_would_be"] or fact["text"]
        assert fact["advice"]
    # and the partial says it in one line each, or that nothing tried changes it
    html = render_to_string("consult/_decisive_facts.html", {"plan": plan})
    assert "What would change this plan" in html
    if plan["decisive_facts"]:
        assert html.count('class="decisive-fact"') == len(plan["decisive_facts"])
    else:
        assert "recommended pathway stays the same" in html


def test_plan_json_keeps_the_format_field_names(bundle: Any) -> None:
    plan = plan_offline(_case("course-02"), bundle)
    json.dumps(plan)  # serialisable
    fact = plan["decisive_facts"][0]
    assert {"fact", "recorded", "varied_to", "primary_would_be", "advice"} <= set(fact)
