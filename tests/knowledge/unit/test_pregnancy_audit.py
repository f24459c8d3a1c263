"""The pregnancy audit of the seed, kept: every drug a therapy step gives is either named by a
pregnancy rule (forbidden, deferred, or timed to the second trimester) or is on the short list
of drugs pregnancy does not restrict, with the reason. A drug added to the seed without a
pregnancy decision fails here, so a pregnant patient never gets a drug nobody looked at."""

from __future__ import annotations

from typing import Any

from clinical import lexicon
from tests.consult.engine.support import seed_bundle

# Given in pregnancy (the reason, for the reviewer): supportive and anti-infective care.
COMPATIBLE = {
    "amoxicillin": "penicillins are the antibiotics of choice in pregnancy",
    "clarithromycin": "used when needed; H. pylori eradication is deferred by the bismuth rule",
    "metronidazole": "used from the second trimester; eradication is deferred by the bismuth rule",
    "proton pump inhibitor": "omeprazole has reassuring pregnancy data",
    "dexamethasone": "antenatal and antiemetic use",
    "prednisone": "largely inactivated by the placenta",
    "propranolol": "beta-blocker used in pregnancy, with fetal growth monitoring",
    "carvedilol": "beta-blocker used in pregnancy, with fetal growth monitoring",
    "tenofovir": "the HBV antiviral of choice in pregnancy (EASL HBV 2017)",
    "antiretroviral therapy": "continued in pregnancy (EACS)",
}


def _names(agent: str) -> set[str]:
    resolved = lexicon.resolve(agent)
    if resolved is None:
        return {agent.casefold()}
    drugs, classes = resolved
    return {*drugs, *(f"class:{c}" for c in classes), agent.casefold()}


def _pregnancy_rule(unit: Any) -> bool:
    context = unit.context.model_dump(mode="json") if unit.context else {}
    return unit.action.type == "safety" and "pregnan" in str(context)


def test_every_drug_of_the_seed_has_a_pregnancy_decision() -> None:
    # given the seed's pregnancy rules and the drugs its therapy steps give
    bundle = seed_bundle()
    covered: set[str] = set()
    for unit in bundle.units:
        if _pregnancy_rule(unit):
            for agent in unit.action.agents:
                covered |= _names(agent)
    given = {a for u in bundle.units if u.action.type == "therapy" for a in u.action.agents}
    # then each is named by a pregnancy rule, or pregnancy does not restrict it
    undecided = sorted(
        a for a in given if not (_names(a) & covered) and a.casefold() not in COMPATIBLE
    )
    assert undecided == []


def test_procarbazine_and_escalated_beacopp_are_forbidden_in_pregnancy() -> None:
    # given the pregnancy rules that remove drugs
    bundle = seed_bundle()
    removed = {
        name
        for unit in bundle.units
        if _pregnancy_rule(unit) and unit.action.effect == "remove"
        for agent in unit.action.agents
        for name in _names(agent)
    }
    # then procarbazine is among them, and BEACOPP (which gives it) is caught by it
    assert "procarbazine" in removed
    assert "procarbazine" in _names("escalated BEACOPP")
