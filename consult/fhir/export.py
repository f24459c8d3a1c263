"""Write a dossier as an mCODE STU4 patient Bundle and a signed plan as a FHIR CarePlan.

Pure: no Django. Standard codes (SNOMED CT, LOINC, HGNC, UCUM) wherever mCODE or US Core name
one; the other dossier fields travel as Observations in this application's own code system
(``CASE_FIELD_SYSTEM``, the field's path as code), and a prior therapy's keys that FHIR has no
element for in an extension, so that exporting and importing again gives the same facts. Every
document is validated with fhir.resources before it is returned.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import date
from typing import Any

from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.careplan import CarePlan

from clinical.vocab import STAGING_LABELS
from consult.casefile.fields import FIELDS, FIELDS_BY_PATH, FieldType
from consult.fhir import codes as c

# This application's code system for dossier fields without a standard code, and the
# extension that carries a prior therapy's keys (line, kind, best response, ...) whole.
CASE_FIELD_SYSTEM = "urn:mdtboard:case/1"
PRIOR_THERAPY_EXTENSION = "urn:mdtboard:case/1:prior-therapy"
PATIENT_BUNDLE = c.mcode("mcode-patient-bundle")
CANCER_PATIENT = c.mcode("mcode-cancer-patient")
DATA_ABSENT = "http://hl7.org/fhir/StructureDefinition/data-absent-reason"
PSEUDONYM_SYSTEM = "urn:mdtboard:pseudonym"
AGE_LOINC = "30525-0"
# Value of a list field recorded as empty (none), in CASE_FIELD_SYSTEM.
NONE_CODE = "none"

# One code per cancer type for the exported primary cancer condition (SNOMED CT disorders).
_CANCER_CODES: Mapping[str, tuple[str, str]] = {
    "breast": ("254837009", "Malignant neoplasm of breast"),
    "hcc": ("109841003", "Liver cell carcinoma"),
    "lung_adenocarcinoma": ("254626006", "Adenocarcinoma of lung"),
    "lymphoma": ("118600007", "Malignant lymphoma"),
}
_LATERALITY_CODES = {side: code for code, side in c.LATERALITY.items()}
_INTENT_CODES = {intent: code for code, intent in c.INTENTS.items()}
_STOP_CODES = {
    "progression": "266721009",
    "toxicity": "407563006",
    "intolerance": "407563006",
    "patient_choice": "105480006",
}
_HER2_ANSWER = {score: code for code, score in c.HER2_IHC_ANSWERS.items()}
_GENE_IDS = {gene: hgnc for hgnc, gene in c.GENES.items()}
# The first LOINC of each numeric field (codes.LABS) is the one written.
_FIELD_LOINC: dict[str, str] = {}
for _code, _lab in c.LABS.items():
    _FIELD_LOINC.setdefault(_lab.field, _code)
_QUALITATIVE_LOINC: dict[str, str] = {}
for _code, _path in c.QUALITATIVE.items():
    _QUALITATIVE_LOINC.setdefault(_path, _code)
_VITAL_FIELDS = frozenset(
    {"patient.weight_kg", "patient.height_cm", "organ_function.heart_rate_bpm"}
)
# Fields written with a standard code, so not repeated in the application's code system.
_STANDARD = frozenset(
    {
        "format",
        "case_id",
        "cancer_type",
        "question",
        "notes",
        "patient.pseudonym",
        "patient.age_years",
        "patient.sex",
        "patient.ecog",
        "patient.comorbidities",
        "patient.medications",
        "patient.allergies",
        "diagnosis.histology",
        "diagnosis.prior_therapies",
        "index_lesion.site",
        "index_lesion.laterality",
        "index_lesion.size_mm",
        "staging.t",
        "staging.n",
        "staging.m",
        "staging.tnm_edition",
        "staging.ann_arbor_stage",
        "staging.b_symptoms",
        "staging.bulky_disease",
        "biomarkers.her2",
        "biomarkers.egfr",
        "biomarkers.alk",
        "biomarkers.ros1",
        "biomarkers.kras",
        "biomarkers.braf",
        "biomarkers.met_exon14",
        "biomarkers.ret",
        "biomarkers.germline_brca",
        "biomarkers.ldh_uln_u_l",
        *_FIELD_LOINC,
        *_QUALITATIVE_LOINC,
    }
)


def _id(*parts: str) -> str:
    """A stable FHIR id (letters, digits, '-') from the dossier's identity and the element."""
    return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:32]


def _coding(system: str, code: str, display: str = "") -> dict[str, str]:
    out = {"system": system, "code": code}
    if display:
        out["display"] = display
    return out


def _concept(system: str, code: str, display: str = "", text: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"coding": [_coding(system, code, display)]}
    if text:
        out["text"] = text
    return out


def _answer(positive: bool) -> dict[str, Any]:
    return (
        _concept(c.LOINC, "LA6576-8", "Positive")
        if positive
        else _concept(c.LOINC, "LA6577-6", "Negative")
    )


class _Writer:
    def __init__(self, case: Mapping[str, Any], *, on: date) -> None:
        self.case = case
        self.on = on.isoformat()
        self.key = f"{case.get('case_id')}|{(case.get('patient') or {}).get('pseudonym')}"
        self.patient_id = _id(self.key, "patient")
        self.patient_ref = {"reference": f"Patient/{self.patient_id}"}
        self.entries: list[dict[str, Any]] = []

    def get(self, path: str) -> Any:
        spec = FIELDS_BY_PATH[path]
        holder = self.case if spec.parent is None else (self.case.get(spec.parent) or {})
        return holder.get(spec.key)

    def add(self, resource: dict[str, Any]) -> None:
        resource.setdefault("id", _id(self.key, resource["resourceType"], str(len(self.entries))))
        self.entries.append(
            {
                "fullUrl": f"urn:uuid:{uuid.UUID(resource['id'])}",
                "resource": resource,
            }
        )

    def observation(
        self,
        code: dict[str, Any],
        value: dict[str, Any],
        *,
        profile: str | None = None,
        category: str = "laboratory",
        **extra: Any,
    ) -> dict[str, Any]:
        resource: dict[str, Any] = {
            "resourceType": "Observation",
            "status": "final",
            "category": [
                _concept("http://terminology.hl7.org/CodeSystem/observation-category", category)
            ],
            "code": code,
            "subject": self.patient_ref,
            "effectiveDateTime": self.on,
            **value,
            **extra,
        }
        if profile:
            resource["meta"] = {"profile": [profile]}
        self.add(resource)
        return resource

    # ----- the sections

    def patient(self) -> None:
        pseudonym = str(self.get("patient.pseudonym") or "")
        resource: dict[str, Any] = {
            "resourceType": "Patient",
            "id": self.patient_id,
            "meta": {"profile": [CANCER_PATIENT]},
            # Pseudonymised: no name or identifier of the hospital ever leaves the board.
            "identifier": [{"system": PSEUDONYM_SYSTEM, "value": pseudonym}],
            "name": [{"extension": [{"url": DATA_ABSENT, "valueCode": "masked"}]}],
        }
        sex = self.get("patient.sex")
        if sex:
            resource["gender"] = sex
        self.entries.append(
            {"fullUrl": f"urn:uuid:{uuid.UUID(self.patient_id)}", "resource": resource}
        )
        age = self.get("patient.age_years")
        if age is not None:
            self.observation(
                _concept(c.LOINC, AGE_LOINC, "Age"),
                {"valueQuantity": {"value": age, "unit": "years", "system": c.UCUM, "code": "a"}},
                category="survey",
            )

    def primary_cancer(self) -> None:
        cancer = str(self.get("cancer_type") or "other")
        code, display = _CANCER_CODES.get(cancer, ("", ""))
        concept: dict[str, Any] = (
            _concept(c.SNOMED, code, display) if code else {"text": "Cancer (other type)"}
        )
        if not code:
            concept["coding"] = [_coding(CASE_FIELD_SYSTEM, "cancer_type:other", "other cancer")]
        resource: dict[str, Any] = {
            "resourceType": "Condition",
            "meta": {"profile": [c.PRIMARY_CANCER]},
            "clinicalStatus": _concept(c.CONDITION_CLINICAL, "active"),
            "verificationStatus": _concept(c.CONDITION_VERIFICATION, "confirmed"),
            "category": [
                _concept(
                    "http://terminology.hl7.org/CodeSystem/condition-category",
                    "problem-list-item",
                )
            ],
            "code": concept,
            "subject": self.patient_ref,
        }
        histology = self.get("diagnosis.histology")
        if histology:
            resource["extension"] = [
                {"url": c.EXT_HISTOLOGY, "valueCodeableConcept": {"text": histology}}
            ]
        site = self.get("index_lesion.site")
        side = self.get("index_lesion.laterality")
        if site or side:
            body: dict[str, Any] = {"text": site or "site not recorded"}
            if side:
                body["extension"] = [
                    {
                        "url": c.EXT_LATERALITY,
                        "valueCodeableConcept": _concept(
                            c.SNOMED, _LATERALITY_CODES[side], side.capitalize()
                        ),
                    }
                ]
            resource["bodySite"] = [body]
        self.add(resource)
        self.primary_ref = {"reference": f"urn:uuid:{uuid.UUID(resource['id'])}"}

    def staging(self) -> None:
        edition = self.get("staging.tnm_edition")
        method = (
            {"method": _concept(c.SNOMED, c.AJCC_8TH_METHOD, "AJCC 8th edition")}
            if edition == 8
            else {}
        )
        for axis, code, display in (
            ("t", "78873005", "T category"),
            ("n", "277206009", "N category"),
            ("m", "277208005", "M category"),
        ):
            value = self.get(f"staging.{axis}")
            if value:
                self.observation(
                    _concept(c.SNOMED, code, display),
                    {"valueCodeableConcept": _concept(c.AJCC, value, value)},
                    profile=c.mcode(
                        {
                            "t": "mcode-tnm-primary-tumor-category",
                            "n": "mcode-tnm-regional-nodes-category",
                            "m": "mcode-tnm-distant-metastases-category",
                        }[axis]
                    ),
                    category="survey",
                    focus=[self.primary_ref],
                    **method,
                )
        stage = self.get("staging.ann_arbor_stage")
        if stage:
            b = self.get("staging.b_symptoms")
            suffix = "B" if b is True else ("A" if b is False else "")
            extra: dict[str, Any] = {}
            bulky = self.get("staging.bulky_disease")
            if bulky is not None:
                extra["component"] = [
                    {
                        "code": _concept(c.SNOMED, c.BULKY_COMPONENT, "Bulky disease status"),
                        "valueCodeableConcept": _concept(
                            c.SNOMED,
                            "52101004" if bulky else "2667000",
                            "Present" if bulky else "Absent",
                        ),
                    }
                ]
            self.observation(
                _concept(c.SNOMED, "385388004", "Lymphoma stage"),
                {"valueCodeableConcept": {"text": f"Ann Arbor stage {stage}{suffix}"}},
                profile=c.mcode("mcode-lymphoma-stage"),
                category="survey",
                focus=[self.primary_ref],
                **extra,
            )
        size = self.get("index_lesion.size_mm")
        if size is not None:
            self.observation(
                _concept(c.LOINC, c.TUMOR_SIZE, "Tumor size"),
                {},
                profile=c.mcode("mcode-tumor-size"),
                component=[
                    {
                        "code": _concept(c.LOINC, c.TUMOR_LONGEST_DIMENSION, "Longest dimension"),
                        "valueQuantity": {
                            "value": size,
                            "unit": "mm",
                            "system": c.UCUM,
                            "code": "mm",
                        },
                    }
                ],
            )

    def performance(self) -> None:
        ecog = self.get("patient.ecog")
        if ecog is not None:
            self.observation(
                _concept(c.LOINC, c.ECOG, "ECOG performance status"),
                {"valueInteger": ecog},
                profile=c.mcode("mcode-ecog-performance-status"),
                category="survey",
            )

    def measurements(self) -> None:
        for path, code in _FIELD_LOINC.items():
            value = self.get(path)
            if value is None:
                continue
            lab = c.LABS[code]
            spec = FIELDS_BY_PATH[path]
            extra: dict[str, Any] = {}
            if path == c.LDH_FIELD and self.get(c.LDH_ULN_FIELD) is not None:
                extra["referenceRange"] = [
                    {
                        "high": {
                            "value": self.get(c.LDH_ULN_FIELD),
                            "unit": "U/L",
                            "system": c.UCUM,
                            "code": "U/L",
                        }
                    }
                ]
            marker = path.startswith("biomarkers.")
            self.observation(
                _concept(c.LOINC, code, spec.name),
                {
                    "valueQuantity": {
                        "value": value,
                        "unit": spec.unit or lab.unit,
                        "system": c.UCUM,
                        "code": lab.unit,
                    }
                },
                profile=c.mcode("mcode-tumor-marker-test") if marker else None,
                category="vital-signs" if path in _VITAL_FIELDS else "laboratory",
                **extra,
            )
        for path, code in _QUALITATIVE_LOINC.items():
            value = self.get(path)
            if value in ("positive", "negative"):
                self.observation(
                    _concept(c.LOINC, code, FIELDS_BY_PATH[path].name),
                    {"valueCodeableConcept": _answer(value == "positive")},
                )
        her2 = self.get("biomarkers.her2")
        if her2:
            score = her2.split("_", 1)[0]
            self.observation(
                _concept(c.LOINC, "85319-2", "HER2 by immunohistochemistry"),
                {"valueCodeableConcept": _concept(c.LOINC, _HER2_ANSWER[score], score)},
                profile=c.mcode("mcode-tumor-marker-test"),
            )
            if her2.startswith("2+_ish_"):
                self.observation(
                    _concept(c.LOINC, "85318-4", "ERBB2 gene duplication by FISH"),
                    {"valueCodeableConcept": _answer(her2.endswith("positive"))},
                    profile=c.mcode("mcode-tumor-marker-test"),
                )

    def variants(self) -> None:
        changes = {
            "exon19del": "EGFR exon 19 deletion",
            "exon20ins": "EGFR exon 20 insertion",
            "L858R": "p.L858R",
            "G12C": "p.G12C",
            "V600E": "p.V600E",
        }
        for path, gene in (
            ("biomarkers.egfr", "EGFR"),
            ("biomarkers.alk", "ALK"),
            ("biomarkers.ros1", "ROS1"),
            ("biomarkers.kras", "KRAS"),
            ("biomarkers.braf", "BRAF"),
            ("biomarkers.met_exon14", "MET"),
            ("biomarkers.ret", "RET"),
        ):
            value = self.get(path)
            if value is None:
                continue
            change = changes.get(value, "")
            if gene == "MET" and value == "positive":
                change = "MET exon 14 skipping"
            self.variant(gene, present=value != "negative", change=change)
        brca = self.get("biomarkers.germline_brca")
        if brca in ("BRCA1", "BRCA2"):
            self.variant(brca, present=True, change="", germline=True)
        elif brca == "negative":
            self.variant("BRCA1", present=False, change="", germline=True)
            self.variant("BRCA2", present=False, change="", germline=True)

    def variant(self, gene: str, *, present: bool, change: str, germline: bool = False) -> None:
        components: list[dict[str, Any]] = [
            {
                "code": _concept(c.LOINC, "48018-6", "Gene studied"),
                "valueCodeableConcept": _concept(c.HGNC, _GENE_IDS[gene], gene),
            }
        ]
        if change:
            components.append(
                {
                    "code": _concept(c.LOINC, "48005-3", "Amino acid change"),
                    "valueCodeableConcept": {"text": change},
                }
            )
        source = ("LA6683-2", "Germline") if germline else ("LA6684-0", "Somatic")
        components.append(
            {
                "code": _concept(c.LOINC, "48002-0", "Genomic source class"),
                "valueCodeableConcept": _concept(c.LOINC, *source),
            }
        )
        self.observation(
            _concept(c.LOINC, "69548-6", "Genetic variant assessment"),
            {
                "valueCodeableConcept": _concept(c.LOINC, "LA9633-4", "Present")
                if present
                else _concept(c.LOINC, "LA9634-2", "Absent")
            },
            profile=c.mcode("mcode-genomic-variant"),
            component=components,
        )

    def lists(self) -> None:
        for text in self.get("patient.comorbidities") or []:
            self.add(
                {
                    "resourceType": "Condition",
                    "clinicalStatus": _concept(c.CONDITION_CLINICAL, "active"),
                    "verificationStatus": _concept(c.CONDITION_VERIFICATION, "confirmed"),
                    "code": {"text": text},
                    "subject": self.patient_ref,
                }
            )
        for text in self.get("patient.medications") or []:
            self.add(
                {
                    "resourceType": "MedicationStatement",
                    "status": "active",
                    "medicationCodeableConcept": {"text": text},
                    "subject": self.patient_ref,
                }
            )
        for text in self.get("patient.allergies") or []:
            self.add(
                {
                    "resourceType": "AllergyIntolerance",
                    "clinicalStatus": _concept(
                        "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical",
                        "active",
                    ),
                    "code": {"text": text},
                    "patient": self.patient_ref,
                }
            )

    def therapies(self) -> None:
        for entry in self.get("diagnosis.prior_therapies") or []:
            self.therapy(entry)

    def therapy(self, entry: Mapping[str, Any]) -> None:
        kind = entry.get("kind")
        regimen = entry.get("regimen") or "treatment (not named)"
        start, end = entry.get("start_date"), entry.get("end_date")
        reason = entry.get("stop_reason")
        extensions: list[dict[str, Any]] = []
        intent = entry.get("intent")
        if intent in _INTENT_CODES:
            extensions.append(
                {
                    "url": c.EXT_PROCEDURE_INTENT,
                    "valueCodeableConcept": _concept(c.SNOMED, _INTENT_CODES[intent], intent),
                }
            )
        # Every key FHIR has no element for travels whole, so the round trip is exact.
        inner: list[dict[str, Any]] = []
        for key, value in entry.items():
            if value is None:
                continue
            if key == "toxicity" and isinstance(value, Mapping):
                for sub, part in value.items():
                    if part is not None:
                        inner.append(_value_extension(f"toxicity.{sub}", part))
            else:
                inner.append(_value_extension(key, value))
        extensions.append({"url": PRIOR_THERAPY_EXTENSION, "extension": inner})
        status_reason = (
            {"statusReason": _concept(c.SNOMED, _STOP_CODES[reason], reason)}
            if reason in _STOP_CODES
            else {}
        )
        if kind == "systemic":
            timing: dict[str, Any] = {}
            if start:
                bounds = {"start": start, **({"end": end} if end else {})}
                timing = {"dosageInstruction": [{"timing": {"repeat": {"boundsPeriod": bounds}}}]}
            self.add(
                {
                    "resourceType": "MedicationRequest",
                    "meta": {"profile": [next(iter(sorted(c.CANCER_MEDICATION_PROFILES)))]},
                    "extension": extensions,
                    "status": "active"
                    if not end and reason is None
                    else ("completed" if reason in (None, "completed") else "stopped"),
                    "intent": "order",
                    "medicationCodeableConcept": {"text": regimen},
                    "subject": self.patient_ref,
                    "reasonReference": [self.primary_ref],
                    **({"authoredOn": start} if start else {}),
                    **timing,
                    **({"statusReason": status_reason["statusReason"]} if status_reason else {}),
                }
            )
            return
        profile = {
            "operation": [c.SURGICAL_PROCEDURE],
            "radiotherapy": [c.RADIOTHERAPY_COURSE],
        }.get(str(kind))
        code: dict[str, Any] = {"text": regimen}
        if kind == "radiotherapy":
            code["coding"] = [_coding(c.SNOMED, "1217123003", "Radiotherapy course of treatment")]
        performed: dict[str, Any] = {}
        if start and end and start != end:
            performed = {"performedPeriod": {"start": start, "end": end}}
        elif start or end:
            performed = {"performedDateTime": start or end}
        resource: dict[str, Any] = {
            "resourceType": "Procedure",
            "extension": extensions,
            "status": "completed" if end else "in-progress",
            "code": code,
            "subject": self.patient_ref,
            "reasonReference": [self.primary_ref],
            **performed,
            **status_reason,
        }
        if profile:
            resource["meta"] = {"profile": profile}
        self.add(resource)

    def other_fields(self) -> None:
        """Dossier fields with no standard code: this application's code system."""
        for spec in FIELDS:
            if spec.path in _STANDARD or spec.parent is None:
                continue
            value = self.get(spec.path)
            if value is None or value == []:
                continue
            self.observation(
                _concept(CASE_FIELD_SYSTEM, spec.path, spec.label),
                _typed_value(spec.type, value),
                category="survey",
            )
        notes = self.case.get("notes")
        if notes:
            self.observation(
                _concept(CASE_FIELD_SYSTEM, "notes", "Notes"),
                {"valueString": notes},
                category="survey",
            )

    def recorded_none(self) -> None:
        """A list recorded as empty ("no allergies") is a fact, unlike a missing list."""
        for path in (
            "patient.comorbidities",
            "patient.medications",
            "patient.allergies",
            "diagnosis.prior_therapies",
        ):
            if self.get(path) == []:
                self.observation(
                    _concept(CASE_FIELD_SYSTEM, path, FIELDS_BY_PATH[path].name),
                    {"valueCodeableConcept": _concept(CASE_FIELD_SYSTEM, NONE_CODE, "none")},
                    category="survey",
                )

    def bundle(self) -> dict[str, Any]:
        self.patient()
        self.primary_cancer()
        self.staging()
        self.performance()
        self.measurements()
        self.variants()
        self.lists()
        self.therapies()
        self.recorded_none()
        self.other_fields()
        return {
            "resourceType": "Bundle",
            "id": _id(self.key, "bundle"),
            "meta": {"profile": [PATIENT_BUNDLE]},
            "type": "collection",
            "timestamp": f"{self.on}T00:00:00Z",
            "entry": self.entries,
        }


def _typed_value(kind: FieldType, value: Any) -> dict[str, Any]:
    if kind is FieldType.BOOL:
        return {"valueBoolean": value}
    if kind is FieldType.INT:
        return {"valueInteger": value}
    if kind is FieldType.NUMBER:
        return {"valueQuantity": {"value": value}}
    if kind is FieldType.ENUM:
        return {"valueCodeableConcept": _concept(CASE_FIELD_SYSTEM, str(value), str(value))}
    if kind is FieldType.LIST_STR:
        return {"valueString": "\n".join(value)}
    return {"valueString": str(value)}


def _value_extension(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"url": key, "valueBoolean": value}
    if isinstance(value, int):
        return {"url": key, "valueInteger": value}
    if isinstance(value, float):
        return {"url": key, "valueDecimal": value}
    return {"url": key, "valueString": str(value)}


def dossier_bundle(case: Mapping[str, Any], *, on: date) -> dict[str, Any]:
    """The case as an mCODE patient Bundle (collection), validated by fhir.resources.
    ``on`` dates the observations: the case file itself carries no dates for its values."""
    document = _Writer(case, on=on).bundle()
    Bundle.model_validate(document)
    return document


def plan_careplan(
    plan: Mapping[str, Any],
    *,
    pseudonym: str,
    case_id: str,
    signed_by: str,
    signed_at: str,
    decision: str = "",
    dissent: str = "",
    plan_version: int = 1,
    facts: str = "",
) -> dict[str, Any]:
    """The signed plan as a FHIR CarePlan: the pathway and alternatives as activities, the
    MDT decision, dissent, the staging and the evidence as notes, validated by fhir.resources.
    ``facts`` says where the staging comes from (the snapshot and its calculators)."""
    recommendation = plan.get("recommendation") or {}
    activities: list[dict[str, Any]] = []
    for component in recommendation.get("components") or []:
        role = component.get("role")
        label = (
            f"Pathway step {component.get('order')}"
            if role == "primary"
            else f"Alternative {component.get('rank')}: {component.get('when') or ''}".strip()
        )
        detail: dict[str, Any] = {
            "kind": "MedicationRequest"
            if component.get("modality") == "systemic"
            else "ServiceRequest",
            "code": {"text": f"{component.get('modality')}: {component.get('description')}"},
            "status": "not-started" if role == "primary" else "on-hold",
            "description": label
            + (
                "; dose adjustments: " + "; ".join(component["dose_adjustments"])
                if component.get("dose_adjustments")
                else ""
            ),
        }
        agents = [a for a in component.get("agents") or [] if a]
        if agents and component.get("modality") == "systemic":
            detail["productCodeableConcept"] = {"text": ", ".join(agents)}
        evidence = component.get("evidence") or []
        activity: dict[str, Any] = {"detail": detail}
        if evidence:
            activity["progress"] = [{"text": "Evidence: " + ", ".join(map(str, evidence))}]
        activities.append(activity)
    notes = []
    if decision:
        notes.append({"text": f"MDT decision: {decision}"})
    if dissent:
        notes.append({"text": f"Dissent recorded: {dissent}"})
    notes.append({"text": f"Signed by {signed_by} on {signed_at} (plan version {plan_version})."})
    staging = [
        f"{STAGING_LABELS.get(key, key)} {value}"
        for key, value in (plan.get("staging") or {}).items()
        if value is not None
    ]
    if staging:
        # The plan's own staging block: derived when the dossier was submitted and frozen with
        # its snapshot, so the export says what the board deliberated on.
        notes.append(
            {"text": f"Staging ({facts or 'as derived for the plan'}): " + "; ".join(staging)}
        )
    for rejected in plan.get("rejected_options") or []:
        notes.append({"text": f"Not advised: {rejected.get('option')} — {rejected.get('reason')}"})
    for item in plan.get("evidence") or []:
        notes.append(
            {
                "text": "Evidence "
                + " · ".join(
                    str(item.get(k))
                    for k in ("unit_id", "source", "anchor", "version", "grade")
                    if item.get(k)
                )
            }
        )
    document: dict[str, Any] = {
        "resourceType": "CarePlan",
        "id": _id(case_id, pseudonym, "careplan", str(plan_version)),
        "status": "active",
        "intent": "plan",
        "title": f"MDT plan for {pseudonym} ({case_id})",
        "subject": {
            "identifier": {"system": PSEUDONYM_SYSTEM, "value": pseudonym},
            "display": pseudonym,
        },
        "created": signed_at,
        "category": [{"text": f"tumour board plan ({recommendation.get('intent') or 'n/a'})"}],
        "activity": activities,
        "note": notes,
    }
    if recommendation.get("summary"):
        document["description"] = recommendation["summary"]
    CarePlan.model_validate(document)
    return document
