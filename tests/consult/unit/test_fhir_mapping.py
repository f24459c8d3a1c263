"""FHIR R4 / mCODE bundles read into case files: every mapped field with its provenance, what is
not imported and why, conflicts, units and the question's date."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from clinical.calculators import derive_all
from consult.casefile.validate import validate_case
from consult.fhir.mapping import FhirMapping, Mapped, MappingError, map_bundle
from consult.fhir.parse import parse_bundle_bytes, parse_bundle_data

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fhir"
JENNY = FIXTURES / "Bundle-mcode-patient-bundle-jenny-m.json"
LOINC, SNOMED, UCUM = "http://loinc.org", "http://snomed.info/sct", "http://unitsofmeasure.org"


def _map(data: Any, *, as_of: date = date(2026, 6, 1)) -> FhirMapping:
    parsed = parse_bundle_data(data, filename="t.json")
    assert parsed.ok, parsed.errors
    return map_bundle(parsed, as_of=as_of, pseudonym="T-1", case_id="t-1")


def _file(name: str, **kwargs: Any) -> FhirMapping:
    return _map(json.loads((FIXTURES / name).read_text()), **kwargs)


def _value(mapping: FhirMapping, field: str) -> Mapped:
    found = [m for m in mapping.values if m.field == field]
    assert len(found) == 1, (field, [m.field for m in mapping.values])
    return found[0]


def _not_imported(mapping: FhirMapping, resource: str) -> list[str]:
    return [n.reason for n in mapping.not_imported if n.resource == resource]


def _bundle(*resources: dict[str, Any]) -> dict[str, Any]:
    patient = {"resourceType": "Patient", "id": "p1", "gender": "female", "birthDate": "1960-03-01"}
    return {
        "resourceType": "Bundle",
        "type": "collection",
        "entry": [{"resource": r} for r in (patient, *resources)],
    }


def _obs(code: str, when: str, rid: str, system: str = LOINC, **value: Any) -> dict[str, Any]:
    return {
        "resourceType": "Observation",
        "id": rid,
        "status": "final",
        "code": {"coding": [{"system": system, "code": code}]},
        "subject": {"reference": "Patient/p1"},
        "effectiveDateTime": when,
        **value,
    }


# --------------------------------------------------------------------------- Jenny M (HL7)


@pytest.fixture(scope="module")
def jenny() -> FhirMapping:
    return _map(json.loads(JENNY.read_text()))


def test_jenny_m_patient_and_primary_cancer(jenny: FhirMapping) -> None:
    case = jenny.case
    assert case["cancer_type"] == "breast"
    cancer = _value(jenny, "cancer_type").source
    assert cancer.resource == "Condition/primary-cancer-condition-jenny-m"
    assert (cancer.system, cancer.code) == (SNOMED, "353431000119107")
    # born 1965-01-01: 61 on the question's date
    assert case["patient"]["age_years"] == 61
    assert "born 1965-01-01" in _value(jenny, "patient.age_years").source.note
    assert case["patient"]["sex"] == "female"
    assert case["diagnosis"]["histology"] == "Infiltrating duct carcinoma"
    assert _value(jenny, "diagnosis.histology").source.code == "82711006"
    assert case["index_lesion"]["laterality"] == "left"


def test_jenny_m_staging_size_and_performance(jenny: FhirMapping) -> None:
    staging = jenny.case["staging"]
    assert (staging["t"], staging["n"], staging["m"], staging["tnm_edition"]) == (
        "T3",
        "N0",
        "M0",
        8,
    )
    t = _value(jenny, "staging.t").source
    assert t.resource == "Observation/tnm-clinical-primary-tumor-category-jenny-m"
    assert t.date == "2018-03-16"
    assert jenny.case["index_lesion"]["size_mm"] == 25
    assert "2.5 cm converted to 25 mm" in _value(jenny, "index_lesion.size_mm").source.note
    assert jenny.case["patient"]["ecog"] == 0
    ecog = _value(jenny, "patient.ecog").source
    assert (ecog.system, ecog.code) == (LOINC, "89247-1")
    # 155 [lb_av] -> kg through UCUM
    assert jenny.case["patient"]["weight_kg"] == 70.31


def test_jenny_m_treatments_already_given(jenny: FhirMapping) -> None:
    therapies = jenny.case["diagnosis"]["prior_therapies"]
    assert [(t["kind"], t["intent"], t["line"]) for t in therapies] == [
        ("operation", "curative", 0),
        ("systemic", "curative", 0),
        ("radiotherapy", "curative", 0),
        ("systemic", "curative", 0),
    ]
    assert therapies[0]["regimen"] == "Excision of part of breast"
    assert therapies[0]["start_date"] == "2018-04-01"
    # AC started together, paclitaxel within two weeks: one regimen; anastrozole months later
    assert therapies[1]["regimen"] == "cyclophosphamide + doxorubicin + paclitaxel"
    assert therapies[2]["start_date"] == "2018-08-15"
    assert therapies[2]["end_date"] == "2018-10-25"
    assert "31 sessions" in therapies[2]["regimen"]
    assert therapies[3]["regimen"] == "anastrozole"
    assert "anastrozole" in jenny.case["patient"]["medications"]


def test_jenny_m_lists_what_is_not_imported_and_why(jenny: FhirMapping) -> None:
    patient = _not_imported(jenny, "Patient/cancer-patient-jenny-m")
    assert any("direct identifier" in r for r in patient)
    assert _not_imported(jenny, "Practitioner/us-core-practitioner-owen-oncologist")
    assert any(
        "family history" in r
        for r in _not_imported(jenny, "FamilyMemberHistory/family-member-history-aunt-jenny-m")
    )
    assert any(
        "diagnostic procedure" in r
        for r in _not_imported(jenny, "Procedure/us-core-procedure-biopsy-jenny-m")
    )
    # ER "positive" has no percentage: not placed in er_pct, kept in the notes
    assert any(
        "percentage" in r for r in _not_imported(jenny, "Observation/tumor-marker-test-er-jenny-m")
    )
    assert "ER positive" in jenny.case["notes"]
    assert jenny.case["biomarkers"]["er_pct"] is None
    # HER2 "negative" could be 0, 1+ or 2+ ISH-negative: never guessed
    assert jenny.case["biomarkers"]["her2"] is None
    # 3000 "10*3/uL" neutrophils is 3,000,000 x10^9/L: refused, not rescaled
    anc = _not_imported(jenny, "Observation/us-core-observation-lab-neutrophils-jenny-m")
    assert any("outside the plausible range" in r for r in anc)
    assert jenny.case["labs"]["anc_10e9_l"] is None
    stage = _not_imported(jenny, "Observation/tnm-clinical-stage-group-jenny-m")
    assert any("derived by the board" in r for r in stage)


def test_jenny_m_case_is_valid_and_lists_what_the_board_still_needs(jenny: FhirMapping) -> None:
    assert validate_case(jenny.case, filename="x") == []
    derived = derive_all(jenny.case)
    assert derived["breast_subtype"].value is None
    assert "biomarkers.er_pct" in derived["breast_subtype"].inputs_missing


def test_the_question_date_sets_the_age_and_leaves_out_later_results() -> None:
    mapping = _map(json.loads(JENNY.read_text()), as_of=date(2018, 6, 1))
    assert mapping.case["patient"]["age_years"] == 53
    later = _not_imported(mapping, "Procedure/radiotherapy-treatment-summary-chest-wall-jenny-m")
    assert any("after the question's date" in r for r in later)
    assert [t["kind"] for t in mapping.case["diagnosis"]["prior_therapies"]] == [
        "operation",
        "systemic",
    ]


# --------------------------------------------------------------------------- own bundles


def test_hcc_bundle_gives_the_child_pugh_inputs_in_the_dossier_units() -> None:
    mapping = _file("hcc-child-pugh.json", as_of=date(2026, 1, 15))
    case = mapping.case
    assert case["cancer_type"] == "hcc"
    assert _value(mapping, "cancer_type").source.code == "C22.0"
    labs = case["labs"]
    assert labs["bilirubin_mg_dl"] == pytest.approx(1.497, abs=0.001)  # 25.6 umol/L
    assert labs["albumin_g_dl"] == 3.2  # 32 g/L
    assert labs["inr"] == 1.3
    assert labs["creatinine_mg_dl"] == 1  # 88.4 umol/L
    assert labs["platelets_10e9_l"] == 95  # 95 10*3/uL
    assert labs["hbsag"] == "positive"
    assert case["organ_function"]["ascites"] == "mild"
    assert case["organ_function"]["encephalopathy"] == "none"
    assert case["biomarkers"]["afp_ng_ml"] == 420
    assert case["index_lesion"]["size_mm"] == 42
    [tace] = case["diagnosis"]["prior_therapies"]
    assert (tace["kind"], tace["line"], tace["start_date"]) == ("locoregional", 0, "2025-11-03")
    assert case["patient"]["medications"] == ["entecavir"]
    assert case["patient"]["allergies"] == ["iodinated contrast"]
    derived = derive_all(case)
    assert derived["child_pugh_score"].value == 7
    assert derived["child_pugh_class"].value == "B"


def test_two_ecog_observations_take_the_latest_and_show_the_other() -> None:
    mapping = _file("hcc-child-pugh.json", as_of=date(2026, 1, 15))
    ecog = _value(mapping, "patient.ecog")
    assert ecog.value == 1
    assert ecog.source.date == "2025-10-01"
    [(other, source)] = ecog.others
    assert other == 2
    assert source.date == "2025-06-01"


def test_lymphoma_bundle_gives_ann_arbor_ldh_and_the_relapse() -> None:
    mapping = _file("lymphoma-dlbcl-relapse.json", as_of=date(2026, 1, 15))
    case = mapping.case
    assert case["cancer_type"] == "lymphoma"
    assert case["diagnosis"]["histology"] == "Diffuse large B-cell lymphoma"
    assert case["diagnosis"]["setting"] == "progressive"
    staging = case["staging"]
    assert (staging["ann_arbor_stage"], staging["b_symptoms"], staging["bulky_disease"]) == (
        "III",
        True,
        True,
    )
    assert staging["t"] is None
    biomarkers = case["biomarkers"]
    assert (biomarkers["ldh_u_l"], biomarkers["ldh_uln_u_l"], biomarkers["cd20"]) == (
        420,
        250,
        "positive",
    )
    assert case["labs"]["hemoglobin_g_dl"] == 11.8  # 118 g/L
    [chop] = case["diagnosis"]["prior_therapies"]
    assert (
        chop["regimen"] == "cyclophosphamide + doxorubicin + prednisone + rituximab + vincristine"
    )
    assert (chop["intent"], chop["line"], chop["stop_reason"]) == ("curative", 0, "completed")
    assert derive_all(case)["ann_arbor_stage"].value == "III"


def test_lung_bundle_gives_the_driver_and_reads_karnofsky_as_ecog() -> None:
    mapping = _file("lung-egfr-brain.json", as_of=date(2026, 1, 15))
    case = mapping.case
    assert case["cancer_type"] == "lung_adenocarcinoma"
    assert case["biomarkers"]["egfr"] == "exon19del"
    assert case["biomarkers"]["alk"] == "negative"
    assert case["biomarkers"]["pdl1_tps_pct"] == 60
    assert (case["staging"]["t"], case["staging"]["n"], case["staging"]["m"]) == (
        "T2a",
        "N2",
        "M1b",
    )
    assert case["index_lesion"]["laterality"] == "right"
    assert case["patient"]["ecog"] == 1
    assert "Karnofsky 80" in _value(mapping, "patient.ecog").source.note
    # the brain metastasis is kept in the notes; the count is not invented
    assert case["staging"]["brain_metastases_count"] is None
    assert "Secondary malignant neoplasm of brain" in case["notes"]


def test_lung_cancer_not_recorded_as_adenocarcinoma_is_not_the_adenocarcinoma_pathway() -> None:
    data = json.loads((FIXTURES / "lung-egfr-brain.json").read_text())
    for entry in data["entry"]:
        resource = entry["resource"]
        if resource.get("id") == "lung-primary":
            resource.pop("extension")
    mapping = _map(data, as_of=date(2026, 1, 15))
    assert mapping.case["cancer_type"] == "other"
    assert "not recorded as adenocarcinoma" in _value(mapping, "cancer_type").source.note


# --------------------------------------------------------------------------- units, codes


def test_an_unreadable_or_mismatched_unit_is_refused_not_guessed() -> None:
    mapping = _map(
        _bundle(
            _obs(
                "1975-2",
                "2026-01-01",
                "bili",
                valueQuantity={"value": 2, "code": "mg/dX", "system": UCUM},
            ),
            _obs(
                "1751-7",
                "2026-01-01",
                "alb",
                valueQuantity={"value": 0.5, "code": "mmol/L", "system": UCUM},
            ),
            _obs(
                "2160-0",
                "2026-01-01",
                "crea",
                valueQuantity={"value": 1.1, "code": "mg/dL", "system": "http://example.org/units"},
            ),
        )
    )
    labs = mapping.case["labs"]
    assert (labs["bilirubin_mg_dl"], labs["albumin_g_dl"], labs["creatinine_mg_dl"]) == (
        None,
        None,
        None,
    )
    assert any("not a UCUM unit" in r for r in _not_imported(mapping, "Observation/bili"))
    assert any(
        "does not measure the same thing" in r for r in _not_imported(mapping, "Observation/alb")
    )
    assert any("not a UCUM code" in r for r in _not_imported(mapping, "Observation/crea"))


def test_her2_2plus_is_placed_only_with_its_ish_result() -> None:
    ihc = _obs(
        "85319-2",
        "2026-01-01",
        "ihc",
        valueCodeableConcept={"coding": [{"system": LOINC, "code": "LA11842-4", "display": "2+"}]},
    )
    ish = _obs(
        "85318-4",
        "2026-01-03",
        "ish",
        valueCodeableConcept={"coding": [{"system": LOINC, "code": "LA6577-6"}]},
    )
    assert _map(_bundle(ihc, ish)).case["biomarkers"]["her2"] == "2+_ish_negative"
    alone = _map(_bundle(ihc))
    assert alone.case["biomarkers"]["her2"] is None
    assert any("needs its ISH result" in r for r in _not_imported(alone, "Observation/ihc"))


def test_germline_brca_negative_needs_both_genes() -> None:
    def brca(gene: str, hgnc: str) -> dict[str, Any]:
        return _obs(
            "69548-6",
            "2026-01-01",
            gene.lower(),
            valueCodeableConcept={"coding": [{"system": LOINC, "code": "LA9634-2"}]},
            component=[
                {
                    "code": {"coding": [{"system": LOINC, "code": "48018-6"}]},
                    "valueCodeableConcept": {
                        "coding": [{"system": "http://www.genenames.org", "code": hgnc}]
                    },
                },
                {
                    "code": {"coding": [{"system": LOINC, "code": "48002-0"}]},
                    "valueCodeableConcept": {"coding": [{"system": LOINC, "code": "LA6683-2"}]},
                },
            ],
        )

    one = _map(_bundle(brca("BRCA1", "HGNC:1100")))
    assert one.case["biomarkers"]["germline_brca"] is None
    both = _map(_bundle(brca("BRCA1", "HGNC:1100"), brca("BRCA2", "HGNC:1101")))
    assert both.case["biomarkers"]["germline_brca"] == "negative"


def test_a_stopped_palliative_drug_becomes_a_numbered_line_with_its_stop_reason() -> None:
    def request(drug: str, start: str, end: str, status: str, reason: str = "") -> dict[str, Any]:
        resource: dict[str, Any] = {
            "resourceType": "MedicationRequest",
            "id": drug,
            "meta": {
                "profile": [
                    "http://hl7.org/fhir/us/mcode/StructureDefinition/mcode-cancer-related-medication-request"
                ]
            },
            "extension": [
                {
                    "url": "http://hl7.org/fhir/us/mcode/StructureDefinition/mcode-procedure-intent",
                    "valueCodeableConcept": {"coding": [{"system": SNOMED, "code": "363676003"}]},
                }
            ],
            "status": status,
            "intent": "order",
            "medicationCodeableConcept": {"text": drug},
            "subject": {"reference": "Patient/p1"},
            "dosageInstruction": [
                {"timing": {"repeat": {"boundsPeriod": {"start": start, "end": end}}}}
            ],
        }
        if reason:
            resource["statusReason"] = {"coding": [{"system": SNOMED, "code": reason}]}
        return resource

    mapping = _map(
        _bundle(
            request("carboplatin", "2025-01-10", "2025-04-01", "completed"),
            request("pemetrexed", "2025-01-10", "2025-09-01", "stopped", "266721009"),
            request("docetaxel", "2025-10-01", "2025-12-01", "stopped", "407563006"),
        )
    )
    first, second = mapping.case["diagnosis"]["prior_therapies"]
    assert (first["line"], first["regimen"], first["stop_reason"]) == (
        1,
        "carboplatin + pemetrexed",
        "progression",
    )
    assert (second["line"], second["regimen"], second["stop_reason"]) == (
        2,
        "docetaxel",
        "toxicity",
    )


def test_bundle_of_two_patients_is_refused_with_its_path() -> None:
    data = _bundle({"resourceType": "Patient", "id": "p2"})
    with pytest.raises(MappingError) as caught:
        _map(data)
    assert caught.value.path == "Bundle.entry[1].resource"
    assert "2 patients" in caught.value.message


def test_a_birth_year_alone_gives_no_age_unless_it_is_unambiguous() -> None:
    data = _bundle()
    data["entry"][0]["resource"]["birthDate"] = "1960"
    mapping = _map(data)
    assert mapping.case["patient"]["age_years"] is None
    assert any("too imprecise" in r for r in _not_imported(mapping, "Patient/p1"))


def test_resources_of_another_patient_are_not_imported() -> None:
    obs = _obs("89247-1", "2026-01-01", "ecog", valueInteger=2)
    obs["subject"] = {"reference": "Patient/somebody-else"}
    mapping = _map(_bundle(obs))
    assert mapping.case["patient"]["ecog"] is None
    assert _not_imported(mapping, "Observation/ecog") == ["it belongs to another patient"]


def test_mapping_time_is_linear_in_the_bundle() -> None:
    from tests.linearity import assert_linear

    base = json.loads(JENNY.read_text())

    def make(size: int) -> bytes:
        data = copy.deepcopy(base)
        data["entry"] = data["entry"][:1] + data["entry"][1:] * size
        return json.dumps(data).encode()

    def run(raw: object) -> object:
        assert isinstance(raw, bytes)
        parsed = parse_bundle_bytes(raw, filename="x")
        return map_bundle(parsed, as_of=date(2026, 6, 1), pseudonym="T", case_id="t")

    assert_linear(make, run, small=5, large=20)
