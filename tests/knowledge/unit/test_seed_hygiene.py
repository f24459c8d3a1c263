"""Seed lint (issue 11, component hygiene): a therapy step's description names only what the
step gives, and never names an option or drug in an excluding phrase ("unsuited to TACE",
"cisplatin-ineligible", "in place of the anthracycline"). When that drug or option is excluded
for a patient, such words would put it back in the plan item; the contrast belongs in the
step's ``when`` (shown only while it ranks as an alternative)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from clinical import lexicon
from consult.engine.matching import REFERENCE_MODALITIES

SEED = Path(__file__).resolve().parents[3] / "knowledge" / "seed"
EXCLUDING = re.compile(
    r"\b(?:unsuited|unsuitable|ineligible|not\s+(?:a\s+)?candidates?|instead\s+of|in\s+place\s+of"
    r"|rather\s+than|contraindicat\w*|unfit\s+for|not\s+(?:fit|suitable|eligible)\s+for)\b",
    re.IGNORECASE,
)


def _therapy_steps() -> list[dict]:
    steps = []
    for path in sorted(SEED.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            for unit in (document or {}).get("units") or []:
                if unit["action"].get("type") == "therapy":
                    steps.append(unit)
    return steps


STEPS = _therapy_steps()


def _closure(names: list[str]) -> set[str]:
    drugs: set[str] = set()
    for name in names:
        found = lexicon.resolve(name)
        if found is not None:
            drugs |= set(found[0])
    return lexicon.with_parents(drugs)


def test_seed_hygiene_has_therapy_steps() -> None:
    assert len(STEPS) >= 200


@pytest.mark.parametrize("unit", STEPS, ids=lambda u: u["key"])
def test_seed_hygiene_description_names_only_what_the_step_gives(unit: dict) -> None:
    action = unit["action"]
    given = _closure(list(action.get("agents") or []))
    description = action["description"]
    strangers = [
        description[m.start : m.end]
        for m in lexicon.mentions(description)
        if not m.regimen and not m.cls and not (lexicon.with_parents(m.drugs) & given)
    ]
    assert not strangers, f"{unit['key']} names {strangers} without giving them"


@pytest.mark.parametrize("unit", STEPS, ids=lambda u: u["key"])
def test_seed_hygiene_description_excludes_nothing_by_name(unit: dict) -> None:
    description = unit["action"]["description"]
    found = EXCLUDING.search(description)
    assert found is None, f"{unit['key']}: '{found.group() if found else ''}' in the description"


WITHOUT_AGENTS = [
    u
    for u in STEPS
    if not u["action"].get("agents") and u["action"].get("modality") not in REFERENCE_MODALITIES
]


@pytest.mark.parametrize("unit", WITHOUT_AGENTS, ids=lambda u: u["key"])
def test_seed_hygiene_a_step_without_agents_opens_no_drug_class(unit: dict) -> None:
    # A radiotherapy or surgery step that lists no agents but says "alongside immunotherapy"
    # would be read as giving every checkpoint inhibitor: each one's safety rules would apply
    # to it ("confirm before starting pembrolizumab" on a radiotherapy plan). Care that only
    # refers to a treatment (referral, surveillance, supportive, antiviral) reads its agents.
    action = unit["action"]
    given = lexicon.given([], action["description"])
    names = sorted(given.drugs | given.open_classes)
    assert not names, f"{unit['key']} gives no agents but its description names {names}"
