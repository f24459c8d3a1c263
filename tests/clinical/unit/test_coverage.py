"""The coverage map: what the therapy options model, and the situations outside them."""

from __future__ import annotations

from typing import Any

from clinical.calculators.situations import Situation
from clinical.coverage import UnitRef, coverage_map, is_covered, render_markdown


def _unit(key: str, cancer: str, conditions: list[dict[str, Any]], **action: Any) -> UnitRef:
    content = {
        "context": {"all": conditions},
        "action": {
            "type": "therapy",
            "modality": "systemic",
            "description": key,
            "intent": "palliative",
            "role": "option",
            **action,
        },
    }
    return UnitRef(key=key, cancer_type=cancer, kind="therapy_step", content=content)


LEPTO = Situation(
    id="leptomeningeal", kind="site", label="leptomeningeal disease", phrase="", source="notes"
)
SARCOMATOID = Situation(
    id="sarcomatoid",
    kind="histology_variant",
    label="sarcomatoid",
    phrase="",
    source="diagnosis.histology",
)


def test_coverage_an_option_for_a_situation_covers_it_an_immediate_step_does_not() -> None:
    # given only a supportive referral for leptomeningeal disease
    referral = _unit(
        "common.tx.lm-referral",
        "any",
        [{"fact": "derived.situations", "op": "contains_any", "value": ["leptomeningeal"]}],
        modality="referral",
        intent="supportive",
        role="adjunct",
        specialists=["neuro-oncologist"],
    )
    standard = _unit("lung.tx.chemo", "lung_adenocarcinoma", [])
    maps = coverage_map([referral, standard])
    # then leptomeningeal disease is outside the pathways, with the referral as its step
    assert not is_covered(LEPTO, maps["lung_adenocarcinoma"])
    assert maps["lung_adenocarcinoma"].outside["leptomeningeal"] == ["common.tx.lm-referral"]
    # when a curator adds a therapy option written for it, it is covered
    option = _unit(
        "lung.tx.lm-osimertinib",
        "lung_adenocarcinoma",
        [{"fact": "derived.situations", "op": "contains_any", "value": ["leptomeningeal"]}],
    )
    assert is_covered(LEPTO, coverage_map([referral, standard, option])["lung_adenocarcinoma"])


def test_coverage_a_histology_condition_naming_the_variant_covers_it() -> None:
    standard = _unit("lung.tx.chemo", "lung_adenocarcinoma", [])
    assert not is_covered(SARCOMATOID, coverage_map([standard])["lung_adenocarcinoma"])
    variant = _unit(
        "lung.tx.sarcomatoid-io",
        "lung_adenocarcinoma",
        [{"fact": "diagnosis.histology", "op": "contains_any", "value": ["sarcomatoid"]}],
    )
    maps = coverage_map([standard, variant])
    assert is_covered(SARCOMATOID, maps["lung_adenocarcinoma"])
    # and the map shows it to curators
    assert any(
        "sarcomatoid" in line and "lung.tx.sarcomatoid-io" in line for line in render_markdown(maps)
    )


def test_coverage_lymphoma_entities_come_from_the_options() -> None:
    dlbcl = _unit(
        "lymph.tx.rchop",
        "lymphoma",
        [{"fact": "derived.lymphoma_entity", "op": "eq", "value": "dlbcl"}],
    )
    follicular = _unit(
        "lymph.tx.br",
        "lymphoma",
        [{"fact": "diagnosis.histology", "op": "contains_any", "value": ["follicular"]}],
    )
    coverage = coverage_map([dlbcl, follicular])["lymphoma"]
    burkitt = Situation(
        id="lymphoma_entity:burkitt",
        kind="histology_variant",
        label="Burkitt",
        phrase="",
        source="diagnosis.histology",
    )
    fl = Situation(
        id="lymphoma_entity:follicular",
        kind="histology_variant",
        label="FL",
        phrase="",
        source="diagnosis.histology",
    )
    assert is_covered(fl, coverage)
    assert not is_covered(burkitt, coverage)


def test_coverage_a_cancer_without_options_covers_nothing() -> None:
    # fails closed: no map, or a map without options, covers no situation
    assert not is_covered(SARCOMATOID, None)
    assert not is_covered(SARCOMATOID, coverage_map([])["breast"])
