"""Issue 25: a plan that recommends what it rules out, or whose intent its steps do not bear
out, is found incoherent, with the items involved and a sentence a clinician can act on; a
coherent plan, worded as the engine or a clinician words it, has no finding."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consult.engine.coherence import (
    INTENT_CONTRADICTS_STEPS,
    RECOMMENDS_RULED_OUT,
    Finding,
    plan_findings,
)
from tests.paths import public_case_files


def plan(
    *items: dict[str, Any], ruled_out: tuple[str, ...] = (), intent: str | None = None
) -> dict[str, Any]:
    order = rank = 0
    components = []
    for item in items:
        component = {"agents": [], "dose_adjustments": [], "when": "", **item}
        component.setdefault("role", "primary")
        if component["role"] == "primary":
            order += 1
            component["order"] = order
        else:
            rank += 1
            component["rank"] = rank
        components.append(component)
    return {
        "format": "mdtboard.plan/1",
        "recommendation": {"intent": intent, "components": components},
        "rejected_options": [{"option": o, "reason": "not indicated"} for o in ruled_out],
    }


def step(modality: str, description: str, **more: Any) -> dict[str, Any]:
    return {"modality": modality, "description": description, **more}


def properties(findings: list[Finding]) -> list[str]:
    return [f.property for f in findings]


# --- recommends what it rules out ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("item", "ruled_out"),
    [
        # the amendment of the issue: resection written without the organ's name
        (step("surgery", "Laparoscopic resection of segment VI lesion"), "Liver resection"),
        (step("surgery", "Anatomical hepatectomy"), "Liver resection"),
        (step("transplant", "Orthotopic liver transplantation"), "Liver transplantation"),
        (step("ablation", "Percutaneous microwave ablation of the nodule"), "Thermal ablation"),
        (step("locoregional", "Selective TACE, repeated on demand"), "Chemoembolisation (TACE)"),
        (step("radiotherapy", "SBRT 5 x 8 Gy"), "Stereotactic body radiotherapy"),
        # a drug ruled out and offered as one of a choice, by brand or by generic name
        (step("systemic", "Lenvatinib or sorafenib", agents=["sorafenib"]), "Nexavar"),
        (step("systemic", "Atezolizumab plus bevacizumab"), "Bevacizumab"),
        (step("systemic", "Carboplatin AUC 5 plus pemetrexed"), "Carboplatin with pemetrexed"),
        (step("systemic", "R-CHOP-21 x6"), "R-CHOP"),
        (step("systemic", "Pembrolizumab 200 mg every 3 weeks"), "Immune checkpoint inhibitors"),
        (step("systemic", "R-CHOP x6"), "Chemoimmunotherapy"),
        (step("systemic", "Lenvatinib 12 mg daily"), "Systemic therapy"),
        (step("surveillance", "Watchful waiting with blood counts"), "Watch and wait"),
        (step("supportive", "Intensive induction at a specialist centre"), "Intensive induction"),
    ],
)
def test_coherence_finds_an_item_that_gives_what_the_plan_rules_out(
    item: dict[str, Any], ruled_out: str
) -> None:
    # given a plan whose pathway gives what it rules out
    doc = plan(item, ruled_out=(ruled_out,))
    # when it is checked
    findings = plan_findings(doc)
    # then one finding names both, in a sentence
    assert properties(findings) == [RECOMMENDS_RULED_OUT]
    assert findings[0].items == (item["description"], ruled_out)
    assert ruled_out in findings[0].sentence
    assert "pathway step 1" in findings[0].sentence


def test_coherence_finds_an_alternative_that_gives_what_is_ruled_out() -> None:
    doc = plan(
        step("systemic", "Durvalumab plus tremelimumab"),
        step("systemic", "Sorafenib 400 mg twice daily", role="alternative", when="if ICI fail"),
        ruled_out=("Sorafenib",),
    )
    findings = plan_findings(doc)
    assert properties(findings) == [RECOMMENDS_RULED_OUT]
    assert "alternative 1" in findings[0].sentence


@pytest.mark.parametrize(
    ("item", "ruled_out"),
    [
        # another procedure of the same family, or a procedure the item only follows
        (step("radiotherapy", "Whole-breast radiotherapy, 40 Gy in 15 fractions"), "SBRT"),
        (step("surgery", "Breast-conserving surgery with sentinel node biopsy"), "Mastectomy"),
        (step("radiotherapy", "Radiotherapy after breast-conserving surgery"), "Breast surgery"),
        (step("systemic", "After complete resection: osimertinib 80 mg daily"), "Resection"),
        (step("systemic", "Lenvatinib 12 mg daily, unsuited to TACE"), "TACE"),
        # chemotherapy alone ruled out, chemo-immunotherapy given: a choice, not a contradiction
        (
            step("systemic", "Pembrolizumab plus pemetrexed plus carboplatin"),
            "Carboplatin AUC 5 plus pemetrexed 500 mg/m2",
        ),
        (step("systemic", "Bendamustine with rituximab (BR) x6"), "Rituximab monotherapy"),
        (step("systemic", "Rituximab 375 mg/m2 weekly x4"), "Chemoimmunotherapy"),
        (step("systemic", "R-mini-CHOP x6"), "R-CHOP"),
        (step("systemic", "ABVD x4"), "ABVD-based combined modality"),
        (step("antiviral", "Entecavir 0.5 mg daily"), "Systemic therapy"),
        # a drug named only to be avoided
        (step("systemic", "Paclitaxel weekly, without bevacizumab"), "Bevacizumab"),
        # a class named by a step, one member of it ruled out: another member fulfils it
        (
            step(
                "surveillance",
                "Brain MRI every 2-3 months while a CNS-active ALK inhibitor is given",
            ),
            "Lorlatinib 100 mg once daily until progression",
        ),
    ],
)
def test_coherence_leaves_distinct_options_alone(item: dict[str, Any], ruled_out: str) -> None:
    assert plan_findings(plan(item, ruled_out=(ruled_out,))) == []


def test_coherence_reads_the_withdrawn_drug_not_the_item_it_came_from() -> None:
    # the engine records a drug it withdrew as "drug (in: the item it was in)"
    doc = plan(
        step("systemic", "Single-agent chemotherapy: weekly paclitaxel, eribulin or vinorelbine"),
        ruled_out=("capecitabine (in: Single-agent chemotherapy: weekly paclitaxel, eribulin)",),
    )
    assert plan_findings(doc) == []
    doc["recommendation"]["components"][0]["description"] += " or capecitabine"
    assert properties(plan_findings(doc)) == [RECOMMENDS_RULED_OUT]


# --- intent against steps -----------------------------------------------------------------------
def test_coherence_finds_a_palliative_intent_over_a_curative_operation() -> None:
    # given the amendment of the issue: resection under a palliative heading
    doc = plan(
        step("surgery", "Laparoscopic resection of segment VI lesion"),
        step("antiviral", "Entecavir 0.5 mg daily"),
        intent="palliative",
    )
    findings = plan_findings(doc)
    assert properties(findings) == [INTENT_CONTRADICTS_STEPS]
    assert findings[0].items == ("palliative", "Laparoscopic resection of segment VI lesion")
    assert "make the intent curative" in findings[0].sentence


@pytest.mark.parametrize(
    "description",
    [
        "Palliative radiotherapy-free decompressive laminectomy for cord compression",
        "Resection of the symptomatic brain metastasis, then systemic therapy",
        "Surgical stabilisation of the pathological femoral fracture",
    ],
)
def test_coherence_allows_palliative_operations_that_say_what_they_palliate(
    description: str,
) -> None:
    doc = plan(step("surgery", description), step("systemic", "Osimertinib"), intent="palliative")
    assert plan_findings(doc) == []


def test_coherence_finds_a_curative_intent_without_a_step_that_can_cure() -> None:
    doc = plan(
        step("systemic", "Primary endocrine therapy: letrozole 2.5 mg daily; surgery if it grows"),
        intent="curative",
    )
    assert properties(plan_findings(doc)) == [INTENT_CONTRADICTS_STEPS]


@pytest.mark.parametrize(
    "items",
    [
        [step("surgery", "Liver resection")],
        [step("systemic", "Pola-R-CHP x6"), step("referral", "CNS staging")],
        [step("systemic", "CD19 CAR T-cell therapy: axicabtagene ciloleucel")],
        [step("locoregional", "Downstaging TACE, then liver transplant assessment")],
        [step("systemic", "H. pylori eradication: amoxicillin and clarithromycin with a PPI")],
        [step("systemic", "Neoadjuvant TCHP"), step("surgery", "Breast-conserving surgery")],
    ],
)
def test_coherence_accepts_a_curative_pathway(items: list[dict[str, Any]]) -> None:
    assert plan_findings(plan(*items, intent="curative")) == []


def test_coherence_finds_surveillance_with_an_active_treatment() -> None:
    doc = plan(
        step("surveillance", "Watchful waiting"),
        step("systemic", "Rituximab 375 mg/m2 weekly x4"),
        intent="surveillance",
    )
    findings = plan_findings(doc)
    assert properties(findings) == [INTENT_CONTRADICTS_STEPS]
    assert "Rituximab" in findings[0].sentence
    # moved to the alternatives, it is what surveillance would turn into
    doc["recommendation"]["components"][1]["role"] = "alternative"
    assert plan_findings(doc) == []


def test_coherence_says_nothing_about_a_plan_without_an_intent() -> None:
    assert plan_findings(plan(step("surgery", "Liver resection"))) == []


@pytest.mark.slow
@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_every_public_case_plan_is_coherent(path: Any, bundle: Any) -> None:
    from consult.evaluation import plan_offline

    doc = plan_offline(json.loads(path.read_text()), bundle)
    assert plan_findings(doc) == []
