"""Dossiers written as mCODE Bundles and plans as CarePlans: valid FHIR, and a dossier exported
then imported again gives the same facts."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.careplan import CarePlan

from consult.casefile.validate import case_to_canonical
from consult.fhir.export import dossier_bundle, plan_careplan
from consult.fhir.mapping import map_bundle
from consult.fhir.parse import parse_bundle_bytes
from tests.consult.unit.test_casefile_prior_therapies import breast_after_surgery_and_two_lines
from tests.paths import public_case_files

ON = date(2026, 6, 1)


def _round_trip(case: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(dossier_bundle(case, on=ON)).encode()
    parsed = parse_bundle_bytes(raw, filename="export.json")
    assert parsed.ok, parsed.errors
    mapping = map_bundle(
        parsed,
        as_of=ON,
        pseudonym=case["patient"]["pseudonym"],
        case_id=case["case_id"],
        question=case["question"],
    )
    return mapping.case


@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_public_case_exported_and_imported_again_gives_the_same_facts(path: Path) -> None:
    data = json.loads(path.read_text())
    data.pop("expected")
    case = case_to_canonical(data)
    assert _round_trip(case) == case


def test_the_prior_therapy_history_survives_the_round_trip() -> None:
    case = case_to_canonical(breast_after_surgery_and_two_lines())
    again = _round_trip(case)
    assert again["diagnosis"]["prior_therapies"] == case["diagnosis"]["prior_therapies"]


def test_the_export_is_an_mcode_patient_bundle_without_identifiers() -> None:
    data = json.loads(public_case_files()[0].read_text())
    data.pop("expected")
    document = dossier_bundle(case_to_canonical(data), on=ON)
    bundle = Bundle.model_validate(document)
    assert document["meta"]["profile"] == [
        "http://hl7.org/fhir/us/mcode/StructureDefinition/mcode-patient-bundle"
    ]
    patient = bundle.entry[0].resource
    assert patient.get_resource_type() == "Patient"
    assert patient.identifier[0].value == data["patient"]["pseudonym"]
    assert patient.birthDate is None  # the dossier holds an age, never a birth date
    kinds = {e.resource.get_resource_type() for e in bundle.entry}
    assert {"Patient", "Condition", "Observation"} <= kinds


def test_a_plan_becomes_a_valid_careplan_with_its_pathway_decision_and_evidence() -> None:
    plan = {
        "format": "mdtboard.plan/1",
        "recommendation": {
            "summary": "Resection of segment VI with entecavir.",
            "intent": "curative",
            "components": [
                {
                    "role": "primary",
                    "order": 1,
                    "modality": "surgery",
                    "description": "laparoscopic resection of segment VI",
                    "agents": [],
                    "evidence": ["hcc-easl-2025-resection"],
                },
                {
                    "role": "alternative",
                    "rank": 1,
                    "when": "if the patient declines surgery",
                    "modality": "ablation",
                    "description": "thermal ablation",
                    "agents": [],
                    "evidence": [],
                },
            ],
        },
        "rejected_options": [{"option": "sorafenib", "reason": "early stage"}],
        "evidence": [{"unit_id": "hcc-easl-2025-resection", "source": "EASL 2025", "anchor": "R4"}],
    }
    document = plan_careplan(
        plan,
        pseudonym="HCC-001",
        case_id="pub-hcc-01",
        signed_by="Dr A",
        signed_at="2026-06-01T10:00:00+00:00",
        decision="Resection",
        dissent="Radiology preferred ablation",
    )
    careplan = CarePlan.model_validate(document)
    assert careplan.status == "active"
    assert careplan.intent == "plan"
    assert len(careplan.activity) == 2
    assert "laparoscopic resection" in careplan.activity[0].detail.code.text
    assert careplan.activity[1].detail.status == "on-hold"
    notes = " ".join(n.text for n in careplan.note)
    assert "MDT decision: Resection" in notes
    assert "Dissent recorded: Radiology preferred ablation" in notes
    assert "EASL 2025" in notes
    assert "Not advised: sorafenib" in notes
