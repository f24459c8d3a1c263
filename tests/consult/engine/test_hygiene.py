"""Issue 11, component hygiene: no item of a finished plan names a drug or procedure that a
rule excludes for this patient - in its description, rationale or dose notes - and an item
that cannot be said without it leaves the plan with the reason."""

from __future__ import annotations

from typing import Any

import pytest

from consult.engine.gate import safety_gate
from consult.engine.hygiene import Excluded, clean_text, without_partners
from consult.engine.schemas import ProposedComponent
from tests.consult.engine.support import safety_rule


@pytest.mark.parametrize(
    ("names", "modalities", "text", "cleaned"),
    [
        (
            ["sorafenib"],
            [],
            "Lenvatinib 12 mg daily (8 mg if under 60 kg) or sorafenib 400 mg twice daily, "
            "orally, whichever was not given before",
            "Lenvatinib 12 mg daily (8 mg if under 60 kg)",
        ),
        (
            ["capecitabine"],
            [],
            "Single-agent chemotherapy: weekly paclitaxel, capecitabine, eribulin or "
            "vinorelbine, chosen by prior treatment",
            "Single-agent chemotherapy: weekly paclitaxel, eribulin or vinorelbine, chosen by "
            "prior treatment",
        ),
        (
            ["Nolvadex"],  # a brand name excludes the generic too
            [],
            "Letrozole 2.5 mg daily (tamoxifen if AI not tolerated); review every 3 months",
            "Letrozole 2.5 mg daily; review every 3 months",
        ),
        (
            [],
            ["locoregional"],
            "Atezolizumab plus bevacizumab (therapy for intermediate HCC unsuited to TACE)",
            "Atezolizumab plus bevacizumab",
        ),
        (
            ["zoledronic acid"],
            [],
            "Bone-modifying agent: denosumab 120 mg SC every 4 weeks or zoledronic acid 4 mg IV "
            "every 3-4 weeks, with calcium and vitamin D",
            "Bone-modifying agent: denosumab 120 mg SC every 4 weeks, with calcium and vitamin D",
        ),
        (
            # a procedure named as a step of the sequence is not an option offered: it stays
            [],
            ["radiotherapy"],
            "Surgery with sentinel node biopsy, then adjuvant radiotherapy as indicated",
            "Surgery with sentinel node biopsy, then adjuvant radiotherapy as indicated",
        ),
        (["palbociclib"], [], "Ibrance with fulvestrant", None),
        (["sorafenib"], [], "Cabozantinib 60 mg daily", "Cabozantinib 60 mg daily"),
    ],
)
def test_hygiene_clean_text(
    names: list[str], modalities: list[str], text: str, cleaned: str | None
) -> None:
    assert clean_text(text, Excluded.of(names, modalities)) == cleaned


def _option(description: str, *agents: str, **fields: Any) -> ProposedComponent:
    fields.setdefault("modality", "systemic")
    return ProposedComponent(description=description, agents=list(agents), **fields)


def test_hygiene_the_gate_leaves_no_excluded_name_in_any_item() -> None:
    # given a plan whose pathway lists sorafenib as an interchangeable partner, an alternative
    # whose rationale names it, and a rule that excludes sorafenib for this patient
    pathway = _option(
        "Lenvatinib 12 mg daily or sorafenib 400 mg twice daily, whichever was not given before",
        "lenvatinib",
        "sorafenib",
        interchangeable=[["lenvatinib", "sorafenib"]],
        role="primary",
    )
    alternative = _option(
        "Cabozantinib 60 mg daily",
        "cabozantinib",
        role="alternative",
        rank=1,
        rationale=["after sorafenib \u2713", "Child-Pugh class: A \u2713"],
        dose_adjustments=["Start at 40 mg if sorafenib caused hand-foot skin reaction"],
    )
    rule = safety_rule(
        "x.ci.sorafenib",
        agents=["sorafenib"],
        severity="major",
        effect="remove",
        advice="not tolerated before",
    )
    # when the gate runs
    outcome = safety_gate([pathway, alternative], [rule])
    # then no item names sorafenib anywhere, and each keeps what it gives
    for component in outcome.components:
        words = " ".join([component.description, *component.rationale, *component.dose_adjustments])
        assert "sorafenib" not in words.casefold(), component
    # the withdrawal is shown as a rejected option with the rule's reason
    assert any(
        r.option.startswith("sorafenib") and "not tolerated" in r.reason for r in outcome.rejected
    )
    first = outcome.components[0]
    assert first.role == "primary"
    assert first.description == "Lenvatinib 12 mg daily"
    assert first.agents == ["lenvatinib"]
    second = outcome.components[1]
    assert second.rationale == ["Child-Pugh class: A \u2713"]
    assert second.dose_adjustments == []


def test_hygiene_an_item_that_cannot_be_said_without_the_drug_leaves_the_plan() -> None:
    # given an item that gives everolimus and names a CDK4/6 inhibitor (only to say it is not
    # given) in its head, and a rule excluding the CDK4/6 inhibitors that fires
    item = _option(
        "Palbociclib-free continuation: everolimus with exemestane",
        "everolimus",
        "exemestane",
        role="primary",
    )
    safe = _option("Weekly paclitaxel 80 mg/m2", "paclitaxel", role="alternative", rank=1)
    rule = safety_rule(
        "x.ci.cdk46",
        agents=["palbociclib", "ribociclib", "abemaciclib"],
        severity="major",
        effect="remove",
        advice="progressed on a CDK4/6 inhibitor",
    )
    # when the gate runs
    outcome = safety_gate([item, safe], [rule])
    # then the next safe option leads and the item is a rejected option with the reason
    assert [c.description for c in outcome.components] == ["Weekly paclitaxel 80 mg/m2"]
    assert outcome.components[0].role == "primary"
    assert any("palbociclib" in r.option.casefold() for r in outcome.rejected)


@pytest.mark.parametrize(
    ("text", "reworded"),
    [
        (
            "Lenalidomide 20 mg days 1-21 with rituximab 375 mg/m2 (R2), 28-day cycles x12",
            "Lenalidomide 20 mg days 1-21, 28-day cycles x12",
        ),
        (
            "Bendamustine 90 mg/m2 days 1-2 plus rituximab 375 mg/m2 day 1, every 28 days",
            "Bendamustine 90 mg/m2 days 1-2, every 28 days",
        ),
        ("Rituximab 375 mg/m2 weekly x4", None),  # the head: nothing is left to give
    ],
)
def test_hygiene_a_withdrawn_partner_drug_goes_with_its_dose(
    text: str, reworded: str | None
) -> None:
    assert without_partners(text, Excluded.of(["rituximab"])) == reworded


def test_hygiene_a_regimen_the_gate_withdrew_a_drug_from_no_longer_reads_as_giving_it() -> None:
    # given lenalidomide-rituximab and a critical allergy rule that withdraws rituximab only
    item = _option(
        "Lenalidomide 20 mg days 1-21 with rituximab 375 mg/m2 (R2), 28-day cycles x12",
        "lenalidomide",
        "rituximab",
        role="primary",
    )
    rule = safety_rule(
        "x.ci.rituximab-allergy",
        agents=["rituximab"],
        severity="critical",
        effect="remove",
        omit=True,
        advice="anaphylaxis to rituximab",
    )
    # when the gate runs
    outcome = safety_gate([item], [rule])
    # then a clinician reading the pathway does not see rituximab in it at all
    [first] = outcome.components
    assert first.description == "Lenalidomide 20 mg days 1-21, 28-day cycles x12"
    assert first.agents == ["lenalidomide"]
    assert not any("rituximab" in line.casefold() for line in first.dose_adjustments)
    # and the withdrawal is a rejected option with the rule's reason
    assert any(
        r.option.startswith("rituximab") and "anaphylaxis" in r.reason for r in outcome.rejected
    )
