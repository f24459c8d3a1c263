"""Doses shown with a plan item are those of the regimen the item gives: the carboplatin AUC
of that regimen (weekly AUC 2 with radiotherapy is not the AUC 5 dose), the capecitabine and
anthracycline doses it states, reduced as kidney or liver function requires."""

from __future__ import annotations

from typing import Any

import pytest

from consult.engine.dosing import carboplatin_aucs, dose_note
from consult.engine.gate import safety_gate
from consult.engine.schemas import ProposedComponent
from tests.consult.engine.support import safety_rule

GFR = {
    "derived.carboplatin_gfr_ml_min": 81.0,
    "derived.carboplatin_gfr_basis": "CrCl 81 mL/min (Cockcroft-Gault; actual weight 70 kg)",
}


def _item(description: str, *agents: str) -> ProposedComponent:
    return ProposedComponent(modality="systemic", description=description, agents=list(agents))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("60 Gy with weekly carboplatin AUC 2 and paclitaxel 45 mg/m2", [(2.0, "weekly")]),
        (
            "paclitaxel 80 mg/m2 weekly with carboplatin AUC 1.5 weekly or AUC 5 every 3 weeks",
            [(1.5, "weekly"), (5.0, "every 3 weeks")],
        ),
        ("Carboplatin AUC 5-6 plus nab-paclitaxel 100 mg/m2 weekly", [(5.0, ""), (6.0, "")]),
        ("docetaxel 75 mg/m2, carboplatin AUC 6, trastuzumab", [(6.0, "")]),
        ("paclitaxel and carboplatin (AUC 6) every 3 weeks", [(6.0, "")]),
        ("weekly paclitaxel 80 mg/m2 and carboplatin x12 weeks", []),
        ("cisplatin 75 mg/m2 and pemetrexed; target AUC unknown", []),
    ],
)
def test_the_carboplatin_auc_and_its_schedule_are_read_from_the_regimen(
    text: str, expected: list[tuple[float, str]]
) -> None:
    assert carboplatin_aucs(text) == expected


def test_chemoradiation_shows_the_weekly_auc_2_dose_not_the_auc_5_dose() -> None:
    item = _item("Chemoradiation with weekly carboplatin AUC 2 and paclitaxel 45 mg/m2")
    # 2 x (81 + 25) = 212 mg; the AUC 5 dose (530 mg) appears nowhere
    note = dose_note("derived.carboplatin_gfr_ml_min", item, GFR)
    assert note == (
        "carboplatin AUC 2 weekly: 212 mg (Calvert, CrCl 81 mL/min (Cockcroft-Gault; actual "
        "weight 70 kg))"
    )


def test_keynote_522_shows_both_carboplatin_schedules() -> None:
    item = _item("with carboplatin AUC 1.5 weekly or AUC 5 every 3 weeks", "carboplatin")
    note = dose_note("derived.carboplatin_gfr_ml_min", item, GFR) or ""
    # 1.5 x 106 = 159 mg; 5 x 106 = 530 mg
    assert note.startswith(
        "carboplatin AUC 1.5 weekly: 159 mg; carboplatin AUC 5 every 3 weeks: 530 mg"
    )


def test_a_regimen_without_an_auc_gets_no_number() -> None:
    note = dose_note("derived.carboplatin_gfr_ml_min", _item("carboplatin x12 weeks"), GFR) or ""
    assert "states no target AUC, so no dose is given" in note
    assert " mg (Calvert" not in note.split("dose =")[0]


def test_without_kidney_function_the_dose_is_not_calculable() -> None:
    note = dose_note("derived.carboplatin_gfr_ml_min", _item("carboplatin AUC 5"), {})
    assert note is not None
    assert note.startswith("carboplatin dose not calculable")


def test_capecitabine_at_moderate_renal_impairment_reduces_only_the_1250_dose() -> None:
    item = _item("Capecitabine 1000-1250 mg/m2 twice daily days 1-14 every 3 weeks")
    facts: dict[str, Any] = {
        "derived.capecitabine_renal_dose_pct": 75,
        "derived.crcl_cockcroft_gault": 40,
        "derived.bsa_m2": 1.7,
    }
    note = dose_note("derived.capecitabine_renal_dose_pct", item, facts)
    # 75 % of 1250 = 937.5 -> 938 mg/m2; x 1.7 m2 = 1594 -> about 1590 mg
    assert note == (
        "capecitabine at 75 % for CrCl 40 mL/min: 1000 mg/m2 twice daily needs no reduction "
        "(label); 1250 -> 938 mg/m2 twice daily (about 1590 mg at BSA 1.7 m2)"
    )


def test_anthracycline_hepatic_reduction_applies_to_the_stated_dose() -> None:
    item = _item("Doxorubicin 60 mg/m2 with cyclophosphamide 600 mg/m2 every 3 weeks x4")
    facts = {"derived.doxorubicin_hepatic_dose_pct": 50, "labs.bilirubin_mg_dl": 2.1}
    note = dose_note("derived.doxorubicin_hepatic_dose_pct", item, facts)
    assert note == "doxorubicin at 50 % of the planned dose (bilirubin 2.1 mg/dL): 60 -> 30 mg/m2"


def test_the_gate_shows_each_item_the_dose_of_its_own_auc() -> None:
    # given chemoradiation (weekly AUC 2) and TCHP-like chemotherapy (AUC 6) in one plan
    draft = [
        _item("Chemoradiation with weekly carboplatin AUC 2 and paclitaxel", "carboplatin"),
        _item("Docetaxel, carboplatin AUC 6, trastuzumab, pertuzumab", "carboplatin"),
    ]
    rule = safety_rule(
        "common.gate.carboplatin-calvert",
        agents=["carboplatin"],
        severity="major",
        effect="adjust",
        advice="Calvert dosing for the AUC of this regimen",
        calculation="derived.carboplatin_gfr_ml_min",
    )
    # when the gate runs
    outcome = safety_gate(draft, [rule], facts=GFR)
    # then each item carries its own dose, readably, with the GFR it was based on
    first, second = (c.dose_adjustments for c in outcome.components)
    assert first[0].startswith(
        "Calvert dosing for the AUC of this regimen: carboplatin AUC 2 weekly: 212 mg (Calvert, "
        "CrCl 81 mL/min"
    )
    assert "carboplatin AUC 6: 636 mg" in second[0]
    assert "[" not in first[0] + second[0]  # no internal tag such as [carboplatin auc5 mg: ...]
