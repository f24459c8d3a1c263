"""Facts read from free text with negation (symptomatic brain metastases, inoperability, bone
metastases, oligometastatic disease), the lung drivers from fields and pathology text, the
adjuvant CDK4/6 criteria and an explicit refusal of fertility preservation."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.breast import adjuvant_cdk46
from clinical.calculators.lung import (
    lung_cns_active_targeted,
    lung_drivers,
    lung_first_line_targeted,
)
from clinical.text.preferences import fertility_declined
from clinical.text.textfacts import (
    bone_metastases,
    brain_metastases_symptomatic,
    oligometastatic,
    recorded_inoperable,
    recorded_unresectable,
    steroids_for_brain_metastases,
)


def lung(**sections: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = {
        "cancer_type": "lung_adenocarcinoma",
        "patient": {"medications": []},
        "staging": {"brain_metastases_count": 0, "m": "M0"},
        "biomarkers": {},
        "organ_function": {"immunosuppression": "none", "autoimmune_activity": "none"},
        "index_lesion": {"description": None},
        "diagnosis": {"subtype": None},
        "notes": None,
    }
    for key, value in sections.items():
        case[key] = {**case[key], **value} if isinstance(case.get(key), dict) else value
    return case


@pytest.mark.parametrize(
    ("description", "symptomatic"),
    [
        ("two asymptomatic brain metastases (8 and 11 mm)", False),
        ("two brain metastases without oedema, neurologically asymptomatic", False),
        ("no seizures; 9 mm cerebellar metastasis", False),
        ("26 mm parietal metastasis with vasogenic oedema causing left arm weakness", True),
        ("one frontal metastasis; focal seizure at presentation", True),
        ("symptomatic brain metastasis", True),
    ],
)
def test_brain_metastases_symptoms_are_read_with_negation(
    description: str, symptomatic: bool
) -> None:
    case = lung(staging={"brain_metastases_count": 2}, index_lesion={"description": description})
    assert brain_metastases_symptomatic(case).value is symptomatic


def test_steroids_with_brain_metastases_count_as_symptoms_unless_autoimmune() -> None:
    case = lung(
        staging={"brain_metastases_count": 1},
        index_lesion={"description": "single 12 mm metastasis"},
        organ_function={"immunosuppression": "high_dose_steroids"},
    )
    assert brain_metastases_symptomatic(case).value is True
    assert steroids_for_brain_metastases(case).value is True
    case["organ_function"]["autoimmune_activity"] = "active"
    assert steroids_for_brain_metastases(case).value is False
    # without brain metastases steroids never count as "for brain oedema"
    case = lung(organ_function={"immunosuppression": "high_dose_steroids"})
    assert steroids_for_brain_metastases(case).value is False


def test_without_a_brain_metastasis_count_symptoms_are_unknown() -> None:
    case = lung(staging={"brain_metastases_count": None})
    assert brain_metastases_symptomatic(case).value is None


@pytest.mark.parametrize(
    ("notes", "inoperable", "unresectable"),
    [
        ("FEV1 68%: surgeon judged him operable for lobectomy", False, False),
        ("Thoracic surgery: unresectable (bulky multistation N2)", False, True),
        ("Medically inoperable (FEV1 30%, home oxygen)", True, False),
        ("single-station N2, judged resectable", False, False),
        ("not a surgical candidate because of cirrhosis", True, False),
    ],
)
def test_operability_and_resectability_are_read_from_the_record(
    notes: str, inoperable: bool, unresectable: bool
) -> None:
    case = lung(notes=notes, index_lesion={"description": "34 mm RUL mass"})
    assert recorded_inoperable(case).value is inoperable
    assert recorded_unresectable(case).value is unresectable


def test_no_text_at_all_is_unknown_not_false() -> None:
    assert recorded_inoperable(lung()).value is None


@pytest.mark.parametrize(
    ("description", "bone"),
    [
        ("multiple bone metastases (spine, pelvis)", True),
        ("liver and bone metastases", True),
        ("staging CT and bone scan: no bone metastases", False),
        ("35 mm mass, axillary nodes and multiple liver metastases", False),
    ],
)
def test_bone_metastases(description: str, bone: bool) -> None:
    assert bone_metastases(lung(index_lesion={"description": description})).value is bone


@pytest.mark.parametrize(
    ("m", "description", "oligo"),
    [
        ("M1b", "single adrenal metastasis", True),
        ("M1c", "oligometastatic disease: two liver lesions", True),
        ("M1c", "multiple liver and bone metastases", False),
        ("M0", "hilar node", False),
    ],
)
def test_oligometastatic(m: str, description: str, oligo: bool) -> None:
    case = lung(staging={"m": m}, index_lesion={"description": description})
    assert oligometastatic(case).value is oligo


def test_drivers_from_the_fields() -> None:
    case = lung(biomarkers={"egfr": "negative", "alk": "negative", "ros1": "positive"})
    assert lung_drivers(case).value == ["ros1"]
    assert lung_first_line_targeted(case).value is True
    assert lung_cns_active_targeted(case).value is True
    case = lung(biomarkers={"egfr": "negative", "kras": "G12C"})
    assert lung_drivers(case).value == ["kras_g12c"]
    assert lung_first_line_targeted(case).value is False


def test_drivers_without_a_field_are_read_from_the_pathology_text() -> None:
    case = lung(
        biomarkers={"egfr": "negative", "alk": "negative"},
        diagnosis={"subtype": "ERBB2 (HER2) exon 20 insertion on NGS; TPM3-NTRK1 fusion"},
    )
    assert lung_drivers(case).value == ["ntrk", "erbb2"]


@pytest.mark.parametrize(
    "text",
    [
        "No actionable driver on NGS (EGFR, ALK, ROS1, KRAS, BRAF, MET, RET negative)",
        "NTRK fusion negative; HER2 IHC 1+",
        "no ROS1 rearrangement",
    ],
)
def test_negated_or_non_driver_text_adds_no_driver(text: str) -> None:
    case = lung(biomarkers={"egfr": "negative"}, notes=text)
    assert lung_drivers(case).value == []


def test_a_recorded_field_is_not_overruled_by_the_text() -> None:
    case = lung(biomarkers={"ros1": "negative"}, notes="CD74-ROS1 fusion suspected on FISH")
    assert lung_drivers(case).value == []


def test_no_molecular_result_is_unknown() -> None:
    assert lung_drivers(lung()).value is None
    assert lung_first_line_targeted(lung()).value is None


def breast(t: str, n: str, histology: str = "", ki67: float | None = None) -> dict[str, Any]:
    return {
        "cancer_type": "breast",
        "staging": {"t": t, "n": n, "m": "M0", "tnm_edition": 8},
        "diagnosis": {"histology": histology},
        "biomarkers": {"ki67_pct": ki67},
    }


@pytest.mark.parametrize(
    ("t", "n", "histology", "ki67", "drug"),
    [
        ("T2", "N2", "", None, "abemaciclib"),  # 4 or more nodes
        ("T3", "N1", "", None, "abemaciclib"),  # 1-3 nodes and 5 cm or more
        ("T2", "N1", "invasive ductal carcinoma, grade 3", None, "abemaciclib"),
        ("T2", "N1", "grade 2", 25, "ribociclib"),  # node-positive stage IIB, not monarchE
        ("T2", "N0", "grade 3", None, "ribociclib"),  # node-negative IIA grade 3
        ("T2", "N0", "grade 2", 25, "ribociclib"),  # grade 2 with Ki-67 20 % or more
        ("T2", "N0", "grade 2", 10, "none"),
        ("T1c", "N0", "grade 3", None, "none"),  # stage IA
    ],
)
def test_adjuvant_cdk46_criteria(
    t: str, n: str, histology: str, ki67: float | None, drug: str
) -> None:
    assert adjuvant_cdk46(breast(t, n, histology, ki67)).value == drug


@pytest.mark.parametrize(
    ("text", "declined"),
    [
        ("has two children and does not want more children", True),
        ("declines fertility preservation", True),
        ("her family is complete", True),
        ("would like to have children after treatment", False),
        ("unsure about more children, wants to discuss", False),
        (None, False),
    ],
)
def test_fertility_declined_only_on_an_explicit_statement(text: str | None, declined: bool) -> None:
    assert fertility_declined({"patient": {"preferences": text}}).value is declined


def test_non_bulky_single_station_disease_is_not_read_as_unresectable() -> None:
    # given a resectable N2 described as "single station 4R (non-bulky)"
    case = lung(
        index_lesion={
            "description": "45 mm RUL mass; EBUS-TBNA positive in single station 4R "
            "(non-bulky), 4L/7 negative; surgeon: resectable by lobectomy"
        }
    )
    # then "non-bulky" states nothing, and bulky disease elsewhere still does
    assert recorded_unresectable(case).value is False
    bulky = lung(index_lesion={"description": "bulky multistation N2 disease"})
    assert recorded_unresectable(bulky).value is True
