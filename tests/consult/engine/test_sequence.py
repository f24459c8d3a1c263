"""The primary pathway lists its steps in the order they are given."""

from __future__ import annotations

from typing import Any

from consult.engine.pathway import arrange
from consult.engine.schemas import ProposedComponent


def _step(description: str, modality: str = "systemic", **fields: Any) -> ProposedComponent:
    return ProposedComponent(description=description, modality=modality, **fields)


def _order(*steps: ProposedComponent) -> list[str]:
    return [c.description for c in arrange(list(steps)).primary]


def test_local_therapy_of_a_symptomatic_brain_metastasis_comes_before_the_targeted_drug() -> None:
    assert _order(
        _step("Osimertinib 80 mg once daily until progression"),
        _step(
            "Stereotactic radiosurgery to symptomatic brain metastases, with dexamethasone",
            "radiotherapy",
            adjunct=True,
        ),
        _step("Brain MRI every 2-3 months", "surveillance", adjunct=True),
    ) == [
        "Stereotactic radiosurgery to symptomatic brain metastases, with dexamethasone",
        "Osimertinib 80 mg once daily until progression",
        "Brain MRI every 2-3 months",
    ]


def test_fertility_preservation_and_steps_said_to_come_before_chemotherapy_come_first() -> None:
    assert _order(
        _step("ABVD x4"),
        _step("Entecavir from before the first chemotherapy cycle", "antiviral"),
        _step("Sperm cryopreservation with fertility counselling", "referral", adjunct=True),
    ) == [
        "Entecavir from before the first chemotherapy cycle",
        "Sperm cryopreservation with fertility counselling",
        "ABVD x4",
    ]


def test_neoadjuvant_then_surgery_then_adjuvant_therapy_and_radiotherapy() -> None:
    adjuvant = _step("Aromatase inhibitor for 5 years", adjunct=True, with_modalities=["surgery"])
    assert _order(
        _step("Neoadjuvant TCHP x6, then surgery; HER2 therapy to 1 year after surgery"),
        _step("After surgery: trastuzumab to complete 1 year", adjunct=True),
        _step("Whole-breast radiotherapy", "radiotherapy", adjunct=True),
        _step("Surgery 3-6 weeks after neoadjuvant therapy", "surgery", adjunct=True),
        adjuvant,
    ) == [
        "Neoadjuvant TCHP x6, then surgery; HER2 therapy to 1 year after surgery",
        "Surgery 3-6 weeks after neoadjuvant therapy",
        "After surgery: trastuzumab to complete 1 year",
        "Whole-breast radiotherapy",
        "Aromatase inhibitor for 5 years",
    ]


def test_once_daily_is_not_a_step_that_comes_later() -> None:
    assert (
        _order(
            _step("Lenvatinib 12 mg once daily"),
            _step("Best supportive care and pain control", "supportive", adjunct=True),
        )[0]
        == "Lenvatinib 12 mg once daily"
    )
