"""The case's situation read from its fields and free text, negation-aware, with its phrase."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.situations import recognise, situations


def _case(cancer: str, histology: str, notes: str = "", **extra: Any) -> dict[str, Any]:
    case: dict[str, Any] = {
        "cancer_type": cancer,
        "diagnosis": {"histology": histology},
        "notes": notes,
    }
    case.update(extra)
    return case


def _ids(case: dict[str, Any]) -> set[str]:
    return {s.id for s in recognise(case)}


def test_situations_emergency_is_read_with_its_phrase() -> None:
    # given a lung cancer whose notes describe a cord compression
    case = _case(
        "lung_adenocarcinoma",
        "lung adenocarcinoma",
        "Back pain for a week. MRI shows metastatic spinal cord compression at T6.",
    )
    # when the situation is read
    found = {s.id: s for s in recognise(case)}
    # then it is the emergency, shown with the sentence and field it came from
    compression = found["spinal_cord_compression"]
    assert compression.kind == "emergency"
    assert "MRI shows metastatic spinal cord compression at T6" in compression.phrase
    assert compression.source == "notes"
    assert situations(case).value == ["spinal_cord_compression"]


@pytest.mark.parametrize(
    "notes",
    [
        "MRI of the spine: vertebral metastases without cord compression.",
        "No leptomeningeal enhancement on brain MRI.",
        "Calcium normal, no hypercalcaemia.",
        "History of febrile neutropenia in 2019 after chemotherapy.",
        "Suspected transformation; PET-directed biopsy planned.",
        "Family history: sister treated for superior vena cava syndrome.",
    ],
)
def test_situations_negated_past_uncertain_or_family_mentions_do_not_count(notes: str) -> None:
    assert _ids(_case("breast", "invasive ductal carcinoma (NST)", notes)) == set()


def test_situations_non_small_cell_and_non_squamous_are_not_variants() -> None:
    case = _case("lung_adenocarcinoma", "non-small cell lung cancer, non-squamous")
    assert _ids(case) == set()


def test_situations_variant_histology_from_the_histology_field() -> None:
    case = _case("lung_adenocarcinoma", "pleomorphic (sarcomatoid) carcinoma of the lung")
    assert _ids(case) == {"sarcomatoid"}


def test_situations_a_lymphoma_in_the_history_is_not_the_tumours_histology() -> None:
    # a breast cancer survivor of Hodgkin lymphoma: the word is in the comorbidities only
    case = _case(
        "breast",
        "invasive lobular carcinoma",
        patient={"comorbidities": ["Hodgkin lymphoma 1998, mantle radiotherapy"]},
    )
    assert _ids(case) == set()
    # but a lymphoma in the histology field is not a breast carcinoma
    assert "lymphoma_in_solid_organ" in _ids(
        _case("breast", "diffuse large B-cell lymphoma of the breast")
    )


def test_situations_newer_biopsy_with_another_histology_is_a_change() -> None:
    # given an adenocarcinoma whose re-biopsy reads small-cell carcinoma
    case = _case(
        "lung_adenocarcinoma",
        "lung adenocarcinoma",
        "Re-biopsy of an enlarging liver metastasis in March 2026 shows small-cell carcinoma.",
    )
    assert {"histology_change", "lung_small_cell"} <= _ids(case)
    # a re-biopsy that confirms the same histology changes nothing
    same = _case(
        "lung_adenocarcinoma",
        "lung adenocarcinoma",
        "Re-biopsy at progression: adenocarcinoma, EGFR T790M detected.",
    )
    assert "histology_change" not in _ids(same)


def test_situations_indolent_lymphoma_with_an_aggressive_biopsy_is_a_transformation() -> None:
    case = _case(
        "lymphoma",
        "follicular lymphoma, grade 1-2",
        "A new biopsy of the enlarging node shows diffuse large B-cell lymphoma.",
    )
    found = _ids(case)
    assert "transformation" in found
    assert "lymphoma_entity:follicular" in found


def test_situations_primary_cns_lymphoma_is_a_site() -> None:
    case = _case("lymphoma", "primary CNS lymphoma, diffuse large B-cell type")
    assert "cns_lymphoma" in _ids(case)
    # a low CNS relapse risk is not a CNS relapse
    dlbcl = _case("lymphoma", "diffuse large B-cell lymphoma", "Low CNS relapse risk by CNS-IPI.")
    assert "cns_lymphoma" not in _ids(dlbcl)


def test_situations_current_emergency_written_with_a_date_still_counts() -> None:
    case = _case(
        "hcc",
        "hepatocellular carcinoma",
        "Developed a ruptured HCC with haemoperitoneum 2 days ago.",
    )
    assert "active_bleeding" in _ids(case)


@pytest.mark.parametrize(
    ("notes", "counts"),
    [
        ("Febrile neutropenia after cycle 1 of R-CHOP in October, recovered.", False),
        ("Acute variceal bleeding in 2019, banded.", False),
        ("Admitted yesterday with haematemesis and melaena.", True),
        ("Presented with hypercalcaemia 3 days ago, on IV fluids.", True),
        # an admission dated weeks back is a past episode, not the emergency before the board
        ("Admitted 6 weeks ago with haematemesis; varices banded four times.", False),
        ("Presented with melaena two months ago, treated endoscopically.", False),
        ("Admitted 10 days ago with haematemesis, still transfusion-dependent.", True),
    ],
)
def test_situations_a_past_emergency_is_not_one_now_a_recent_one_is(
    notes: str, counts: bool
) -> None:
    found = _ids(_case("hcc", "hepatocellular carcinoma", notes))
    emergencies = {"febrile_neutropenia", "active_bleeding", "hypercalcaemia"}
    assert bool(found & emergencies) is counts


def test_situations_transformed_from_an_indolent_lymphoma_in_the_histology() -> None:
    case = _case("lymphoma", "diffuse large B-cell lymphoma transformed from follicular lymphoma")
    assert "transformation" in _ids(case)


def test_situations_an_emergency_dated_weeks_before_the_cases_own_date_is_past() -> None:
    # given a bleed dated in the notes, read against the newest date the case records
    notes = "Admitted on 2026-01-03 with a ruptured HCC and haemoperitoneum."
    old = _case("hcc", "hepatocellular carcinoma", notes, labs={"date": "2026-03-01"})
    new = _case("hcc", "hepatocellular carcinoma", notes, labs={"date": "2026-01-05"})
    # then two months later it is history; two days later it is still the emergency
    assert "active_bleeding" not in _ids(old)
    assert "active_bleeding" in _ids(new)


def test_situations_brain_metastases_from_the_staging_count() -> None:
    case = _case("breast", "invasive ductal carcinoma (NST)", staging={"brain_metastases_count": 2})
    found = {s.id: s for s in recognise(case)}
    assert found["brain_metastases"].source == "staging.brain_metastases_count"
    assert "brain_metastases" not in _ids(
        _case("breast", "invasive ductal carcinoma (NST)", staging={"brain_metastases_count": 0})
    )


@pytest.mark.parametrize(
    "notes",
    [
        "Squamous cell carcinoma of the skin excised in 2015.",
        "Past medical history: squamous cell carcinoma of the larynx, treated with radiotherapy.",
    ],
)
def test_situations_another_tumours_histology_in_the_notes_is_not_a_variant(notes: str) -> None:
    assert _ids(_case("lung_adenocarcinoma", "lung adenocarcinoma", notes)) == set()


def test_situations_a_biopsy_of_a_metastasis_in_another_organ_is_the_index_tumour() -> None:
    notes = "Re-biopsy of a renal metastasis this month shows small-cell carcinoma."
    assert "lung_small_cell" in _ids(_case("lung_adenocarcinoma", "lung adenocarcinoma", notes))


@pytest.mark.parametrize(
    ("notes", "situation"),
    [
        ("Confused: corrected Ca 3.3 mmol/L.", "hypercalcaemia"),
        ("Bleeding from the fungating tumour since this morning.", "active_bleeding"),
        ("Impending cord compression at L1 on MRI.", "spinal_cord_compression"),
    ],
)
def test_situations_emergencies_in_other_words(notes: str, situation: str) -> None:
    assert situation in _ids(_case("breast", "invasive ductal carcinoma (NST)", notes))


def test_situations_a_bleeding_risk_is_not_a_bleeding() -> None:
    notes = "Counselled about the risk of tumour bleeding on bevacizumab."
    assert _ids(_case("hcc", "hepatocellular carcinoma", notes)) == set()
