"""The medspaCy reader's facts in the facts the rules read (knowledge/notes.py via
knowledge.applicability.case_facts): filled only where the dossier is empty, structured wins,
disagreements flagged, every filled fact shown with its sentence."""

from __future__ import annotations

from datetime import date

from clinical.applicability import case_facts
from clinical.text.notes import complete_from_notes, reference_date


def _case(**sections: object) -> dict[str, object]:
    case: dict[str, object] = {"cancer_type": "breast", "patient": {}, "organ_function": {}}
    case.update(sections)
    return case


def test_case_facts_fill_empty_fields_from_the_notes_with_their_sentence() -> None:
    # given facts written only in the free text
    case = _case(
        patient={"comorbidities": ["idiopathic pulmonary fibrosis"]},
        notes="DPYD*2A/*2A on genotyping. Grade 3 immune colitis on ipilimumab in 2024.",
    )
    # when the rules' facts are built
    facts = case_facts(case)
    # then the structured facts are set, and each is listed with the words it came from
    assert facts["organ_function.interstitial_lung_disease"] is True
    assert facts["biomarkers.dpd_status"] == "complete_deficiency"
    assert facts["patient.prior_irae_organ"] == "colon"
    assert facts["patient.prior_irae_grade"] == 3
    shown = {f["fact"]: f for f in facts["derived.from_text"]}
    assert shown["biomarkers.dpd_status"]["phrase"] == "DPYD*2A/*2A on genotyping."
    assert shown["biomarkers.dpd_status"]["source"] == "notes"
    assert shown["organ_function.interstitial_lung_disease"]["source"] == "patient.comorbidities"


def test_case_facts_the_structured_field_wins_and_the_disagreement_is_flagged() -> None:
    case = _case(
        organ_function={"interstitial_lung_disease": False},
        notes="HRCT: UIP pattern, idiopathic pulmonary fibrosis.",
    )
    facts = case_facts(case)
    assert facts["organ_function.interstitial_lung_disease"] is False
    disagreement = next(
        d
        for d in facts["derived.text_disagreements"]
        if d["fact"] == "organ_function.interstitial_lung_disease"
    )
    assert disagreement["structured"] is False
    assert "UIP" in disagreement["phrase"]


def test_case_facts_negated_and_family_mentions_leave_the_field_empty() -> None:
    case = _case(notes="Mother had IPF. Her sister is DPYD*2A/*2A. Risk of pneumonitis discussed.")
    facts = case_facts(case)
    assert facts.get("organ_function.interstitial_lung_disease") is None
    assert facts.get("biomarkers.dpd_status") is None
    assert not [f for f in facts["derived.from_text"] if f["fact"].startswith("biomarkers.dpd")]


def test_case_facts_facts_without_a_field_reach_the_rules() -> None:
    case = _case(
        patient={"medications": ["apixaban 5 mg bd"]},
        notes="History of radiation pneumonitis in 2019.",
    )
    facts = case_facts(case)
    assert facts["patient.anticoagulant"] == "apixaban"
    assert facts["organ_function.prior_pneumonitis"] is True
    assert facts.get("organ_function.interstitial_lung_disease") is None


def test_a_recorded_endoscopy_gives_the_varices_value() -> None:
    case = _case(
        cancer_type="hcc",
        organ_function={
            "endoscopy_date": "2026-09-01",
            "endoscopy_varices_size": "small",
            "endoscopy_red_signs": True,
            "endoscopy_varices_treated": False,
        },
    )
    completed, _filled, _disagreements, _read = complete_from_notes(case)
    assert completed["organ_function"]["varices"] == "large_untreated"


def test_recency_counts_from_the_newest_date_of_the_case() -> None:
    case = _case(
        cancer_type="hcc",
        diagnosis={"prior_therapies": [{"regimen": "TACE", "end_date": "2026-06-30"}]},
        notes="Variceal bleed 4 weeks ago, banded.",
    )
    assert reference_date(case, today=date(2026, 11, 27)) == date(2026, 6, 30)
    facts = case_facts(case)
    assert facts["organ_function.recent_bleeding_site"] == "variceal"
    assert facts["organ_function.recent_bleeding_date"] == "2026-06-02"


def test_a_bleed_written_with_the_verb_is_read_with_its_date() -> None:
    # given a variceal bleed the notes tell with "bled from", eight months before the case
    case = _case(
        cancer_type="hcc",
        index_lesion={"imaging_date": "2026-11-20"},
        notes=(
            "Bled from oesophageal varices in March 2026 (eight months ago); banded over three "
            "sessions. Varices eradicated at the check gastroscopy."
        ),
    )
    facts = case_facts(case)
    # then the bleed is on record with its site and date, older than six months
    assert facts["organ_function.recent_bleeding_site"] == "variceal"
    assert str(facts["organ_function.recent_bleeding_date"]).startswith("2026-03")
    assert facts["derived.bleeding_within_6_months"] is False


def test_no_bleeding_from_varices_denies_the_bleed_not_the_varices() -> None:
    # given notes that deny a bleed from varices the patient has
    case = _case(cancer_type="hcc", notes="Has varices but no history of bleeding from varices.")
    facts = case_facts(case)
    # then the varices are not read as absent (an anti-VEGF gate must not pass on this)
    assert facts.get("organ_function.varices") != "none"
    # and a plain denial still reads as none
    assert case_facts(_case(notes="Endoscopy: no varices."))["organ_function.varices"] == "none"
