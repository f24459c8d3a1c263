"""The codes the FHIR mapping reads and writes: LOINC observations, SNOMED CT concepts of the
mCODE STU4 value sets, ICD-10 / ICD-O-3 cancer codes, HGNC genes, with the dossier field each
one fills.

Sources: HL7 mCODE STU4 (4.0.0, 2024) value sets (TumorMarkerTestVS, ProcedureIntentVS,
TreatmentTerminationReasonVS, TNM staging-type VSs, LateralityQualifierVS, ConditionStatusTrendVS,
LymphomaStagingMethodVS) and profiles (ECOG 89247-1, Karnofsky 89243-0, tumor size 21889-1 with
component 33728-7, genomic variant 69548-6 and its components); US Core 6 vital signs and lab
profiles; LOINC 2.7x names; HGNC gene identifiers; ICD-10 chapter II (C50, C22, C34, C81-C86)
and ICD-O-3 topography/morphology. Displays are paraphrased labels, not code-system text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

LOINC = "http://loinc.org"
SNOMED = "http://snomed.info/sct"
UCUM = "http://unitsofmeasure.org"
RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm"
HGNC = "http://www.genenames.org"
ICD10 = ("http://hl7.org/fhir/sid/icd-10-cm", "http://hl7.org/fhir/sid/icd-10")
ICDO3 = "http://terminology.hl7.org/CodeSystem/icd-o-3"
AJCC = "http://cancerstaging.org"
CONDITION_CLINICAL = "http://terminology.hl7.org/CodeSystem/condition-clinical"
CONDITION_VERIFICATION = "http://terminology.hl7.org/CodeSystem/condition-ver-status"
MCODE = "http://hl7.org/fhir/us/mcode/StructureDefinition/"


def mcode(name: str) -> str:
    return MCODE + name


# Profiles whose resources the mapping reads as cancer-related (mCODE STU4).
PRIMARY_CANCER = mcode("mcode-primary-cancer-condition")
SECONDARY_CANCER = mcode("mcode-secondary-cancer-condition")
SURGICAL_PROCEDURE = mcode("mcode-cancer-related-surgical-procedure")
RADIOTHERAPY_COURSE = mcode("mcode-radiotherapy-course-summary")
CANCER_MEDICATION_PROFILES = frozenset(
    {
        mcode("mcode-cancer-related-medication-request"),
        mcode("mcode-cancer-related-medication-administration"),
        mcode("mcode-cancer-related-medication-statement"),
    }
)
EXT_HISTOLOGY = mcode("mcode-histology-morphology-behavior")
EXT_PROCEDURE_INTENT = mcode("mcode-procedure-intent")
EXT_LATERALITY = mcode("mcode-laterality-qualifier")
EXT_RT_SESSIONS = mcode("mcode-radiotherapy-sessions")
EXT_RT_DOSE = mcode("mcode-radiotherapy-dose-delivered-to-volume")
EXT_TERMINATION_REASON = mcode("mcode-treatment-termination-reason")


@dataclass(frozen=True)
class Lab:
    """A LOINC observation that fills one numeric dossier field, in the field's UCUM unit."""

    field: str
    unit: str
    molar_mass_g_mol: float | None = None


# Molar masses for mass <-> substance conversion (Tietz Textbook of Laboratory Medicine, 7th ed.,
# conversion factors: bilirubin 17.1 umol/L per mg/dL, creatinine 88.4 umol/L per mg/dL).
_BILIRUBIN_G_MOL = 584.66
_CREATININE_G_MOL = 113.12

LABS: Mapping[str, Lab] = MappingProxyType(
    {
        # bilirubin, total, serum/plasma (mass and substance concentration)
        "1975-2": Lab("labs.bilirubin_mg_dl", "mg/dL", _BILIRUBIN_G_MOL),
        "14631-6": Lab("labs.bilirubin_mg_dl", "mg/dL", _BILIRUBIN_G_MOL),
        "42719-5": Lab("labs.bilirubin_mg_dl", "mg/dL", _BILIRUBIN_G_MOL),
        # albumin, serum/plasma
        "1751-7": Lab("labs.albumin_g_dl", "g/dL"),
        "61151-7": Lab("labs.albumin_g_dl", "g/dL"),
        "2862-1": Lab("labs.albumin_g_dl", "g/dL"),
        # INR
        "6301-6": Lab("labs.inr", "1"),
        "34714-6": Lab("labs.inr", "1"),
        "46418-0": Lab("labs.inr", "1"),
        # creatinine, serum/plasma and blood
        "2160-0": Lab("labs.creatinine_mg_dl", "mg/dL", _CREATININE_G_MOL),
        "14682-9": Lab("labs.creatinine_mg_dl", "mg/dL", _CREATININE_G_MOL),
        "38483-4": Lab("labs.creatinine_mg_dl", "mg/dL", _CREATININE_G_MOL),
        "59826-8": Lab("labs.creatinine_mg_dl", "mg/dL", _CREATININE_G_MOL),
        # platelets, blood
        "777-3": Lab("labs.platelets_10e9_l", "10*9/L"),
        "26515-7": Lab("labs.platelets_10e9_l", "10*9/L"),
        # haemoglobin, blood
        "718-7": Lab("labs.hemoglobin_g_dl", "g/dL"),
        "20509-6": Lab("labs.hemoglobin_g_dl", "g/dL"),
        # neutrophils, absolute count, blood
        "751-8": Lab("labs.anc_10e9_l", "10*9/L"),
        "26499-4": Lab("labs.anc_10e9_l", "10*9/L"),
        "753-4": Lab("labs.anc_10e9_l", "10*9/L"),
        # HBV DNA viral load
        "29615-2": Lab("labs.hbv_dna_iu_ml", "[IU]/mL"),
        "42595-9": Lab("labs.hbv_dna_iu_ml", "[IU]/mL"),
        # alpha-fetoprotein, serum/plasma
        "1834-1": Lab("biomarkers.afp_ng_ml", "ng/mL"),
        "83073-7": Lab("biomarkers.afp_ng_ml", "ng/mL"),
        # LDH, serum/plasma (its reference range high fills the upper limit of normal)
        "2532-0": Lab("biomarkers.ldh_u_l", "U/L"),
        "14804-9": Lab("biomarkers.ldh_u_l", "U/L"),
        "14805-6": Lab("biomarkers.ldh_u_l", "U/L"),
        # tumour markers read as percentages (mCODE TumorMarkerTestVS)
        "85329-1": Lab("biomarkers.er_pct", "%"),
        "14228-1": Lab("biomarkers.er_pct", "%"),
        "85325-9": Lab("biomarkers.pr_pct", "%"),
        "14230-7": Lab("biomarkers.pr_pct", "%"),
        "85330-9": Lab("biomarkers.ki67_pct", "%"),
        "29593-1": Lab("biomarkers.ki67_pct", "%"),
        "83053-9": Lab("biomarkers.pdl1_tps_pct", "%"),
        # age (exported dossiers carry it: the case file has no birth date)
        "30525-0": Lab("patient.age_years", "a"),
        # vital signs and cardiac function (US Core / LOINC)
        "29463-7": Lab("patient.weight_kg", "kg"),
        "3141-9": Lab("patient.weight_kg", "kg"),
        "8302-2": Lab("patient.height_cm", "cm"),
        "10230-1": Lab("organ_function.lvef_pct", "%"),
        "8806-2": Lab("organ_function.lvef_pct", "%"),
        "8636-3": Lab("organ_function.qtc_ms", "ms"),
        "8867-4": Lab("organ_function.heart_rate_bpm", "/min"),
    }
)
LDH_FIELD = "biomarkers.ldh_u_l"
LDH_ULN_FIELD = "biomarkers.ldh_uln_u_l"

# Qualitative results (positive / negative) by LOINC: field and the words of each answer.
QUALITATIVE: Mapping[str, str] = MappingProxyType(
    {
        "5196-1": "labs.hbsag",
        "5195-3": "labs.hbsag",
        "16933-4": "labs.anti_hbc",
        "13952-7": "labs.anti_hbc",
        "11259-9": "labs.hcv_rna",
        "75622-1": "labs.hiv",
        "7918-6": "labs.hiv",
        "10438-0": "biomarkers.cd20",
    }
)
POSITIVE_ANSWERS = frozenset(
    {
        "LA6576-8",  # Positive
        "10828004",  # Positive (SNOMED)
        "LA9633-4",  # Present
        "52101004",  # Present (SNOMED)
        "LA11882-0",  # Detected
        "260373001",  # Detected (SNOMED)
        "POS",
    }
)
NEGATIVE_ANSWERS = frozenset(
    {
        "LA6577-6",  # Negative
        "260385009",  # Negative (SNOMED)
        "LA9634-2",  # Absent
        "2667000",  # Absent (SNOMED)
        "LA11883-8",  # Not detected
        "260415000",  # Not detected (SNOMED)
        "NEG",
    }
)
POSITIVE_WORDS = frozenset({"positive", "present", "detected", "reactive", "pos"})
NEGATIVE_WORDS = frozenset(
    {"negative", "absent", "not detected", "non-reactive", "nonreactive", "neg"}
)

# Presence-only receptor results: the dossier needs a percentage (a qualitative result is kept
# in the notes and listed as not imported).
RECEPTOR_PRESENCE: Mapping[str, str] = MappingProxyType(
    {
        "85337-4": "ER",
        "40556-3": "ER",
        "16112-5": "ER",
        "85339-0": "PR",
        "40557-1": "PR",
        "16113-3": "PR",
    }
)
# HER2 by immunohistochemistry (score answers) and by ISH / overall interpretation.
HER2_IHC = frozenset({"85319-2", "72383-3"})
HER2_ISH = frozenset({"85318-4", "31150-6", "96893-3"})
HER2_INTERPRETATION = frozenset({"48676-1"})
HER2_IHC_ANSWERS: Mapping[str, str] = MappingProxyType(
    {"LA6111-4": "0", "LA11841-6": "1+", "LA11842-4": "2+", "LA11843-2": "3+"}
)

# Performance status (mCODE ECOG and Karnofsky profiles; ECOG answers LA9622-7 ... LA9627-6).
ECOG = "89247-1"
KARNOFSKY = "89243-0"
ECOG_ANSWERS: Mapping[str, int] = MappingProxyType(
    {"LA9622-7": 0, "LA9623-5": 1, "LA9624-3": 2, "LA9625-0": 3, "LA9626-8": 4, "LA9627-6": 5}
)


def ecog_from_karnofsky(score: int) -> int | None:
    """ECOG grade of a Karnofsky score (ECOG-ACRIN conversion: 100-90 -> 0, 80-70 -> 1,
    60-50 -> 2, 40-30 -> 3, 20-10 -> 4); None for 0 (dead) or a score not on the scale."""
    table = {100: 0, 90: 0, 80: 1, 70: 1, 60: 2, 50: 2, 40: 3, 30: 3, 20: 4, 10: 4}
    return table.get(score)


# Tumour size (mCODE tumor size: longest dimension component).
TUMOR_SIZE = "21889-1"
TUMOR_LONGEST_DIMENSION = "33728-7"

# TNM observations: (axis, clinical or pathologic) by SNOMED (mCODE staging-type VSs) and LOINC.
TNM_CATEGORY: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "78873005": ("t", ""),
        "399504009": ("t", "c"),
        "384625004": ("t", "p"),
        "277206009": ("n", ""),
        "399534004": ("n", "c"),
        "371494008": ("n", "p"),
        "277208005": ("m", ""),
        "399387003": ("m", "c"),
        "371497001": ("m", "p"),
        "21905-5": ("t", "c"),
        "21899-0": ("t", "p"),
        "21906-3": ("n", "c"),
        "21900-6": ("n", "p"),
        "21907-1": ("m", "c"),
        "21901-4": ("m", "p"),
    }
)
TNM_STAGE_GROUP = frozenset({"399390009", "399537006", "399588009", "21908-9", "21902-2"})
AJCC_8TH_METHOD = "897275008"
# "American Joint Committee on Cancer cT3 (qualifier value)", or the AJCC code "cT3" / "T3".
TNM_VALUE = re.compile(
    r"(?:^|American Joint Committee on Cancer\s+)(?:y|r|a)?[cp]?(?P<code>[TNM](?:is|[0-4X])"
    r"(?:mi|[a-d])?)\b"
)

# Lymphoma stage (mCODE lymphoma stage profile, SNOMED 385388004 "lymphoma stage").
LYMPHOMA_STAGE = frozenset({"385388004"})
ANN_ARBOR = re.compile(r"\b(?:stage\s+)?(?P<stage>IV|III|II|I)(?P<mods>[ABESX]*)\b", re.I)
BULKY_COMPONENT = "260873006"

# Disease status (mCODE cancer disease status 97509-4, ConditionStatusTrendVS).
DISEASE_STATUS = "97509-4"
PROGRESSION_STATUS = "271299001"

# Genomic variant observations and their components (mCODE genomic variant profile).
GENOMIC_VARIANT = frozenset({"69548-6"})
GENE_STUDIED = frozenset({"48018-6", "81247-9"})
AMINO_ACID_CHANGE = frozenset({"48005-3"})
DNA_CHANGE = frozenset({"48004-6", "81290-9"})
VARIANT_NAME = frozenset({"81252-9"})
GENOMIC_SOURCE = frozenset({"48002-0"})
GERMLINE = frozenset({"LA6683-2"})
CLINICAL_SIGNIFICANCE = frozenset({"53037-8"})
BENIGN_OR_UNCERTAIN = frozenset(
    {"LA6675-8", "LA26332-9", "LA6682-4", "LA26333-7"}  # benign, likely benign, VUS
)
GENES: Mapping[str, str] = MappingProxyType(
    {
        "HGNC:3236": "EGFR",
        "HGNC:427": "ALK",
        "HGNC:10261": "ROS1",
        "HGNC:6407": "KRAS",
        "HGNC:1097": "BRAF",
        "HGNC:7029": "MET",
        "HGNC:9967": "RET",
        "HGNC:1100": "BRCA1",
        "HGNC:1101": "BRCA2",
    }
)

# Procedure intent (ProcedureIntentVS) -> the case file's intent.
INTENTS: Mapping[str, str] = MappingProxyType({"373808002": "curative", "363676003": "palliative"})
DIAGNOSTIC_INTENT = "261004008"
# Termination reasons (TreatmentTerminationReasonVS) -> stop_reason.
STOP_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "266721009": "progression",  # no response to treatment
        "407563006": "toxicity",  # treatment not tolerated
        "105480006": "patient_choice",  # refusal of treatment by patient
        "182992009": "completed",  # treatment completed
        "160932005": "other",
        "184081006": "other",
        "309846006": "other",
        "399307001": "other",
        "419620001": "other",
        "7058009": "other",
        "443729008": "other",
        "77386006": "other",
    }
)
LATERALITY: Mapping[str, str] = MappingProxyType(
    {"7771000": "left", "24028007": "right", "51440002": "bilateral"}
)
# Body sites whose code says the side (SNOMED body structures).
SIDED_SITES: Mapping[str, str] = MappingProxyType(
    {
        "80248007": "left",  # left breast
        "73056007": "right",  # right breast
        "44029006": "left",  # left lung
        "3341006": "right",  # right lung
    }
)
LEFT_RIGHT = re.compile(r"\b(?P<side>left|right|bilateral)\b", re.I)


@dataclass(frozen=True)
class CancerCode:
    """What a condition code says about the cancer: its type and, when the code holds it, the
    histology."""

    cancer_type: str
    histology: str | None = None


# SNOMED CT disorders (mCODE PrimaryOrUncertainBehaviorCancerDisorderVS members).
SNOMED_CANCERS: Mapping[str, CancerCode] = MappingProxyType(
    {
        "254837009": CancerCode("breast"),
        "372064008": CancerCode("breast"),
        "353431000119107": CancerCode("breast"),
        "408643008": CancerCode("breast", "infiltrating duct carcinoma"),
        "109841003": CancerCode("hcc", "hepatocellular carcinoma"),
        "254626006": CancerCode("lung_adenocarcinoma", "adenocarcinoma of lung"),
        "118600007": CancerCode("lymphoma"),
        "118599009": CancerCode("lymphoma", "Hodgkin lymphoma"),
        "118601006": CancerCode("lymphoma", "non-Hodgkin lymphoma"),
    }
)
# Lung cancers that need an adenocarcinoma histology for the lung pathway.
SNOMED_LUNG = frozenset({"254637007", "93880001", "187875007"})
# ICD-O-3 / SNOMED morphology of adenocarcinoma and hepatocellular carcinoma.
ADENOCARCINOMA = re.compile(r"\badenocarcinoma\b|^814\d/3$|^82[5-5]\d/3$|^855\d/3$", re.I)
HEPATOCELLULAR = re.compile(r"hepatocellular|liver cell carcinoma|^817\d/3$", re.I)
LYMPHOMA_MORPHOLOGY = re.compile(r"^9(?:59|6\d|7[0-2])\d/3$")


def icd10_cancer(code: str) -> str | None:
    """Cancer type of an ICD-10 code: C50 breast, C22.0 liver cell carcinoma, C34 lung (type
    decided by histology), C81-C86 lymphoma; None otherwise."""
    code = code.upper().replace(".", "")
    if code.startswith("C50"):
        return "breast"
    if code.startswith("C220"):
        return "hcc"
    if code.startswith("C34"):
        return "lung"
    if code[:3] in ("C81", "C82", "C83", "C84", "C85", "C86"):
        return "lymphoma"
    return None


# Words of a condition's display or text, used only when no code is recognised (the review
# screen says so beside the field).
CANCER_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bbreast\b", re.I), "breast"),
    (re.compile(r"hepatocellular|liver cell carcinoma|\bHCC\b", re.I), "hcc"),
    (re.compile(r"\blymphoma\b|\bhodgkin", re.I), "lymphoma"),
    (re.compile(r"\blung\b|\bNSCLC\b|bronch", re.I), "lung"),
)


# Liver findings for Child-Pugh (SNOMED CT): ascites, hepatic encephalopathy, and the severity
# qualifiers of Condition.severity (mild, moderate, severe).
ASCITES = "389026000"
HEPATIC_ENCEPHALOPATHY = "13920009"
MILD, MODERATE, SEVERE = "255604002", "6736007", "24484000"
# Condition severity -> the dossier's grade; a severity that straddles two grades is not placed.
ASCITES_GRADES: Mapping[str, str] = MappingProxyType(
    {MILD: "mild", MODERATE: "moderate_severe", SEVERE: "moderate_severe"}
)
ENCEPHALOPATHY_GRADES: Mapping[str, str] = MappingProxyType(
    {MILD: "grade_1_2", SEVERE: "grade_3_4"}
)
EXT_RELATED_CONDITION_ABSENT = mcode("mcode-related-condition-absent")
