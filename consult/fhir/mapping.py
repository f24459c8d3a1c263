"""Map a validated FHIR R4 Bundle (mCODE STU4 / US Core) to an mdtboard.case/1 document.

Pure: no Django, no database. Every value placed in the case keeps where it came from (resource
type and id, code and system, date); every resource or element left out is listed with the
reason; two values for one field keep the latest by effective date and show the other. One
pass over the entries, dictionaries for every lookup: linear in the size of the bundle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from consult.casefile.fields import (
    FIELDS_BY_PATH,
    FORMAT_ID,
    PRIOR_THERAPY_FIELDS,
    TNM_CODES,
    Field,
    FieldType,
)
from consult.casefile.validate import case_to_canonical, validate_case
from consult.fhir import codes as c
from consult.fhir.export import CASE_FIELD_SYSTEM, NONE_CODE, PRIOR_THERAPY_EXTENSION
from consult.fhir.parse import ParsedBundle
from consult.fhir.units import DIMENSIONLESS, UnitError, convert

DEFAULT_QUESTION = "What is the recommended management of the index lesion?"
MAX_DISTINCT_UNITS = 200
MAX_NOT_IMPORTED_KEPT = 1000
# Identifiers, names and contact details never enter the board: patients are pseudonymised.
_DIRECT_IDENTIFIERS = ("identifier", "name", "telecom", "address", "contact", "photo")
# Resources that carry no fact of the dossier, with the reason shown on the review screen.
_NOT_CLINICAL: Mapping[str, str] = {
    "Practitioner": "a member of staff, not a fact about the patient",
    "PractitionerRole": "a member of staff, not a fact about the patient",
    "Organization": "an organisation, not a fact about the patient",
    "Location": "a place, not a fact about the patient",
    "Encounter": "a visit; its findings are read from their own resources",
    "Specimen": "a specimen; its results are read from their observations",
    "BodyStructure": "a body structure description, not a dossier field",
    "DiagnosticReport": "a report grouping results; each result is read from its observation",
    "FamilyMemberHistory": "family history is not a dossier field",
    "ServiceRequest": "an order, not a result",
    "Group": "a group of patients",
    "Provenance": "record-keeping metadata",
    "Coverage": "insurance, not a clinical fact",
    "CareTeam": "the care team, not a clinical fact",
    "DocumentReference": "a document; free text is not read from attachments",
    "Composition": "the document's table of contents; its entries are read one by one",
    "Immunization": "immunisations are not a dossier field",
    "ImagingStudy": "an imaging study; its findings are read from observations",
    "Device": "a device, not a dossier field",
    "Media": "media, not a dossier field",
}


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Source:
    """Where a value came from, as the review screen shows it beside the field."""

    resource: str
    path: str
    code: str = ""
    system: str = ""
    display: str = ""
    date: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, str]:
        return {
            "resource": self.resource,
            "path": self.path,
            "code": self.code,
            "system": self.system,
            "display": self.display,
            "date": self.date,
            "note": self.note,
        }


@dataclass
class Mapped:
    """One dossier field filled from the record; ``others`` are the values not chosen."""

    field: str
    value: Any
    source: Source
    others: list[tuple[Any, Source]] = dc_field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "value": self.value,
            "source": self.source.as_dict(),
            "others": [{"value": v, "source": s.as_dict()} for v, s in self.others[:10]],
            "others_count": len(self.others),
        }


@dataclass(frozen=True)
class NotImported:
    """A resource or element of the bundle that is not in the dossier, and why."""

    path: str
    resource: str
    what: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "resource": self.resource,
            "what": self.what,
            "reason": self.reason,
        }


@dataclass
class FhirMapping:
    """The case made from a bundle, with the provenance of every value in it."""

    case: dict[str, Any]
    values: list[Mapped]
    not_imported: list[NotImported]
    patient_id: str | None
    entries: int

    def provenance(self) -> dict[str, Any]:
        """Everything the review screen and the stored import record show, as JSON."""
        return {
            "values": [m.as_dict() for m in self.values],
            # Bounded: the list travels in the review form and is stored with the dossier; a
            # junk bundle can have tens of thousands of items, the first ones say enough.
            "not_imported": [n.as_dict() for n in self.not_imported[:MAX_NOT_IMPORTED_KEPT]],
            "not_imported_total": len(self.not_imported),
            "entries": self.entries,
        }


class MappingError(ValueError):
    """The bundle cannot be read as one patient's record; ``path`` names where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


# --------------------------------------------------------------------------- small readers


def _codings(concept: Any) -> list[Any]:
    return list(getattr(concept, "coding", None) or []) if concept is not None else []


def _text_of(concept: Any) -> str:
    """A concept's human label: its text, else the first coding's display, else its code."""
    if concept is None:
        return ""
    text = getattr(concept, "text", None)
    if text:
        return str(text)
    for coding in _codings(concept):
        if coding.display:
            return _clean(str(coding.display))
    for coding in _codings(concept):
        if coding.code:
            return str(coding.code)
    return ""


# SNOMED fully specified names end with their semantic tag: "(disorder)", "(procedure)".
_TAG = re.compile(
    r"\s*\((?:disorder|finding|procedure|body structure|morphologic abnormality|qualifier value|"
    r"observable entity|situation|substance|product|medicinal product|regime/therapy|"
    r"tumor staging|event|attribute)\)\s*$",
    re.I,
)


def _clean(text: str) -> str:
    return _TAG.sub("", text).strip()


def _first_code(concept: Any, systems: Iterable[str] | None = None) -> tuple[str, str, str]:
    """(code, system, display) of the first coding (of one of ``systems``), else empties."""
    wanted = tuple(systems) if systems is not None else None
    for coding in _codings(concept):
        system = str(coding.system or "")
        if wanted is None or system in wanted:
            return str(coding.code or ""), system, _clean(str(coding.display or ""))
    return "", "", _text_of(concept)


def _has_code(concept: Any, codes: Iterable[str]) -> tuple[str, str] | None:
    wanted = set(codes)
    for coding in _codings(concept):
        if coding.code and str(coding.code) in wanted:
            return str(coding.code), str(coding.system or "")
    return None


def _profiles(resource: Any) -> set[str]:
    meta = getattr(resource, "meta", None)
    return {str(p).split("|", 1)[0] for p in (getattr(meta, "profile", None) or [])}


def _extensions(holder: Any, url: str) -> list[Any]:
    return [e for e in (getattr(holder, "extension", None) or []) if e.url == url]


def _iso(value: Any) -> str:
    """A FHIR date, dateTime or instant as yyyy-mm-dd (partial dates kept as given)."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)[:10]


def _period(period: Any) -> tuple[str, str]:
    if period is None:
        return "", ""
    return _iso(period.start), _iso(period.end)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    return None


def _tidy(value: float) -> int | float:
    """Four significant digits, an integer when whole: 70.30681735 kg -> 70.31."""
    rounded = float(f"{value:.4g}")
    return int(rounded) if rounded.is_integer() else rounded


def _in_range(spec: Field, value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return True
    if spec.minimum is not None and value < spec.minimum:
        return False
    return spec.maximum is None or value <= spec.maximum


def _range_text(spec: Field) -> str:
    unit = f" {spec.unit}" if spec.unit else ""
    return f"{spec.minimum:g}\u2013{spec.maximum:g}{unit}"


def _reference_key(reference: Any) -> str:
    """ "Patient/123" of a Reference (absolute URLs and history suffixes removed)."""
    text = str(getattr(reference, "reference", "") or "")
    text = text.split("/_history/", 1)[0]
    parts = text.rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 else text


# --------------------------------------------------------------------------- the mapper


@dataclass
class _Candidate:
    value: Any
    source: Source
    rank: tuple[Any, ...]


class _Mapper:
    def __init__(self, parsed: ParsedBundle, *, as_of: date) -> None:
        self.parsed = parsed
        self.as_of = as_of
        self.as_of_iso = as_of.isoformat()
        self.resources = parsed.resources
        self.candidates: dict[str, list[_Candidate]] = {}
        self.lists: dict[str, dict[str, Mapped]] = {}
        self.not_imported: list[NotImported] = []
        self.notes: list[str] = []
        self.therapies: list[tuple[dict[str, Any], Source]] = []
        self.drug_courses: list[_DrugCourse] = []
        self.by_key: dict[str, tuple[int, Any]] = {}
        for index, resource in self.resources:
            rid = getattr(resource, "id", None)
            if rid:
                self.by_key[f"{resource.get_resource_type()}/{rid}"] = (index, resource)
        # entry.fullUrl ("urn:uuid:..." or absolute) also resolves references.
        bundle = parsed.bundle
        for index, entry in enumerate((bundle.entry or []) if bundle is not None else []):
            if entry.fullUrl and entry.resource is not None:
                self.by_key[str(entry.fullUrl)] = (index, entry.resource)
        self.patient_key: str | None = None
        self.imported_notes = ""
        self.units_seen: set[str] = set()
        self.recorded_none: dict[str, Source] = {}
        self.her2_ihc_2plus: Source | None = None
        self.her2_ish: list[tuple[str, Source]] = []
        self.brca_negative: dict[str, Source] = {}
        self.cancer_type: str | None = None
        self.primary_key: str | None = None

    # ----- helpers

    def source(
        self, index: int, resource: Any, concept: Any = None, *, when: str = "", note: str = ""
    ) -> Source:
        code, system, display = _first_code(concept) if concept is not None else ("", "", "")
        rid = getattr(resource, "id", None) or f"entry {index}"
        return Source(
            resource=f"{resource.get_resource_type()}/{rid}",
            path=f"Bundle.entry[{index}].resource",
            code=code,
            system=system,
            display=display,
            date=when,
            note=note,
        )

    def skip(
        self, index: int, resource: Any, reason: str, what: str = "", element: str = ""
    ) -> None:
        rid = getattr(resource, "id", None) or f"entry {index}"
        path = f"Bundle.entry[{index}].resource" + (f".{element}" if element else "")
        self.not_imported.append(
            NotImported(path, f"{resource.get_resource_type()}/{rid}", what, reason)
        )

    def offer(self, path: str, value: Any, source: Source, *, priority: int = 0) -> None:
        """A value for a single-valued field; the latest (then the higher priority) wins."""
        spec = FIELDS_BY_PATH[path]
        if not _in_range(spec, value):
            self.not_imported.append(
                NotImported(
                    source.path,
                    source.resource,
                    f"{spec.name}: {value:g}"
                    if isinstance(value, float)
                    else f"{spec.name}: {value}",
                    f"outside the plausible range {_range_text(spec)}; check the value and its "
                    "unit in the record (nothing is guessed)",
                )
            )
            return
        rank = (source.date or "", priority, len(self.candidates.get(path, [])))
        self.candidates.setdefault(path, []).append(_Candidate(value, source, rank))

    def add_to_list(self, path: str, text: str, source: Source) -> None:
        text = " ".join(text.split())
        if not text:
            return
        key = text.casefold()
        held = self.lists.setdefault(path, {})
        if key in held:
            held[key].others.append((text, source))
        else:
            held[key] = Mapped(path, text, source)

    def after_question(self, when: str) -> bool:
        return bool(when) and len(when) >= 10 and when > self.as_of_iso

    def for_patient(self, resource: Any) -> bool:
        subject = getattr(resource, "subject", None) or getattr(resource, "patient", None)
        if subject is None or self.patient_key is None:
            return True
        key = _reference_key(subject)
        if key in self.by_key:
            return self.by_key[key][1] is self.by_key.get(self.patient_key, (0, None))[1]
        return key == self.patient_key or not key.startswith("Patient/")

    # ----- the passes

    def run(self) -> None:
        patients = [(i, r) for i, r in self.resources if r.get_resource_type() == "Patient"]
        distinct = {getattr(r, "id", None) or i for i, r in patients}
        if len(distinct) > 1:
            raise MappingError(
                f"Bundle.entry[{patients[1][0]}].resource",
                f"The bundle holds the records of {len(distinct)} patients; import one "
                "patient's record at a time.",
            )
        if patients:
            index, patient = patients[0]
            self.patient_key = f"Patient/{patient.id}" if patient.id else None
            self.patient(index, patient)
        primaries = self.find_primary_cancers()
        self.primary(primaries)
        handlers = {
            "Condition": self.condition,
            "Observation": self.observation,
            "Procedure": self.procedure,
            "MedicationRequest": self.medication,
            "MedicationAdministration": self.medication,
            "MedicationStatement": self.medication,
            "AllergyIntolerance": self.allergy,
        }
        handled_primary = {key for key, _ in primaries}
        for index, resource in self.resources:
            kind = resource.get_resource_type()
            if kind == "Patient":
                continue
            if kind in _NOT_CLINICAL:
                self.skip(index, resource, _NOT_CLINICAL[kind])
                continue
            if kind == "Medication":
                self.skip(index, resource, "read through the prescriptions that reference it")
                continue
            if not self.for_patient(resource):
                self.skip(index, resource, "it belongs to another patient")
                continue
            handler = handlers.get(kind)
            if handler is None:
                self.skip(index, resource, f"{kind} resources are not mapped to dossier fields")
                continue
            if kind == "Condition" and self.key_of(index, resource) in handled_primary:
                continue
            handler(index, resource)
        self.finish_drug_courses()
        self.finish_her2_and_brca()

    def key_of(self, index: int, resource: Any) -> str:
        rid = getattr(resource, "id", None)
        return f"{resource.get_resource_type()}/{rid}" if rid else f"entry {index}"

    # ----- Patient

    def patient(self, index: int, patient: Any) -> None:
        for element in _DIRECT_IDENTIFIERS:
            if getattr(patient, element, None):
                self.skip(
                    index,
                    patient,
                    "a direct identifier: the board keeps pseudonymised patients only",
                    element,
                    element,
                )
        if getattr(patient, "extension", None):
            self.skip(
                index,
                patient,
                "race, ethnicity and birth-sex extensions are not dossier fields",
                "extension",
                "extension",
            )
        gender = getattr(patient, "gender", None)
        if gender in ("female", "male", "other"):
            self.offer("patient.sex", gender, self.source(index, patient, note=f"gender {gender}"))
        elif gender:
            self.skip(index, patient, f"gender {gender!r} has no counterpart", "gender", "gender")
        birth = getattr(patient, "birthDate", None)
        if birth is not None:
            age = _age(birth, self.as_of)
            if age is None:
                self.skip(
                    index,
                    patient,
                    f"the birth date {_iso(birth)} is too imprecise to give the age on "
                    f"{self.as_of_iso}",
                    "birthDate",
                    "birthDate",
                )
            else:
                note = f"born {_iso(birth)}; age on {self.as_of_iso}, the question's date"
                self.offer("patient.age_years", age, self.source(index, patient, note=note))
        if getattr(patient, "deceasedBoolean", None) or getattr(patient, "deceasedDateTime", None):
            self.skip(
                index, patient, "the record says the patient has died", "deceased", "deceased"
            )

    # ----- cancer conditions

    def cancer_of(self, concept: Any) -> tuple[str | None, str | None, str, str]:
        """(cancer type or "lung" or None, histology from the code, how it was read, code)."""
        for coding in _codings(concept):
            code = str(coding.code or "")
            system = str(coding.system or "")
            if system == c.SNOMED and code in c.SNOMED_CANCERS:
                known = c.SNOMED_CANCERS[code]
                return known.cancer_type, known.histology, "SNOMED CT code", code
            if system == c.SNOMED and code in c.SNOMED_LUNG:
                return "lung", None, "SNOMED CT code", code
            if system in c.ICD10:
                found = c.icd10_cancer(code)
                if found:
                    return found, None, "ICD-10 code", code
            if system == c.ICDO3 and code[:1].upper() == "C":
                found = c.icd10_cancer(code)
                if found:
                    return found, None, "ICD-O-3 topography", code
        label = _text_of(concept)
        for pattern, cancer in c.CANCER_WORDS:
            if pattern.search(label):
                return cancer, None, "the words of the code's display (no code recognised)", ""
        return None, None, "", ""

    def find_primary_cancers(self) -> list[tuple[str, tuple[int, Any]]]:
        found = []
        for index, resource in self.resources:
            if resource.get_resource_type() != "Condition" or not self.for_patient(resource):
                continue
            profiles = _profiles(resource)
            if c.SECONDARY_CANCER in profiles:
                continue
            code = getattr(resource, "code", None)
            if c.PRIMARY_CANCER in profiles or self.cancer_of(code)[0] is not None:
                if _refuted(resource):
                    continue
                found.append((self.key_of(index, resource), (index, resource)))
        return found

    def primary(self, primaries: list[tuple[str, tuple[int, Any]]]) -> None:
        if not primaries:
            return

        def when(item: tuple[str, tuple[int, Any]]) -> tuple[str, int]:
            _, (index, resource) = item
            return (_condition_date(resource), index)

        ordered = sorted(primaries, key=when)
        key, (index, condition) = ordered[-1]
        self.primary_key = key
        for _, (other_index, other) in ordered[:-1]:
            self.skip(
                other_index,
                other,
                "another primary cancer is recorded later; the dossier is about the latest "
                "(open a second dossier for this one)",
                _text_of(other.code),
            )
        onset = _condition_date(condition)
        cancer, histology, how, _ = self.cancer_of(condition.code)
        morphology = None
        for ext in _extensions(condition, c.EXT_HISTOLOGY):
            morphology = ext.valueCodeableConcept
        morph_text = _text_of(morphology) if morphology is not None else ""
        morph_code = _first_code(morphology)[0] if morphology is not None else ""
        if cancer == "lung":
            adeno = c.ADENOCARCINOMA.search(morph_text) or c.ADENOCARCINOMA.search(morph_code)
            adeno = adeno or c.ADENOCARCINOMA.search(_text_of(condition.code))
            if adeno:
                cancer = "lung_adenocarcinoma"
                how += " and the adenocarcinoma histology"
            else:
                cancer = "other"
                how += "; not recorded as adenocarcinoma, so not the lung adenocarcinoma pathway"
        if cancer is None:
            cancer = "other"
            how = "no cancer code of the four pathways was recognised"
        if cancer == "lymphoma" and c.LYMPHOMA_MORPHOLOGY.search(morph_code or ""):
            how += " and the lymphoma morphology"
        self.cancer_type = cancer
        self.offer(
            "cancer_type",
            cancer,
            self.source(index, condition, condition.code, when=onset, note=f"read from the {how}"),
        )
        label = morph_text or histology
        if not label and cancer == "lymphoma":
            # Lymphoma codes name the subtype ("Diffuse large B-cell lymphoma", ICD-10 C83.3).
            label = _text_of(condition.code)
        if label:
            concept = morphology if morph_text else condition.code
            self.offer(
                "diagnosis.histology",
                label,
                self.source(index, condition, concept, when=onset),
            )
        self.body_site(index, condition, onset)
        if getattr(condition, "stage", None):
            self.skip(
                index,
                condition,
                "the stage summary is derived by the board from T, N and M (or Ann Arbor); the "
                f"recorded {', '.join(_text_of(s.summary) for s in condition.stage if s.summary)} "
                "is kept here for comparison",
                "stage",
                "stage",
            )

    def body_site(self, index: int, condition: Any, onset: str) -> None:
        for site in getattr(condition, "bodySite", None) or []:
            label = _text_of(site)
            if label:
                self.offer(
                    "index_lesion.site", label, self.source(index, condition, site, when=onset)
                )
            side: str | None = None
            for ext in _extensions(site, c.EXT_LATERALITY):
                hit = _has_code(ext.valueCodeableConcept, c.LATERALITY)
                if hit:
                    side = c.LATERALITY[hit[0]]
                    concept = ext.valueCodeableConcept
            if side is None:
                hit = _has_code(site, c.SIDED_SITES)
                if hit:
                    side, concept = c.SIDED_SITES[hit[0]], site
            if side is not None:
                self.offer(
                    "index_lesion.laterality",
                    side,
                    self.source(index, condition, concept, when=onset),
                )
                return
        # "Primary malignant neoplasm of female left breast": the side is in the code itself.
        if c.SNOMED in {str(x.system) for x in _codings(condition.code)}:
            found = c.LEFT_RIGHT.search(_text_of(condition.code))
            if found:
                self.offer(
                    "index_lesion.laterality",
                    found.group("side").lower(),
                    self.source(
                        index, condition, condition.code, when=onset, note="side named by the code"
                    ),
                )

    # ----- other conditions

    def liver_finding(self, index: int, resource: Any) -> bool:
        """Ascites and hepatic encephalopathy are Child-Pugh inputs: graded by the condition's
        severity, "none" when recorded as refuted (ruled out)."""
        hit = _has_code(resource.code, [c.ASCITES, c.HEPATIC_ENCEPHALOPATHY])
        if hit is None:
            return False
        ascites = hit[0] == c.ASCITES
        path = "organ_function.ascites" if ascites else "organ_function.encephalopathy"
        grades = c.ASCITES_GRADES if ascites else c.ENCEPHALOPATHY_GRADES
        when = _condition_date(resource)
        label = _text_of(resource.code)
        verification = _first_code(getattr(resource, "verificationStatus", None))[0]
        if verification == "entered-in-error":
            self.skip(index, resource, "entered in error", label)
            return True
        status = _first_code(getattr(resource, "clinicalStatus", None), [c.CONDITION_CLINICAL])[0]
        if verification == "refuted" or status == "resolved":
            note = "ruled out" if verification == "refuted" else "resolved"
            self.offer(
                path, "none", self.source(index, resource, resource.code, when=when, note=note)
            )
            return True
        severity = _has_code(getattr(resource, "severity", None), grades)
        if severity is None:
            self.skip(
                index,
                resource,
                "present, but its grade is not recorded (Condition.severity mild or severe) and "
                "the grade changes the Child-Pugh score",
                label,
            )
            self.notes.append(f"{label} (grade not recorded; {when or 'no date'}).")
            return True
        self.offer(
            path,
            grades[severity[0]],
            self.source(index, resource, resource.severity, when=when, note=label),
        )
        return True

    def condition(self, index: int, resource: Any) -> None:
        if self.liver_finding(index, resource):
            return
        label = _text_of(resource.code)
        if _refuted(resource):
            self.skip(index, resource, "recorded as refuted or entered in error", label)
            return
        if c.SECONDARY_CANCER in _profiles(resource):
            self.skip(
                index,
                resource,
                "a metastasis: recorded in the notes; the staging fields (M category, "
                "metastasis counts) are not inferred from it",
                label,
            )
            self.notes.append(
                f"Secondary cancer: {label} ({_condition_date(resource) or 'no date'})."
            )
            return
        status = _first_code(getattr(resource, "clinicalStatus", None), [c.CONDITION_CLINICAL])[0]
        if status in ("inactive", "resolved", "remission"):
            self.skip(
                index, resource, f"clinical status {status}: not a current comorbidity", label
            )
            return
        when = _condition_date(resource)
        self.add_to_list(
            "patient.comorbidities", label, self.source(index, resource, resource.code, when=when)
        )

    def allergy(self, index: int, resource: Any) -> None:
        label = _text_of(resource.code)
        status = _first_code(getattr(resource, "clinicalStatus", None))[0]
        if _refuted(resource):
            self.skip(index, resource, "recorded as refuted or entered in error", label)
            return
        if status in ("inactive", "resolved"):
            self.skip(index, resource, f"clinical status {status}", label)
            return
        when = _iso(getattr(resource, "recordedDate", None))
        self.add_to_list(
            "patient.allergies", label, self.source(index, resource, resource.code, when=when)
        )

    # ----- observations

    def observation(self, index: int, obs: Any) -> None:
        status = str(getattr(obs, "status", "") or "")
        label = _text_of(obs.code)
        if status in ("entered-in-error", "cancelled", "registered", "preliminary"):
            self.skip(index, obs, f"status {status}: not a final result", label)
            return
        when = _observation_date(obs)
        if self.after_question(when):
            self.skip(
                index, obs, f"dated {when}, after the question's date {self.as_of_iso}", label
            )
            return
        loinc = {str(x.code) for x in _codings(obs.code) if x.code}
        profiles = _profiles(obs)
        own = _first_code(obs.code, [CASE_FIELD_SYSTEM])[0]
        if own:
            self.case_field(index, obs, when, own)
        elif loinc & set(c.LABS):
            self.quantity(index, obs, when, loinc)
        elif loinc & set(c.QUALITATIVE):
            self.qualitative(index, obs, when, loinc)
        elif c.ECOG in loinc:
            self.ecog(index, obs, when)
        elif c.KARNOFSKY in loinc:
            self.karnofsky(index, obs, when)
        elif loinc & set(c.RECEPTOR_PRESENCE):
            marker = c.RECEPTOR_PRESENCE[next(iter(loinc & set(c.RECEPTOR_PRESENCE)))]
            self.presence_note(index, obs, when, marker, f"{marker.lower()}_pct")
        elif loinc & (c.HER2_IHC | c.HER2_ISH | c.HER2_INTERPRETATION):
            self.her2(index, obs, when, loinc)
        elif loinc & set(c.TNM_CATEGORY):
            self.tnm(index, obs, when, loinc)
        elif loinc & c.TNM_STAGE_GROUP:
            self.skip(
                index,
                obs,
                f"the AJCC stage group is derived by the board from T, N and M (recorded: "
                f"{_text_of(obs.valueCodeableConcept)})",
                label,
            )
        elif loinc & c.LYMPHOMA_STAGE or c.mcode("mcode-lymphoma-stage") in profiles:
            self.lymphoma_stage(index, obs, when)
        elif c.TUMOR_SIZE in loinc:
            self.tumor_size(index, obs, when)
        elif loinc & c.GENOMIC_VARIANT or c.mcode("mcode-genomic-variant") in profiles:
            self.variant(index, obs, when)
        elif c.DISEASE_STATUS in loinc:
            self.disease_status(index, obs, when)
        elif c.mcode("mcode-comorbidities") in profiles:
            for ext in _extensions(obs, c.EXT_RELATED_CONDITION_ABSENT):
                absent = _has_code(ext.valueCodeableConcept, [c.ASCITES, c.HEPATIC_ENCEPHALOPATHY])
                if absent:
                    path = (
                        "organ_function.ascites"
                        if absent[0] == c.ASCITES
                        else "organ_function.encephalopathy"
                    )
                    self.offer(
                        path,
                        "none",
                        self.source(index, obs, ext.valueCodeableConcept, when=when, note="absent"),
                    )
            self.skip(
                index,
                obs,
                "the comorbidity summary: the conditions it names are read from their own "
                "resources; conditions recorded as absent are not dossier fields",
                label,
            )
        else:
            self.skip(index, obs, "no dossier field for this observation's code", label)

    def case_field(self, index: int, obs: Any, when: str, path: str) -> None:
        """A field in this application's own code system (an mdtboard export): its value
        as written, checked by the field's type."""
        spec = FIELDS_BY_PATH.get(path)
        label = _text_of(obs.code)
        value_code = _first_code(getattr(obs, "valueCodeableConcept", None), [CASE_FIELD_SYSTEM])[0]
        if (
            spec is not None
            and spec.type in (FieldType.LIST_STR, FieldType.PRIOR_THERAPIES)
            and (value_code == NONE_CODE)
        ):
            self.recorded_none[path] = self.source(index, obs, obs.code, when=when)
            return
        if (
            spec is None
            or (spec.parent is None and path != "notes")
            or spec.type
            in (
                FieldType.PRIOR_THERAPIES,
                FieldType.TOXICITY,
            )
        ):
            self.skip(index, obs, f"{path!r} is not a field this application reads", label)
            return
        value: Any = None
        if spec.type is FieldType.BOOL:
            value = getattr(obs, "valueBoolean", None)
        elif spec.type is FieldType.INT:
            value = getattr(obs, "valueInteger", None)
        elif spec.type is FieldType.NUMBER:
            number = _number(getattr(getattr(obs, "valueQuantity", None), "value", None))
            value = _tidy(number) if number is not None else None
        elif spec.type is FieldType.ENUM:
            code = _first_code(getattr(obs, "valueCodeableConcept", None), [CASE_FIELD_SYSTEM])[0]
            value = code if code in spec.choice_values else None
        elif spec.type is FieldType.LIST_STR:
            text = getattr(obs, "valueString", None)
            value = [line for line in str(text).split("\n") if line.strip()] if text else None
        else:
            value = getattr(obs, "valueString", None)
        if value is None:
            self.skip(index, obs, f"no value of the kind {spec.name} holds", label)
            return
        source = self.source(index, obs, obs.code, when=when)
        if spec.type is FieldType.LIST_STR:
            for item in value:
                self.add_to_list(path, item, source)
        elif path == "notes":
            self.imported_notes = str(value)
        else:
            self.offer(path, value, source)

    def quantity(self, index: int, obs: Any, when: str, loinc: set[str]) -> None:
        code = next(x for x in loinc if x in c.LABS)
        lab = c.LABS[code]
        spec = FIELDS_BY_PATH[lab.field]
        label = _text_of(obs.code)
        quantity = getattr(obs, "valueQuantity", None)
        raw_value = _number(getattr(quantity, "value", None)) if quantity is not None else None
        if raw_value is None and getattr(obs, "valueInteger", None) is not None:
            raw_value, unit = float(obs.valueInteger), lab.unit if lab.unit in ("1", "%") else None
        else:
            unit = str(quantity.code) if quantity is not None and quantity.code else None
        if raw_value is None:
            self.skip(index, obs, f"no numeric result for {spec.name}", label, "value[x]")
            return
        if quantity is not None and quantity.comparator:
            self.skip(
                index,
                obs,
                f"the result is {quantity.comparator} {raw_value:g}, not a value",
                label,
                "valueQuantity.comparator",
            )
            return
        if quantity is not None and quantity.system and str(quantity.system) != c.UCUM:
            self.skip(
                index,
                obs,
                f"the unit is not a UCUM code (system {quantity.system})",
                label,
                "valueQuantity.system",
            )
            return
        if unit is not None and unit not in self.units_seen:
            # Each new unit code is parsed by the UCUM grammar (milliseconds); a record uses a
            # handful. A bundle of thousands of distinct codes is junk and must not cost minutes.
            if len(self.units_seen) >= MAX_DISTINCT_UNITS:
                self.skip(index, obs, "too many distinct unit codes in one record", label)
                return
            self.units_seen.add(unit)
        try:
            value = convert(raw_value, unit, lab.unit, molar_mass_g_mol=lab.molar_mass_g_mol)
        except UnitError as exc:
            self.skip(index, obs, f"unit not converted: {exc}", label, "valueQuantity")
            return
        shown = _tidy(value)
        if spec.type is FieldType.INT:
            shown = round(value)
        unchanged = unit == lab.unit or (unit in DIMENSIONLESS and lab.unit in DIMENSIONLESS)
        note = "" if unchanged else f"{raw_value:g} {unit} converted to {shown} {lab.unit}"
        self.offer(lab.field, shown, self.source(index, obs, obs.code, when=when, note=note))
        if lab.field == c.LDH_FIELD:
            for reference in getattr(obs, "referenceRange", None) or []:
                high = reference.high
                if high is None or _number(high.value) is None:
                    continue
                try:
                    uln = convert(float(high.value), str(high.code or unit or ""), lab.unit)
                except UnitError as exc:
                    self.skip(index, obs, f"reference range not converted: {exc}", label)
                    continue
                self.offer(
                    c.LDH_ULN_FIELD,
                    _tidy(uln),
                    self.source(index, obs, obs.code, when=when, note="reference range high"),
                )
                break

    def qualitative(self, index: int, obs: Any, when: str, loinc: set[str]) -> None:
        path = c.QUALITATIVE[next(x for x in loinc if x in c.QUALITATIVE)]
        answer = _positive_negative(obs)
        if answer is None:
            self.skip(index, obs, "the result is neither positive nor negative", _text_of(obs.code))
            return
        self.offer(path, answer, self.source(index, obs, obs.code, when=when))

    def ecog(self, index: int, obs: Any, when: str) -> None:
        value = getattr(obs, "valueInteger", None)
        if value is None:
            hit = _has_code(obs.valueCodeableConcept, c.ECOG_ANSWERS)
            value = c.ECOG_ANSWERS[hit[0]] if hit else None
        if value is None:
            self.skip(index, obs, "no ECOG grade in the result", "ECOG")
            return
        self.offer(
            "patient.ecog", int(value), self.source(index, obs, obs.code, when=when), priority=1
        )

    def karnofsky(self, index: int, obs: Any, when: str) -> None:
        score = getattr(obs, "valueInteger", None)
        grade = c.ecog_from_karnofsky(int(score)) if score is not None else None
        if grade is None:
            self.skip(index, obs, f"Karnofsky {score} has no ECOG equivalent", "Karnofsky")
            return
        note = f"Karnofsky {score} read as ECOG {grade} (ECOG-ACRIN conversion table)"
        # An ECOG recorded on the same day is preferred over a converted Karnofsky score.
        self.offer("patient.ecog", grade, self.source(index, obs, obs.code, when=when, note=note))

    def presence_note(self, index: int, obs: Any, when: str, marker: str, key: str) -> None:
        answer = _positive_negative(obs)
        shown = answer or _text_of(getattr(obs, "valueCodeableConcept", None)) or "no result"
        self.skip(
            index,
            obs,
            f"{marker} {shown} without the percentage of stained cells: the dossier records "
            f"{marker} as a percentage ({key}); written in the notes",
            _text_of(obs.code),
        )
        self.notes.append(f"{marker} {shown} (percentage not recorded; {when or 'no date'}).")

    def her2(self, index: int, obs: Any, when: str, loinc: set[str]) -> None:
        label = _text_of(obs.code)
        value = getattr(obs, "valueCodeableConcept", None)
        score = None
        hit = _has_code(value, c.HER2_IHC_ANSWERS)
        if hit:
            score = c.HER2_IHC_ANSWERS[hit[0]]
        else:
            words = (_text_of(value) or str(getattr(obs, "valueString", "") or "")).strip()
            if words in ("0", "1+", "2+", "3+"):
                score = words
        if loinc & c.HER2_IHC and score in ("0", "1+", "3+"):
            self.offer("biomarkers.her2", score, self.source(index, obs, obs.code, when=when))
            return
        answer = _positive_negative(obs)
        if loinc & c.HER2_IHC and score == "2+":
            self.her2_ihc_2plus = self.source(index, obs, obs.code, when=when)
            return
        if loinc & c.HER2_ISH and answer is not None:
            self.her2_ish.append((answer, self.source(index, obs, obs.code, when=when)))
            return
        shown = score or answer or _text_of(value) or "no result"
        reason = (
            "the dossier records HER2 as an IHC score (0, 1+, 2+ with ISH, 3+); a "
            f"{shown!r} result cannot be placed without it (HER2-low matters)"
        )
        self.skip(index, obs, reason + "; written in the notes", label)
        self.notes.append(f"HER2 {shown} ({label}; {when or 'no date'}).")

    def tnm(self, index: int, obs: Any, when: str, loinc: set[str]) -> None:
        axis, kind = c.TNM_CATEGORY[next(x for x in loinc if x in c.TNM_CATEGORY)]
        label = _text_of(obs.code)
        if self.cancer_type == "lymphoma":
            self.skip(index, obs, "TNM is not used for lymphoma", label)
            return
        value = getattr(obs, "valueCodeableConcept", None)
        found = None
        for coding in _codings(value):
            for text in (str(coding.code or ""), str(coding.display or "")):
                match = c.TNM_VALUE.search(text)
                if match and match.group("code")[0].lower() == axis:
                    found = match.group("code")
                    break
            if found:
                break
        if found is None:
            self.skip(index, obs, "the category could not be read from the result", label)
            return
        organ = self.cancer_type
        if organ is not None and organ in TNM_CODES and found not in TNM_CODES[organ][axis]:
            self.skip(index, obs, f"{found} is not an AJCC 8 code for this cancer", label)
            return
        basis = {"p": "pathologic", "c": "clinical"}.get(kind, "unspecified")
        note = f"{kind}{found} ({basis})"
        # On the same day a pathologic category supersedes the clinical one.
        self.offer(
            f"staging.{axis}",
            found,
            self.source(index, obs, value, when=when, note=note),
            priority=1 if kind == "p" else 0,
        )
        if _has_code(getattr(obs, "method", None), [c.AJCC_8TH_METHOD]):
            self.offer("staging.tnm_edition", 8, self.source(index, obs, obs.method, when=when))

    def lymphoma_stage(self, index: int, obs: Any, when: str) -> None:
        value = getattr(obs, "valueCodeableConcept", None)
        text = _text_of(value)
        match = c.ANN_ARBOR.search(text.replace("Stage", "stage"))
        if match is None:
            self.skip(index, obs, f"the stage {text!r} could not be read", _text_of(obs.code))
            return
        stage = match.group("stage").upper()
        self.offer("staging.ann_arbor_stage", stage, self.source(index, obs, value, when=when))
        mods = match.group("mods").upper()
        if "B" in mods or "A" in mods:
            self.offer(
                "staging.b_symptoms",
                "B" in mods,
                self.source(index, obs, value, when=when, note=f"suffix {mods}"),
            )
        for component in getattr(obs, "component", None) or []:
            if _has_code(component.code, [c.BULKY_COMPONENT]):
                answer = _positive_negative(component)
                if answer is not None:
                    self.offer(
                        "staging.bulky_disease",
                        answer == "positive",
                        self.source(index, obs, component.code, when=when),
                    )

    def tumor_size(self, index: int, obs: Any, when: str) -> None:
        for component in getattr(obs, "component", None) or []:
            if not _has_code(component.code, [c.TUMOR_LONGEST_DIMENSION]):
                continue
            quantity = component.valueQuantity
            value = _number(getattr(quantity, "value", None))
            if value is None:
                continue
            unit = str(quantity.code or "") or None
            try:
                size = convert(value, unit, "mm")
            except UnitError as exc:
                self.skip(index, obs, f"unit not converted: {exc}", "tumour size")
                return
            note = "" if unit == "mm" else f"{value:g} {unit} converted to {_tidy(size)} mm"
            self.offer(
                "index_lesion.size_mm",
                _tidy(size),
                self.source(index, obs, component.code, when=when, note=note),
            )
            return
        self.skip(index, obs, "no longest dimension in the result", "tumour size")

    def disease_status(self, index: int, obs: Any, when: str) -> None:
        value = getattr(obs, "valueCodeableConcept", None)
        if _has_code(value, [c.PROGRESSION_STATUS]):
            self.offer(
                "diagnosis.setting",
                "progressive",
                self.source(index, obs, value, when=when, note="disease status: worsened"),
            )
            return
        text = _text_of(value)
        self.skip(index, obs, f"disease status {text!r} does not set the setting; in the notes")
        self.notes.append(f"Disease status: {text} ({when or 'no date'}).")

    def variant(self, index: int, obs: Any, when: str) -> None:
        genes: list[str] = []
        protein = dna = name = ""
        germline = False
        significance = ""
        for component in getattr(obs, "component", None) or []:
            codes = {str(x.code) for x in _codings(component.code) if x.code}
            value = component.valueCodeableConcept
            if codes & c.GENE_STUDIED:
                for coding in _codings(value):
                    gene = c.GENES.get(str(coding.code or "")) or str(coding.display or "")
                    if gene and gene not in genes:
                        genes.append(gene.upper())
            elif codes & c.AMINO_ACID_CHANGE:
                protein = _text_of(value) or str(component.valueString or "")
            elif codes & c.DNA_CHANGE:
                dna = _text_of(value) or str(component.valueString or "")
            elif codes & c.VARIANT_NAME:
                name = _text_of(value)
            elif codes & c.GENOMIC_SOURCE:
                germline = bool(_has_code(value, c.GERMLINE))
            elif codes & c.CLINICAL_SIGNIFICANCE:
                significance = _first_code(value)[0]
        present = _positive_negative(obs)
        label = f"{'/'.join(genes) or 'variant'} {protein or name or dna}".strip()
        if significance in c.BENIGN_OR_UNCERTAIN:
            self.skip(index, obs, "benign or of uncertain significance", label)
            return
        mapped = False
        for gene in genes:
            if gene in ("BRCA1", "BRCA2") and germline and present == "negative":
                self.brca_negative[gene] = self.source(index, obs, obs.code, when=when)
                mapped = True
                continue
            value = _driver_value(gene, present, protein or name, germline, genes)
            if value is None:
                continue
            path, answer = value
            self.offer(path, answer, self.source(index, obs, obs.code, when=when, note=label))
            mapped = True
        if not mapped:
            self.skip(
                index,
                obs,
                "no dossier field for this gene or result" if genes else "no gene named",
                label,
            )
            if present == "positive" and genes:
                self.notes.append(f"Genomic variant: {label} ({when or 'no date'}).")

    # ----- treatments

    def exported_therapy(self, index: int, resource: Any) -> bool:
        """A prior therapy written by this application carries all its keys in one extension:
        taken whole, so that exporting and importing again gives the same entry."""
        found = _extensions(resource, PRIOR_THERAPY_EXTENSION)
        if not found:
            return False
        entry: dict[str, Any] = {}
        toxicity: dict[str, Any] = {}
        for inner in found[0].extension or []:
            value = next(
                (
                    getattr(inner, name)
                    for name in ("valueString", "valueInteger", "valueDecimal", "valueBoolean")
                    if getattr(inner, name, None) is not None
                ),
                None,
            )
            if isinstance(value, Decimal):
                value = _tidy(float(value))
            key = str(inner.url)
            if key.startswith("toxicity."):
                toxicity[key.removeprefix("toxicity.")] = value
            elif key in _PRIOR_KEYS:
                entry[key] = value
        if toxicity:
            entry["toxicity"] = toxicity
        label = str(entry.get("regimen") or "")
        if self.after_question(str(entry.get("start_date") or "")):
            self.skip(index, resource, "dated after the question's date", label)
            return True
        concept = getattr(resource, "code", None) or getattr(
            resource, "medicationCodeableConcept", None
        )
        when = str(entry.get("start_date") or "")
        self.therapies.append((entry, self.source(index, resource, concept, when=when)))
        return True

    def procedure(self, index: int, proc: Any) -> None:
        if self.exported_therapy(index, proc):
            return
        label = _text_of(proc.code)
        status = str(getattr(proc, "status", "") or "")
        profiles = _profiles(proc)
        radiotherapy = c.RADIOTHERAPY_COURSE in profiles
        surgery = c.SURGICAL_PROCEDURE in profiles
        diagnostic = _DIAGNOSTIC.search(label) or self.intent_code(proc) == c.DIAGNOSTIC_INTENT
        if not (radiotherapy or surgery) and diagnostic:
            self.skip(index, proc, "a diagnostic procedure, not a treatment", label)
            return
        if not (radiotherapy or surgery) and self.linked_to_cancer(proc):
            surgery = True
        if not (radiotherapy or surgery):
            self.skip(
                index,
                proc,
                "not a cancer treatment (no mCODE surgical or radiotherapy profile and no "
                "reason pointing at the cancer)",
                label,
            )
            return
        if status in ("not-done", "entered-in-error", "preparation", "unknown"):
            self.skip(index, proc, f"status {status}: not a treatment given", label)
            return
        start, end = _period(getattr(proc, "performedPeriod", None))
        if not start:
            start = end = _iso(getattr(proc, "performedDateTime", None))
        if self.after_question(start):
            self.skip(index, proc, f"dated {start}, after the question's date", label)
            return
        intent = self.intent_of(proc)
        kind = "radiotherapy" if radiotherapy else "operation"
        if not radiotherapy and _LOCOREGIONAL.search(label):
            kind = "locoregional"
        elif not radiotherapy and _TRANSPLANT.search(label):
            kind = "transplant"
        entry: dict[str, Any] = {
            "line": 0,
            "kind": kind,
            "intent": intent,
            "regimen": label[:200] if not radiotherapy else _radiotherapy_text(proc, label),
            "start_date": start or None,
            "end_date": (end or None) if status == "completed" else None,
        }
        if status == "stopped":
            entry["stop_reason"] = self.stop_reason(proc) or "other"
        elif status == "completed":
            entry["stop_reason"] = "completed"
        self.therapies.append((entry, self.source(index, proc, proc.code, when=start)))

    def linked_to_cancer(self, resource: Any) -> bool:
        for reference in getattr(resource, "reasonReference", None) or []:
            if self.primary_key and _reference_key(reference) == self.primary_key:
                return True
        for concept in getattr(resource, "reasonCode", None) or []:
            if self.cancer_of(concept)[0] is not None:
                return True
        return False

    def intent_of(self, resource: Any) -> str | None:
        return c.INTENTS.get(self.intent_code(resource))

    def intent_code(self, resource: Any) -> str:
        for ext in _extensions(resource, c.EXT_PROCEDURE_INTENT):
            code = _first_code(ext.valueCodeableConcept, [c.SNOMED])[0]
            if code:
                return code
        return ""

    def stop_reason(self, resource: Any) -> str | None:
        reasons = getattr(resource, "statusReason", None)
        concepts = reasons if isinstance(reasons, list) else [reasons]
        for ext in _extensions(resource, c.EXT_TERMINATION_REASON):
            concepts.append(ext.valueCodeableConcept)
        for concept in concepts:
            hit = _has_code(concept, c.STOP_REASONS)
            if hit:
                return c.STOP_REASONS[hit[0]]
        return None

    def medication_concept(self, resource: Any) -> Any:
        concept = getattr(resource, "medicationCodeableConcept", None)
        if concept is not None:
            return concept
        reference = getattr(resource, "medicationReference", None)
        if reference is not None:
            key = _reference_key(reference)
            found = self.by_key.get(key) or self.by_key.get(str(reference.reference or ""))
            if found is not None and found[1].get_resource_type() == "Medication":
                return found[1].code
        return None

    def medication(self, index: int, resource: Any) -> None:
        if self.exported_therapy(index, resource):
            return
        concept = self.medication_concept(resource)
        label = _drug_name(concept)
        status = str(getattr(resource, "status", "") or "")
        kind = resource.get_resource_type()
        if concept is None or not label:
            self.skip(index, resource, "the medicine is not named", kind)
            return
        if status in ("entered-in-error", "cancelled", "draft", "not-taken", "not-done"):
            self.skip(index, resource, f"status {status}: not taken", label)
            return
        start, end = _medication_dates(resource)
        if self.after_question(start):
            self.skip(index, resource, f"dated {start}, after the question's date", label)
            return
        cancer_related = bool(_profiles(resource) & c.CANCER_MEDICATION_PROFILES) or (
            self.linked_to_cancer(resource)
        )
        active = status in ("active", "on-hold", "in-progress", "intended")
        source = self.source(index, resource, concept, when=start)
        if active:
            self.add_to_list("patient.medications", label, source)
        if not cancer_related:
            if not active:
                self.skip(index, resource, f"status {status}: no longer taken", label)
            return
        self.drug_courses.append(
            _DrugCourse(
                drug=label,
                start=start,
                end="" if active else end,
                intent=self.intent_of(resource),
                stop_reason=self.stop_reason(resource) if status == "stopped" else None,
                completed=status == "completed",
                source=source,
            )
        )

    def finish_her2_and_brca(self) -> None:
        """HER2 IHC 2+ is placed only with its ISH result; germline BRCA is "negative" only when
        both genes were tested negative."""
        if self.her2_ihc_2plus is not None:
            ihc = self.her2_ihc_2plus
            if self.her2_ish:
                answer, ish = max(self.her2_ish, key=lambda item: item[1].date)
                note = f"IHC 2+ ({ihc.resource}) with ISH {answer} ({ish.resource})"
                self.offer(
                    "biomarkers.her2",
                    f"2+_ish_{answer}",
                    Source(
                        ihc.resource, ihc.path, ihc.code, ihc.system, ihc.display, ihc.date, note
                    ),
                )
            else:
                self.not_imported.append(
                    NotImported(
                        ihc.path,
                        ihc.resource,
                        "HER2 IHC 2+",
                        "an IHC 2+ result needs its ISH result (2+ ISH-negative or -positive); "
                        "none is recorded",
                    )
                )
        elif self.her2_ish:
            for answer, ish in self.her2_ish:
                self.not_imported.append(
                    NotImported(
                        ish.path,
                        ish.resource,
                        f"HER2 ISH {answer}",
                        "an ISH result is placed only with an IHC 2+ score",
                    )
                )
        if set(self.brca_negative) == {"BRCA1", "BRCA2"}:
            first = self.brca_negative["BRCA1"]
            self.offer(
                "biomarkers.germline_brca",
                "negative",
                Source(
                    first.resource,
                    first.path,
                    first.code,
                    first.system,
                    first.display,
                    first.date,
                    "germline BRCA1 and BRCA2 both negative",
                ),
            )
        else:
            for gene, source in self.brca_negative.items():
                self.not_imported.append(
                    NotImported(
                        source.path,
                        source.resource,
                        f"germline {gene} negative",
                        "germline BRCA is recorded as negative only when both genes were "
                        "tested negative",
                    )
                )

    def finish_drug_courses(self) -> None:
        """Cancer medicines become prior systemic therapies: drugs of the same intent given at
        overlapping times (or started within two weeks of each other) make one regimen. A
        palliative regimen is a numbered line; a curative one is line 0; with no intent recorded
        the line is left empty for the clinician to number."""
        by_drug: dict[tuple[str, str | None], _DrugCourse] = {}
        for course in self.drug_courses:
            key = (course.drug.casefold(), course.intent)
            held = by_drug.get(key)
            by_drug[key] = course if held is None else held.merged(course)
        courses = sorted(by_drug.values(), key=lambda d: (d.start or "9999", d.drug))
        groups: list[list[_DrugCourse]] = []
        for course in courses:
            target = next(
                (g for g in groups if g[0].intent == course.intent and _overlaps(g, course)), None
            )
            if target is None:
                groups.append([course])
            else:
                target.append(course)
        line = 0
        for group in groups:
            starts = [d.start for d in group if d.start]
            ends = [d.end for d in group]
            ongoing = any(not e for e in ends)
            reasons = [d.stop_reason for d in group if d.stop_reason]
            palliative = group[0].intent == "palliative"
            if palliative:
                line += 1
            entry: dict[str, Any] = {
                "line": line if palliative else (0 if group[0].intent == "curative" else None),
                "kind": "systemic",
                "intent": group[0].intent,
                "regimen": " + ".join(dict.fromkeys(d.drug for d in group))[:200],
                "start_date": min(starts) if starts else None,
                "end_date": None if ongoing else max(ends),
                "stop_reason": _worst_reason(reasons)
                if reasons
                else ("completed" if all(d.completed for d in group) else None),
            }
            first = group[0].source
            names = ", ".join(d.source.resource for d in group)
            self.therapies.append(
                (
                    entry,
                    Source(
                        first.resource,
                        first.path,
                        first.code,
                        first.system,
                        first.display,
                        first.date,
                        f"from {names}",
                    ),
                )
            )

    # ----- assembly

    def build(self, *, pseudonym: str, case_id: str, question: str) -> FhirMapping:
        case: dict[str, Any] = {
            "format": FORMAT_ID,
            "case_id": case_id,
            "cancer_type": "other",
            "question": question,
            "patient": {"pseudonym": pseudonym},
        }
        values: list[Mapped] = []
        for path, candidates in self.candidates.items():
            ordered = sorted(candidates, key=lambda x: x.rank)
            chosen = ordered[-1]
            # Other values that agree with the chosen one corroborate it; only disagreements
            # are shown as conflicts.
            others = [
                (x.value, x.source) for x in reversed(ordered[:-1]) if x.value != chosen.value
            ]
            values.append(Mapped(path, chosen.value, chosen.source, others))
        for path, held in self.lists.items():
            items = sorted(held.values(), key=lambda m: m.source.date, reverse=True)
            limit = FIELDS_BY_PATH[path].max_items or len(items)
            for mapped in items[limit:]:
                self.not_imported.append(
                    NotImported(
                        mapped.source.path,
                        mapped.source.resource,
                        str(mapped.value),
                        f"more than {limit} entries: only the {limit} most recent are kept",
                    )
                )
            values.extend(sorted(items[:limit], key=lambda m: m.source.date))
        therapies = sorted(self.therapies, key=lambda t: t[0].get("start_date") or "9999")
        limit = FIELDS_BY_PATH["diagnosis.prior_therapies"].max_items or len(therapies)
        if len(therapies) > limit:
            # The most recent courses matter most to the next decision; older ones are listed.
            for entry, source in therapies[:-limit]:
                self.not_imported.append(
                    NotImported(
                        source.path,
                        source.resource,
                        str(entry.get("regimen")),
                        f"more than {limit} prior therapies: only the {limit} most recent are kept",
                    )
                )
            therapies = therapies[-limit:]
        for position, (entry, source) in enumerate(therapies):
            full = {f.key: entry.get(f.key) for f in PRIOR_THERAPY_FIELDS}
            values.append(Mapped(f"diagnosis.prior_therapies[{position}]", full, source))
        if self.imported_notes and not self.notes:
            values.append(
                Mapped("notes", self.imported_notes, Source("Bundle", "Bundle", note="notes"))
            )
        elif self.notes:
            text = "From the FHIR record (not mapped to fields): " + " ".join(self.notes)
            if self.imported_notes:
                text = self.imported_notes + "\n\n" + text
            values.append(
                Mapped("notes", text[:10_000], Source("Bundle", "Bundle", note="summary"))
            )
        for path, source in self.recorded_none.items():
            if not any(m.field.split("[")[0] == path for m in values):
                values.append(Mapped(path, [], source))
        _place(case, values)
        # The case must validate: a value that contradicts another (or a list too long) is
        # taken out and listed with the validator's message, never silently kept.
        for _ in range(20):
            errors = validate_case(case, filename="bundle")
            if not errors:
                break
            removed = False
            for error in errors:
                hit = _value_at(values, error.path)
                if hit is None:
                    continue
                values.remove(hit)
                self.not_imported.append(
                    NotImported(hit.source.path, hit.source.resource, _shown(hit), error.message)
                )
                removed = True
            if not removed:
                raise MappingError("Bundle", "; ".join(e.message for e in errors[:3]))
            case = {k: case[k] for k in ("format", "case_id", "cancer_type", "question")}
            case["patient"] = {"pseudonym": pseudonym}
            _place(case, values)
        order = {f.path: i for i, f in enumerate(FIELDS_BY_PATH.values())}
        values.sort(key=lambda m: (order.get(_catalog(m.field), 10_000), m.field))
        return FhirMapping(
            case=case_to_canonical(case),
            values=values,
            not_imported=self.not_imported,
            patient_id=self.patient_key,
            entries=len(self.resources),
        )


@dataclass
class _DrugCourse:
    drug: str
    start: str
    end: str
    intent: str | None
    stop_reason: str | None
    completed: bool
    source: Source

    def merged(self, other: _DrugCourse) -> _DrugCourse:
        starts = [d for d in (self.start, other.start) if d]
        ongoing = not self.end or not other.end
        return _DrugCourse(
            drug=self.drug,
            start=min(starts) if starts else "",
            end="" if ongoing else max(self.end, other.end),
            intent=self.intent,
            stop_reason=self.stop_reason or other.stop_reason,
            completed=self.completed and other.completed,
            source=self.source if (self.start or "9") <= (other.start or "9") else other.source,
        )


def _overlaps(group: list[_DrugCourse], course: _DrugCourse) -> bool:
    """A drug started while another of the group was still given (or within two weeks of the
    group's first start) belongs to the same regimen."""
    if not course.start:
        return False
    for member in group:
        if not member.start:
            continue
        # An open end ("active" with no end date) is not evidence of overlap: records leave
        # finished courses active for years.
        if member.end and member.start <= course.start <= member.end:
            return True
        if abs(_days(member.start, course.start)) <= 14:
            return True
    return False


def _days(a: str, b: str) -> int:
    try:
        return (date.fromisoformat(b[:10]) - date.fromisoformat(a[:10])).days
    except ValueError:
        return 10_000


_PRIOR_KEYS = frozenset(f.key for f in PRIOR_THERAPY_FIELDS)
_REASON_ORDER = ("progression", "toxicity", "patient_choice", "other", "completed")


def _worst_reason(reasons: list[str]) -> str:
    return min(reasons, key=lambda r: _REASON_ORDER.index(r) if r in _REASON_ORDER else 99)


def _catalog(path: str) -> str:
    return re.sub(r"\[\d+\]", "", path)


def _shown(mapped: Mapped) -> str:
    spec = FIELDS_BY_PATH.get(_catalog(mapped.field))
    name = spec.name if spec is not None else mapped.field
    return f"{name}: {mapped.value}"


def _place(case: dict[str, Any], values: list[Mapped]) -> None:
    lists: dict[str, list[Any]] = {}
    for mapped in values:
        if mapped.value == []:
            lists.setdefault(mapped.field, [])
            continue
        if mapped.field.startswith("diagnosis.prior_therapies["):
            lists.setdefault("diagnosis.prior_therapies", []).append(mapped.value)
            continue
        spec = FIELDS_BY_PATH[mapped.field]
        if spec.type is FieldType.LIST_STR:
            lists.setdefault(mapped.field, []).append(mapped.value)
            continue
        if spec.parent is None:
            case[spec.key] = mapped.value
        else:
            case.setdefault(spec.parent, {})[spec.key] = mapped.value
    for path, items in lists.items():
        section, key = path.split(".", 1)
        case.setdefault(section, {})[key] = items


def _value_at(values: list[Mapped], json_path: str) -> Mapped | None:
    """The mapped value a validator error points at ("$.labs.inr", "$.diagnosis.
    prior_therapies[1].end_date", "$.patient.comorbidities[3]")."""
    path = json_path.removeprefix("$.")
    therapy = re.match(r"diagnosis\.prior_therapies\[(\d+)\]", path)
    if therapy:
        wanted = f"diagnosis.prior_therapies[{therapy.group(1)}]"
        return next((m for m in values if m.field == wanted), None)
    listed = re.match(r"([a-z_]+\.[a-z_0-9]+)\[(\d+)\]", path)
    if listed:
        items = [m for m in values if m.field == listed.group(1)]
        position = int(listed.group(2))
        return items[position] if position < len(items) else None
    exact = [m for m in values if m.field == path]
    if exact:
        return exact[0]
    items = [m for m in values if m.field == path.split("[")[0]]
    return items[-1] if items else None


def _refuted(resource: Any) -> bool:
    status = _first_code(getattr(resource, "verificationStatus", None))[0]
    return status in ("refuted", "entered-in-error")


def _condition_date(condition: Any) -> str:
    for name in ("onsetDateTime", "recordedDate"):
        value = getattr(condition, name, None)
        if value is not None:
            return _iso(value)
    start, _ = _period(getattr(condition, "onsetPeriod", None))
    return start


def _observation_date(obs: Any) -> str:
    for name in ("effectiveDateTime", "effectiveInstant"):
        value = getattr(obs, name, None)
        if value is not None:
            return _iso(value)
    start, end = _period(getattr(obs, "effectivePeriod", None))
    if end or start:
        return end or start
    return _iso(getattr(obs, "issued", None))


def _medication_dates(resource: Any) -> tuple[str, str]:
    start, end = _period(getattr(resource, "effectivePeriod", None))
    if not start:
        start = end = _iso(getattr(resource, "effectiveDateTime", None))
    if not start:
        for dosage in getattr(resource, "dosageInstruction", None) or []:
            repeat = getattr(getattr(dosage, "timing", None), "repeat", None)
            bounds = getattr(repeat, "boundsPeriod", None)
            if bounds is not None:
                start, end = _period(bounds)
                break
    if not start:
        start = _iso(getattr(resource, "authoredOn", None))
    return start, end


def _age(birth: Any, on: date) -> int | None:
    """Whole years on ``on``; None when a partial birth date leaves two possible ages."""
    if isinstance(birth, datetime):
        birth = birth.date()
    if isinstance(birth, date):
        earliest = latest = birth
    else:
        text = str(birth)
        try:
            if re.fullmatch(r"\d{4}", text):
                earliest, latest = date(int(text), 1, 1), date(int(text), 12, 31)
            elif re.fullmatch(r"\d{4}-\d{2}", text):
                year, month = int(text[:4]), int(text[5:7])
                following = date(year + (month == 12), month % 12 + 1, 1)
                earliest, latest = date(year, month, 1), date.fromordinal(following.toordinal() - 1)
            else:
                return None
        except ValueError:
            return None

    def years(born: date) -> int:
        return on.year - born.year - ((on.month, on.day) < (born.month, born.day))

    oldest, youngest = years(earliest), years(latest)
    return oldest if oldest == youngest and oldest >= 0 else None


def _positive_negative(holder: Any) -> str | None:
    value = getattr(holder, "valueCodeableConcept", None)
    if value is not None:
        if _has_code(value, c.POSITIVE_ANSWERS):
            return "positive"
        if _has_code(value, c.NEGATIVE_ANSWERS):
            return "negative"
        words = _text_of(value).strip().casefold()
    else:
        boolean = getattr(holder, "valueBoolean", None)
        if boolean is not None:
            return "positive" if boolean else "negative"
        words = str(getattr(holder, "valueString", "") or "").strip().casefold()
    if words in c.POSITIVE_WORDS:
        return "positive"
    if words in c.NEGATIVE_WORDS:
        return "negative"
    return None


_EGFR_DELETION = re.compile(r"p\.\(?[A-Z][a-z]{0,2}(\d+)_[A-Z][a-z]{0,2}(\d+)(?:del|delins)", re.I)
_EGFR_INSERTION = re.compile(r"p\.\(?[A-Z][a-z]{0,2}(\d+)_[A-Z][a-z]{0,2}(\d+)(?:ins|dup)", re.I)
_EGFR_INSERTION_ONE = re.compile(r"p\.\(?[A-Z][a-z]{0,2}(\d+)dup", re.I)
_THREE = {"Leu": "L", "Arg": "R", "Gly": "G", "Cys": "C", "Val": "V", "Glu": "E", "Asp": "D"}


def _protein(text: str) -> str:
    """p.Leu858Arg -> L858R (one-letter form of a missense change), else the text as given."""
    match = re.search(r"p\.\(?([A-Z][a-z]{2})(\d+)([A-Z][a-z]{2})\)?", text)
    if match and match.group(1) in _THREE and match.group(3) in _THREE:
        return f"{_THREE[match.group(1)]}{match.group(2)}{_THREE[match.group(3)]}"
    match = re.search(r"p\.\(?([A-Z])(\d+)([A-Z])\)?", text)
    return f"{match.group(1)}{match.group(2)}{match.group(3)}" if match else text


def _driver_value(
    gene: str, present: str | None, change: str, germline: bool, genes: list[str]
) -> tuple[str, str] | None:
    """The dossier field and value one gene's result gives (None: nothing to record).

    EGFR exon 19 deletions lie in codons 729-761 and exon 20 insertions in codons 762-775
    (AMP/ASCO/CAP 2017 variant interpretation; NCCN NSCLC biomarker tables); a fusion partner
    (ALK, ROS1, RET) present is positive. BRCA1/2 are recorded only from germline tests.
    """
    if present is None:
        return None
    negative = present == "negative"
    short = _protein(change)
    if gene == "EGFR":
        if negative:
            return "biomarkers.egfr", "negative"
        if short == "L858R":
            return "biomarkers.egfr", "L858R"
        if re.search(r"exon\s*19\s*del", change, re.I):
            return "biomarkers.egfr", "exon19del"
        if re.search(r"exon\s*20\s*ins", change, re.I):
            return "biomarkers.egfr", "exon20ins"
        deletion = _EGFR_DELETION.search(change)
        if deletion and int(deletion.group(1)) >= 729 and int(deletion.group(2)) <= 761:
            return "biomarkers.egfr", "exon19del"
        insertion = _EGFR_INSERTION.search(change) or _EGFR_INSERTION_ONE.search(change)
        if insertion and 762 <= int(insertion.group(1)) <= 775:
            return "biomarkers.egfr", "exon20ins"
        return "biomarkers.egfr", "other"
    if gene == "KRAS":
        return "biomarkers.kras", "negative" if negative else (
            "G12C" if short == "G12C" else "other"
        )
    if gene == "BRAF":
        return "biomarkers.braf", "negative" if negative else (
            "V600E" if short == "V600E" else "other"
        )
    if gene in ("ALK", "ROS1", "RET"):
        return f"biomarkers.{gene.lower()}", present
    if gene == "MET":
        if negative:
            return "biomarkers.met_exon14", "negative"
        if re.search(r"exon\s*14", change, re.I):
            return "biomarkers.met_exon14", "positive"
        return None
    if gene in ("BRCA1", "BRCA2") and germline:
        if negative:
            return None  # one gene negative says nothing about the other
        return "biomarkers.germline_brca", gene
    return None


# Diagnostic procedures linked to the cancer are not treatments (SNOMED procedure names).
_DIAGNOSTIC = re.compile(
    r"biops|aspiration|puncture|mammogra|\bscan\b|tomograph|imaging|ultrasonograph|scopy\b|"
    r"sampling|staging|examination",
    re.I,
)


# Liver-directed and other local treatments that are not operations (SNOMED procedure names).
_LOCOREGIONAL = re.compile(
    r"emboli[sz]ation|chemoemboli|\bTA(?:C|R)E\b|\bSIRT\b|radioemboli|ablation|radiofrequency|"
    r"microwave|cryo",
    re.I,
)
_TRANSPLANT = re.compile(r"transplant", re.I)


def _drug_name(concept: Any) -> str:
    """The medicine's name: an RxNorm ingredient display, else the concept's text."""
    if concept is None:
        return ""
    label = _text_of(concept)
    # "10 ML doxorubicin hydrochloride 2 MG/ML Injection" -> "doxorubicin hydrochloride"
    match = re.match(
        r"^(?:[\d.]+\s*(?:ML|MG|G|MCG|UNT|HR)\s+)?([a-z][a-z \-]+?)\s+[\d.]+\s*(?:MG|MCG|ML|G|UNT)",
        label,
    )
    name = match.group(1) if match else label
    name = re.sub(
        r"\s+(?:hydrochloride|sulfate|citrate|mesylate|sodium)$", "", name.strip(), flags=re.I
    )
    # RxNorm writes look-alike drugs in tall-man letters ("DOXOrubicin"): plain lower case.
    return " ".join(
        w.lower() if re.search(r"[a-z]", w) and re.search(r"[A-Z]", w) else w for w in name.split()
    )


def _radiotherapy_text(proc: Any, label: str) -> str:
    modalities = [
        _text_of(inner.valueCodeableConcept)
        for ext in _extensions(proc, c.mcode("mcode-radiotherapy-modality-and-technique"))
        for inner in _extensions(ext, c.mcode("mcode-radiotherapy-modality"))
    ]
    named = label if label and not label.isdigit() else "radiotherapy course"
    parts = [named + (f" ({'; '.join(dict.fromkeys(modalities))})" if modalities else "")]
    for ext in _extensions(proc, c.EXT_RT_SESSIONS):
        if ext.valueUnsignedInt:
            parts.append(f"{ext.valueUnsignedInt} sessions")
    for site in getattr(proc, "bodySite", None) or []:
        parts.append(f"to {_text_of(site)}")
        break
    return ", ".join(parts)[:200]


def map_bundle(
    parsed: ParsedBundle,
    *,
    as_of: date,
    pseudonym: str,
    case_id: str,
    question: str = DEFAULT_QUESTION,
) -> FhirMapping:
    """The case a valid bundle describes on ``as_of`` (the date of the MDT question)."""
    if not parsed.ok:
        raise MappingError("Bundle", "the bundle has errors and cannot be mapped")
    mapper = _Mapper(parsed, as_of=as_of)
    mapper.run()
    return mapper.build(pseudonym=pseudonym, case_id=case_id, question=question)


def iter_sources(mapping: FhirMapping) -> Iterator[tuple[str, Source]]:
    for mapped in mapping.values:
        yield mapped.field, mapped.source
