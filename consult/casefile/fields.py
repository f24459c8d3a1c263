"""Field catalog of the mdtboard.case/1 case-file format: the single source of truth."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from clinical.vocab import CancerType

FORMAT_ID = "mdtboard.case/1"

# Letters, digits, "-", "_" and "."; the first character may not be "." or "-" so that a case
# id can never be "..", a hidden file name or look like a command-line option.
CASE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

ALL: frozenset[str] = frozenset(c.value for c in CancerType)
HCC: frozenset[str] = frozenset({"hcc"})
LUNG: frozenset[str] = frozenset({"lung_adenocarcinoma"})
BREAST: frozenset[str] = frozenset({"breast"})
LYMPHOMA: frozenset[str] = frozenset({"lymphoma"})
# Solid tumours staged with AJCC TNM; "other" is included because its organ is unknown.
TNM_TYPES: frozenset[str] = frozenset({"hcc", "lung_adenocarcinoma", "breast", "other"})

# AJCC 8th edition categories accepted per organ, without c/p/y prefixes. Generic parent
# categories (lung T1/T2/M1, breast T1/T4/N2/N3, liver T1) are accepted because a report that
# does not give the subcategory must not force anyone to invent one (never impute).
TNM_CODES: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "lung_adenocarcinoma": MappingProxyType(
            {
                "t": (
                    "TX",
                    "T0",
                    "Tis",
                    "T1mi",
                    "T1",
                    "T1a",
                    "T1b",
                    "T1c",
                    "T2",
                    "T2a",
                    "T2b",
                    "T3",
                    "T4",
                ),
                "n": ("NX", "N0", "N1", "N2", "N3"),
                "m": ("M0", "M1", "M1a", "M1b", "M1c"),
            }
        ),
        "breast": MappingProxyType(
            {
                "t": (
                    "TX",
                    "T0",
                    "Tis",
                    "T1mi",
                    "T1",
                    "T1a",
                    "T1b",
                    "T1c",
                    "T2",
                    "T3",
                    "T4",
                    "T4a",
                    "T4b",
                    "T4c",
                    "T4d",
                ),
                "n": (
                    "NX",
                    "N0",
                    "N1mi",
                    "N1",
                    "N1a",
                    "N1b",
                    "N1c",
                    "N2",
                    "N2a",
                    "N2b",
                    "N3",
                    "N3a",
                    "N3b",
                    "N3c",
                ),
                "m": ("M0", "M1"),
            }
        ),
        "hcc": MappingProxyType(
            {
                "t": ("TX", "T0", "T1", "T1a", "T1b", "T2", "T3", "T4"),
                "n": ("NX", "N0", "N1"),
                "m": ("M0", "M1"),
            }
        ),
    }
)

# For "other" the organ is unknown, so only the general shape of a TNM code is checked.
TNM_GENERIC_PATTERNS: Mapping[str, str] = MappingProxyType(
    {"t": r"^T[A-Za-z0-9]{1,5}$", "n": r"^N[A-Za-z0-9]{1,5}$", "m": r"^M[A-Za-z0-9]{1,5}$"}
)


class FieldType(enum.Enum):
    """Value type of a catalog field (every field also accepts null)."""

    INT = "int"
    NUMBER = "number"
    STR = "str"
    BOOL = "bool"
    ENUM = "enum"
    DATE = "date"
    LIST_STR = "list[str]"
    PRIOR_THERAPIES = "list[prior_therapy]"
    # {"organ": "lung", "grade": 3}: the worst toxicity of one prior therapy (TOXICITY_FIELDS).
    TOXICITY = "toxicity"


@dataclass(frozen=True)
class Section:
    """A group of fields as shown to clinicians; "case" holds the top-level keys."""

    key: str
    label: str
    description: str


@dataclass(frozen=True)
class Field:
    """One field of the format; ``path`` is dotted ("labs.bilirubin_mg_dl")."""

    path: str
    section: str
    name: str
    type: FieldType
    unit: str = ""
    choices: tuple[tuple[str, str], ...] = ()
    minimum: int | float | None = None
    maximum: int | float | None = None
    exclusive_minimum: bool = False
    warn_below: int | float | None = None
    warn_above: int | float | None = None
    max_length: int | None = None
    max_items: int | None = None
    pattern: str | None = None
    required: bool = False
    help: str = ""
    applies_to: frozenset[str] = ALL

    @property
    def key(self) -> str:
        """Last component of the path: the JSON key inside its parent object."""
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str | None:
        """Dotted path of the JSON object holding this key, None at top level."""
        return self.path.rsplit(".", 1)[0] if "." in self.path else None

    @property
    def label(self) -> str:
        """Clinician label with the unit explicit, e.g. "Bilirubin (mg/dL)"."""
        return f"{self.name} ({self.unit})" if self.unit else self.name

    @property
    def choice_values(self) -> tuple[str, ...]:
        return tuple(value for value, _ in self.choices)

    @property
    def is_numeric(self) -> bool:
        return self.type in (FieldType.INT, FieldType.NUMBER)

    def applies(self, cancer_type: str) -> bool:
        return cancer_type in self.applies_to


def _c(*values: str) -> tuple[tuple[str, str], ...]:
    """Choices whose display label is the value itself."""
    return tuple((v, v) for v in values)


# "times ten to the ninth per litre", written with escapes so the sign cannot pass for an "x".
_PER_LITRE = "\u00d710\u2079/L"
_POS_NEG = (("positive", "positive"), ("negative", "negative"))
_SHORT = 200
# The width of consult.models.Patient.pseudonym: a longer one passed validation and then failed
# to save, half-way through a multi-file import.
PSEUDONYM_MAX_LENGTH = 64
_TEXT = 10_000
_LIST_ITEMS = 100

SECTIONS: tuple[Section, ...] = (
    Section("case", "Case", "Format, identifiers, cancer type, the MDT question and notes."),
    Section("patient", "Patient", "Demographics, performance status and context."),
    Section("diagnosis", "Diagnosis", "Histology, disease setting and prior therapies."),
    Section("index_lesion", "Index lesion", "The lesion the MDT question is about."),
    Section("staging", "Staging", "TNM (AJCC 8), liver tumour burden and Ann Arbor inputs."),
    Section("biomarkers", "Biomarkers", "Tumour markers and molecular pathology."),
    Section("labs", "Laboratory values", "Most recent blood results."),
    Section("organ_function", "Organ function", "Liver, heart and lung function."),
)

# Order of FIELDS is the order of keys in the format (FORMAT.md §1) and of canonical exports.
FIELDS: tuple[Field, ...] = (
    Field("format", "case", "Format", FieldType.STR, required=True, help=f'Always "{FORMAT_ID}".'),
    Field(
        "case_id",
        "case",
        "Case ID",
        FieldType.STR,
        required=True,
        max_length=64,
        pattern=CASE_ID_PATTERN,
        help="1-64 letters, digits, '-', '_' or '.', starting with a letter or digit.",
    ),
    Field(
        "cancer_type",
        "case",
        "Cancer type",
        FieldType.ENUM,
        required=True,
        choices=tuple((c.value, c.in_sentence) for c in CancerType),
        help="Selects the guideline pathway and which fields apply.",
    ),
    Field(
        "question",
        "case",
        "MDT question",
        FieldType.STR,
        max_length=_TEXT,
        help="The question put to the tumour board.",
    ),
    # patient
    Field(
        "patient.pseudonym",
        "patient",
        "Pseudonym",
        FieldType.STR,
        max_length=PSEUDONYM_MAX_LENGTH,
        help="Never a real name or hospital number.",
    ),
    Field(
        "patient.age_years",
        "patient",
        "Age",
        FieldType.INT,
        unit="years",
        minimum=0,
        maximum=120,
        help="Age in completed years.",
    ),
    Field("patient.sex", "patient", "Sex", FieldType.ENUM, choices=_c("female", "male", "other")),
    Field(
        "patient.ecog",
        "patient",
        "ECOG performance status",
        FieldType.INT,
        minimum=0,
        maximum=4,
        help="0 fully active to 4 completely disabled.",
    ),
    Field(
        "patient.weight_kg",
        "patient",
        "Weight",
        FieldType.NUMBER,
        unit="kg",
        minimum=0.3,
        maximum=400,
    ),
    Field(
        "patient.height_cm",
        "patient",
        "Height",
        FieldType.NUMBER,
        unit="cm",
        minimum=40,
        maximum=250,
        warn_below=130,
        warn_above=210,
        help="With the weight it gives the body-mass index and the ideal and adjusted body "
        "weight used for carboplatin (Calvert) dosing.",
    ),
    Field(
        "patient.menopausal_status",
        "patient",
        "Menopausal status",
        FieldType.ENUM,
        choices=_c("premenopausal", "postmenopausal"),
        applies_to=BREAST | {"other"},
        help="Only for female patients.",
    ),
    Field("patient.pregnant", "patient", "Pregnant", FieldType.BOOL),
    Field(
        "patient.gestational_age_weeks",
        "patient",
        "Gestational age",
        FieldType.INT,
        unit="weeks",
        minimum=0,
        maximum=42,
        help="Completed weeks of pregnancy; only when pregnant. Before week 14 (first "
        "trimester) no chemotherapy is given.",
    ),
    Field("patient.breastfeeding", "patient", "Breastfeeding", FieldType.BOOL),
    Field(
        "patient.frailty",
        "patient",
        "Frailty",
        FieldType.ENUM,
        choices=_c("fit", "vulnerable", "frail"),
        help="Geriatric assessment or the clinician's judgement.",
    ),
    Field(
        "patient.g8_score",
        "patient",
        "G8 geriatric screening score",
        FieldType.INT,
        minimum=0,
        maximum=17,
        help="0-17; 14 or less suggests a full geriatric assessment.",
    ),
    Field(
        "patient.comorbidities",
        "patient",
        "Comorbidities",
        FieldType.LIST_STR,
        max_items=_LIST_ITEMS,
        max_length=_SHORT * 2,
    ),
    Field(
        "patient.medications",
        "patient",
        "Current medications",
        FieldType.LIST_STR,
        max_items=_LIST_ITEMS,
        max_length=_SHORT * 2,
    ),
    Field(
        "patient.allergies",
        "patient",
        "Allergies",
        FieldType.LIST_STR,
        max_items=_LIST_ITEMS,
        max_length=_SHORT * 2,
    ),
    Field(
        "patient.preferences",
        "patient",
        "Patient preferences",
        FieldType.STR,
        max_length=_TEXT,
        help="Goals of care, fertility wishes, refusals.",
    ),
    # A prior immune-related adverse event (issue 21 item 4): the worst one, as the clinician
    # records it. The text reader fills it from the notes when it is empty.
    Field(
        "patient.prior_irae_organ",
        "patient",
        "Prior immune-related adverse event: organ",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("lung", "lung (pneumonitis)"),
            ("colon", "bowel (colitis)"),
            ("liver", "liver (hepatitis)"),
            ("kidney", "kidney (nephritis)"),
            ("heart", "heart (myocarditis)"),
            ("pituitary", "pituitary (hypophysitis)"),
            ("thyroid", "thyroid"),
            ("pancreas", "pancreas / diabetes"),
            ("skin", "skin (severe cutaneous reaction)"),
            ("muscle", "muscle (myositis)"),
            ("nervous_system", "nervous system"),
            ("other", "other"),
        ),
        help="The worst immune-related adverse event on a checkpoint inhibitor; none if "
        "immunotherapy was given without one.",
    ),
    Field(
        "patient.prior_irae_grade",
        "patient",
        "Prior immune-related adverse event: CTCAE grade",
        FieldType.INT,
        minimum=1,
        maximum=5,
        help="CTCAE v5 grade 1-5. Grade 3 or more usually rules out a rechallenge "
        "(ESMO 2022 immunotherapy toxicity guideline).",
    ),
    Field(
        "patient.prior_irae_agent",
        "patient",
        "Prior immune-related adverse event: agent",
        FieldType.STR,
        max_length=_SHORT,
        help="E.g. ipilimumab + nivolumab.",
    ),
    Field(
        "patient.prior_irae_date",
        "patient",
        "Prior immune-related adverse event: date",
        FieldType.DATE,
        unit="yyyy-mm-dd",
    ),
    # diagnosis
    Field("diagnosis.histology", "diagnosis", "Histology", FieldType.STR, max_length=_SHORT),
    Field(
        "diagnosis.date",
        "diagnosis",
        "Date of diagnosis",
        FieldType.DATE,
        unit="yyyy-mm-dd",
        help="The date of the diagnostic biopsy or imaging; no lesion is measured before it.",
    ),
    Field(
        "diagnosis.subtype",
        "diagnosis",
        "Subtype",
        FieldType.STR,
        max_length=_SHORT,
        help="E.g. diffuse large B-cell lymphoma, GCB.",
    ),
    Field(
        "diagnosis.setting",
        "diagnosis",
        "Disease setting",
        FieldType.ENUM,
        choices=(
            ("newly_diagnosed", "newly diagnosed"),
            ("recurrent", "recurrent"),
            ("progressive", "progressive"),
            ("residual_after_neoadjuvant", "residual after neoadjuvant therapy"),
        ),
    ),
    Field(
        "diagnosis.prior_therapies",
        "diagnosis",
        "Prior therapies",
        FieldType.PRIOR_THERAPIES,
        max_items=30,
        help="One entry per treatment already given: each line of systemic therapy, and each "
        "operation, radiotherapy course, locoregional treatment or transplant.",
    ),
    Field(
        "diagnosis.transplant_history",
        "diagnosis",
        "Transplant history",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("liver", "liver"),
            ("kidney", "kidney"),
            ("allogeneic_hsct", "allogeneic stem-cell transplant"),
            ("other", "other"),
        ),
    ),
    # index lesion
    Field("index_lesion.site", "index_lesion", "Site", FieldType.STR, max_length=_SHORT),
    Field(
        "index_lesion.size_mm",
        "index_lesion",
        "Index lesion size",
        FieldType.NUMBER,
        unit="mm",
        minimum=0,
        exclusive_minimum=True,
        maximum=400,
        help="Longest diameter.",
    ),
    Field(
        "index_lesion.count",
        "index_lesion",
        "Number of lesions",
        FieldType.INT,
        minimum=0,
        maximum=1000,
    ),
    Field(
        "index_lesion.laterality",
        "index_lesion",
        "Laterality",
        FieldType.ENUM,
        choices=_c("left", "right", "bilateral"),
    ),
    Field(
        "index_lesion.description",
        "index_lesion",
        "Imaging description",
        FieldType.STR,
        max_length=_TEXT,
    ),
    # staging
    Field(
        "staging.t",
        "staging",
        "T category",
        FieldType.STR,
        max_length=8,
        applies_to=TNM_TYPES,
        help="AJCC 8th edition, without c/p/y prefix, e.g. T1b.",
    ),
    Field(
        "staging.n",
        "staging",
        "N category",
        FieldType.STR,
        max_length=8,
        applies_to=TNM_TYPES,
        help="AJCC 8th edition, e.g. N0.",
    ),
    Field(
        "staging.m",
        "staging",
        "M category",
        FieldType.STR,
        max_length=8,
        applies_to=TNM_TYPES,
        help="AJCC 8th edition, e.g. M1a.",
    ),
    Field(
        "staging.tnm_edition",
        "staging",
        "TNM edition",
        FieldType.INT,
        minimum=8,
        maximum=8,
        applies_to=TNM_TYPES,
        help="Only the AJCC 8th edition is supported.",
    ),
    Field(
        "staging.nodules_count",
        "staging",
        "Number of liver nodules",
        FieldType.INT,
        minimum=0,
        maximum=1000,
        applies_to=HCC,
    ),
    Field(
        "staging.largest_nodule_mm",
        "staging",
        "Largest liver nodule",
        FieldType.NUMBER,
        unit="mm",
        minimum=0,
        exclusive_minimum=True,
        maximum=400,
        applies_to=HCC,
    ),
    Field(
        "staging.macrovascular_invasion",
        "staging",
        "Macrovascular invasion",
        FieldType.BOOL,
        applies_to=HCC,
        help="Tumour invasion or thrombus of portal or hepatic vein branches on imaging.",
    ),
    Field(
        "staging.extrahepatic_spread",
        "staging",
        "Extrahepatic spread",
        FieldType.BOOL,
        applies_to=HCC,
        help="Lymph-node (N1) or distant (M1) disease.",
    ),
    Field(
        "staging.brain_metastases_count",
        "staging",
        "Number of brain metastases",
        FieldType.INT,
        minimum=0,
        maximum=1000,
        applies_to=LUNG | BREAST | {"other"},
    ),
    Field(
        "staging.ann_arbor_stage",
        "staging",
        "Ann Arbor stage",
        FieldType.ENUM,
        choices=_c("I", "II", "III", "IV"),
        applies_to=LYMPHOMA,
        help="As read from PET-CT (Lugano).",
    ),
    Field(
        "staging.bone_marrow_involvement",
        "staging",
        "Bone marrow involvement",
        FieldType.BOOL,
        applies_to=LYMPHOMA,
    ),
    Field(
        "staging.kidney_or_adrenal_involvement",
        "staging",
        "Kidney or adrenal involvement",
        FieldType.BOOL,
        applies_to=LYMPHOMA,
        help="Input of the CNS-IPI.",
    ),
    Field(
        "staging.nodal_regions_involved",
        "staging",
        "Nodal regions involved",
        FieldType.INT,
        minimum=0,
        maximum=50,
        applies_to=LYMPHOMA,
    ),
    Field(
        "staging.both_sides_of_diaphragm",
        "staging",
        "Disease on both sides of diaphragm",
        FieldType.BOOL,
        applies_to=LYMPHOMA,
    ),
    Field(
        "staging.extranodal_sites_count",
        "staging",
        "Number of extranodal sites",
        FieldType.INT,
        minimum=0,
        maximum=50,
        applies_to=LYMPHOMA,
    ),
    Field(
        "staging.b_symptoms",
        "staging",
        "B symptoms",
        FieldType.BOOL,
        applies_to=LYMPHOMA,
        help="Fever, drenching night sweats or >10% weight loss in 6 months.",
    ),
    Field("staging.bulky_disease", "staging", "Bulky disease", FieldType.BOOL, applies_to=LYMPHOMA),
    # biomarkers
    Field(
        "biomarkers.afp_ng_ml",
        "biomarkers",
        "AFP",
        FieldType.NUMBER,
        unit="ng/mL",
        minimum=0,
        maximum=10_000_000,
        applies_to=HCC,
        help="Alpha-fetoprotein.",
    ),
    Field(
        "biomarkers.egfr",
        "biomarkers",
        "EGFR mutation",
        FieldType.ENUM,
        choices=(
            ("exon19del", "exon 19 deletion"),
            ("L858R", "L858R"),
            ("exon20ins", "exon 20 insertion"),
            ("other", "other"),
            ("negative", "negative"),
        ),
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.alk",
        "biomarkers",
        "ALK rearrangement",
        FieldType.ENUM,
        choices=_POS_NEG,
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.ros1",
        "biomarkers",
        "ROS1 rearrangement",
        FieldType.ENUM,
        choices=_POS_NEG,
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.kras",
        "biomarkers",
        "KRAS mutation",
        FieldType.ENUM,
        choices=_c("G12C", "other", "negative"),
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.braf",
        "biomarkers",
        "BRAF mutation",
        FieldType.ENUM,
        choices=_c("V600E", "other", "negative"),
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.met_exon14",
        "biomarkers",
        "MET exon 14 skipping",
        FieldType.ENUM,
        choices=_POS_NEG,
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.ret",
        "biomarkers",
        "RET fusion",
        FieldType.ENUM,
        choices=_POS_NEG,
        applies_to=LUNG,
    ),
    Field(
        "biomarkers.pdl1_tps_pct",
        "biomarkers",
        "PD-L1 TPS",
        FieldType.NUMBER,
        unit="%",
        minimum=0,
        maximum=100,
        applies_to=LUNG,
        help="Tumour proportion score.",
    ),
    Field(
        "biomarkers.er_pct",
        "biomarkers",
        "ER",
        FieldType.NUMBER,
        unit="%",
        minimum=0,
        maximum=100,
        applies_to=BREAST,
        help="Oestrogen receptor, % of stained tumour cells.",
    ),
    Field(
        "biomarkers.pr_pct",
        "biomarkers",
        "PR",
        FieldType.NUMBER,
        unit="%",
        minimum=0,
        maximum=100,
        applies_to=BREAST,
        help="Progesterone receptor, % of stained tumour cells.",
    ),
    Field(
        "biomarkers.her2",
        "biomarkers",
        "HER2",
        FieldType.ENUM,
        choices=(
            ("0", "0"),
            ("1+", "1+"),
            ("2+_ish_negative", "2+, ISH negative"),
            ("2+_ish_positive", "2+, ISH positive"),
            ("3+", "3+"),
        ),
        applies_to=BREAST,
        help="IHC score with ISH result for 2+.",
    ),
    Field(
        "biomarkers.ki67_pct",
        "biomarkers",
        "Ki-67",
        FieldType.NUMBER,
        unit="%",
        minimum=0,
        maximum=100,
        applies_to=BREAST,
    ),
    Field(
        "biomarkers.germline_brca",
        "biomarkers",
        "Germline BRCA",
        FieldType.ENUM,
        choices=(
            ("BRCA1", "BRCA1 pathogenic variant"),
            ("BRCA2", "BRCA2 pathogenic variant"),
            ("negative", "negative"),
        ),
        applies_to=BREAST,
    ),
    Field(
        "biomarkers.cd20",
        "biomarkers",
        "CD20",
        FieldType.ENUM,
        choices=_POS_NEG,
        applies_to=LYMPHOMA,
    ),
    Field(
        "biomarkers.cell_of_origin",
        "biomarkers",
        "Cell of origin",
        FieldType.ENUM,
        choices=_c("GCB", "non-GCB"),
        applies_to=LYMPHOMA,
        help="Hans algorithm.",
    ),
    Field(
        "biomarkers.ldh_u_l",
        "biomarkers",
        "LDH",
        FieldType.NUMBER,
        unit="U/L",
        minimum=0,
        exclusive_minimum=True,
        maximum=100_000,
        applies_to=LYMPHOMA,
    ),
    Field(
        "biomarkers.ldh_uln_u_l",
        "biomarkers",
        "LDH upper limit of normal",
        FieldType.NUMBER,
        unit="U/L",
        minimum=0,
        exclusive_minimum=True,
        maximum=2000,
        applies_to=LYMPHOMA,
        help="The reporting laboratory's upper limit of normal.",
    ),
    # Pharmacogenomics (issue 21 item 4).
    Field(
        "biomarkers.dpd_status",
        "biomarkers",
        "DPD status (DPYD)",
        FieldType.ENUM,
        choices=(
            ("normal", "normal (activity score 2)"),
            ("partial_deficiency", "partial deficiency (activity score 1-1.5)"),
            ("complete_deficiency", "complete deficiency (activity score 0-0.5)"),
        ),
        help="Before a fluoropyrimidine (capecitabine, 5-FU): CPIC 2017 DPYD guideline; "
        "EMA 2020 recommends testing before treatment.",
    ),
    Field(
        "biomarkers.dpd_test",
        "biomarkers",
        "DPD test",
        FieldType.ENUM,
        choices=(
            ("genotype", "DPYD genotype"),
            ("phenotype", "phenotype (plasma uracil)"),
            ("genotype_and_phenotype", "genotype and phenotype"),
        ),
    ),
    Field(
        "biomarkers.ugt1a1_status",
        "biomarkers",
        "UGT1A1 genotype",
        FieldType.ENUM,
        choices=(
            ("normal", "normal metaboliser (*1/*1)"),
            ("intermediate", "intermediate metaboliser (*1/*28, *1/*6)"),
            ("poor", "poor metaboliser (*28/*28, *6/*6, *6/*28)"),
        ),
        help="Before irinotecan or sacituzumab govitecan (SmPC 4.2/4.4).",
    ),
    # labs
    Field(
        "labs.bilirubin_mg_dl",
        "labs",
        "Bilirubin",
        FieldType.NUMBER,
        unit="mg/dL",
        minimum=0,
        maximum=50,
        help="Total bilirubin; 1 mg/dL = 17.1 µmol/L.",
    ),
    Field(
        "labs.albumin_g_dl",
        "labs",
        "Albumin",
        FieldType.NUMBER,
        unit="g/dL",
        minimum=0.5,
        maximum=7,
        help="1 g/dL = 10 g/L.",
    ),
    Field("labs.inr", "labs", "INR", FieldType.NUMBER, minimum=0.5, maximum=20),
    Field(
        "labs.creatinine_mg_dl",
        "labs",
        "Creatinine",
        FieldType.NUMBER,
        unit="mg/dL",
        minimum=0.1,
        maximum=30,
        help="1 mg/dL = 88.4 µmol/L.",
    ),
    Field(
        "labs.platelets_10e9_l",
        "labs",
        "Platelets",
        FieldType.NUMBER,
        unit=_PER_LITRE,
        minimum=0,
        maximum=5000,
    ),
    Field(
        "labs.hemoglobin_g_dl",
        "labs",
        "Haemoglobin",
        FieldType.NUMBER,
        unit="g/dL",
        minimum=1,
        maximum=25,
        help="1 g/dL = 10 g/L.",
    ),
    Field(
        "labs.anc_10e9_l",
        "labs",
        "Absolute neutrophil count",
        FieldType.NUMBER,
        unit=_PER_LITRE,
        minimum=0,
        maximum=100,
    ),
    Field("labs.hbsag", "labs", "HBsAg", FieldType.ENUM, choices=_POS_NEG),
    Field("labs.anti_hbc", "labs", "Anti-HBc", FieldType.ENUM, choices=_POS_NEG),
    Field(
        "labs.hbv_dna_iu_ml",
        "labs",
        "HBV DNA",
        FieldType.NUMBER,
        unit="IU/mL",
        minimum=0,
        maximum=10_000_000_000,
    ),
    Field("labs.hcv_rna", "labs", "HCV RNA", FieldType.ENUM, choices=_POS_NEG),
    Field("labs.hiv", "labs", "HIV", FieldType.ENUM, choices=_POS_NEG),
    # organ function
    Field(
        "organ_function.ascites",
        "organ_function",
        "Ascites",
        FieldType.ENUM,
        choices=(("none", "none"), ("mild", "mild"), ("moderate_severe", "moderate to severe")),
        applies_to=HCC,
    ),
    Field(
        "organ_function.encephalopathy",
        "organ_function",
        "Hepatic encephalopathy",
        FieldType.ENUM,
        choices=(("none", "none"), ("grade_1_2", "grade 1-2"), ("grade_3_4", "grade 3-4")),
        applies_to=HCC,
    ),
    Field(
        "organ_function.clinically_significant_portal_hypertension",
        "organ_function",
        "Clinically significant portal hypertension",
        FieldType.BOOL,
        applies_to=HCC,
    ),
    Field(
        "organ_function.varices",
        "organ_function",
        "Oesophageal varices",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("small", "small"),
            ("large_untreated", "large, untreated"),
            ("treated", "treated"),
        ),
        applies_to=HCC,
    ),
    Field(
        "organ_function.lvef_pct",
        "organ_function",
        "LVEF",
        FieldType.NUMBER,
        unit="%",
        minimum=0,
        maximum=100,
        warn_below=5,
        warn_above=90,
        help="Left-ventricular ejection fraction (echocardiography or MUGA).",
    ),
    # Endoscopy and bleeding (issue 21 item 4): what bevacizumab and other anti-VEGF drugs need.
    Field(
        "organ_function.endoscopy_date",
        "organ_function",
        "Endoscopy: date",
        FieldType.DATE,
        unit="yyyy-mm-dd",
        help="The last upper endoscopy (OGD).",
    ),
    Field(
        "organ_function.endoscopy_varices_size",
        "organ_function",
        "Endoscopy: varices",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("small", "small (F1)"),
            ("large", "large (F2-F3)"),
        ),
    ),
    Field(
        "organ_function.endoscopy_red_signs",
        "organ_function",
        "Endoscopy: red signs",
        FieldType.BOOL,
        help="Red wale marks or cherry-red spots (high-risk varices, Baveno VII).",
    ),
    Field(
        "organ_function.endoscopy_varices_treated",
        "organ_function",
        "Endoscopy: varices treated",
        FieldType.BOOL,
        help="Band ligation to eradication.",
    ),
    Field(
        "organ_function.recent_bleeding_site",
        "organ_function",
        "Last significant bleeding: site",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("variceal", "variceal"),
            ("gastrointestinal", "other gastrointestinal"),
            ("pulmonary", "haemoptysis"),
            ("intracranial", "intracranial"),
            ("tumour", "tumour bleeding"),
            ("other", "other"),
        ),
    ),
    Field(
        "organ_function.recent_bleeding_date",
        "organ_function",
        "Last significant bleeding: date",
        FieldType.DATE,
        unit="yyyy-mm-dd",
    ),
    Field(
        "organ_function.interstitial_lung_disease",
        "organ_function",
        "Interstitial lung disease",
        FieldType.BOOL,
    ),
    Field(
        "organ_function.autoimmune_disease",
        "organ_function",
        "Autoimmune disease",
        FieldType.STR,
        max_length=_SHORT,
        help='"none" or a description.',
    ),
    Field(
        "organ_function.autoimmune_activity",
        "organ_function",
        "Autoimmune disease activity",
        FieldType.ENUM,
        choices=(
            ("none", "no autoimmune disease"),
            ("inactive", "inactive or stable (e.g. treated hypothyroidism)"),
            ("active", "active (flare or needing treatment escalation)"),
        ),
    ),
    Field(
        "organ_function.immunosuppression",
        "organ_function",
        "Immunosuppression",
        FieldType.ENUM,
        choices=(
            ("none", "none"),
            ("low_dose_steroids", "corticosteroids below 10 mg/day prednisone equivalent"),
            ("high_dose_steroids", "corticosteroids of 10 mg/day prednisone equivalent or more"),
            ("other_immunosuppressant", "other immunosuppressant (e.g. tacrolimus)"),
        ),
        help="Current systemic treatment, whatever its reason (autoimmune disease, transplant, "
        "brain oedema).",
    ),
    Field(
        "organ_function.qtc_ms",
        "organ_function",
        "QTc",
        FieldType.INT,
        unit="ms",
        minimum=250,
        maximum=800,
        warn_below=340,
        warn_above=550,
        help="Corrected QT interval (Fridericia preferred).",
    ),
    Field(
        "organ_function.heart_rate_bpm",
        "organ_function",
        "Heart rate",
        FieldType.INT,
        unit="beats/min",
        minimum=20,
        maximum=250,
        warn_below=45,
        warn_above=130,
        help="On the ECG from which the QTc was measured.",
    ),
    Field("notes", "case", "Notes", FieldType.STR, max_length=_TEXT),
)

# What kind of treatment a prior therapy was (FORMAT.md §4). Only a palliative systemic course
# counts as a numbered line of therapy.
PRIOR_THERAPY_KINDS: tuple[tuple[str, str], ...] = (
    ("systemic", "systemic therapy (chemotherapy, targeted, immune or endocrine therapy)"),
    ("operation", "operation"),
    ("radiotherapy", "radiotherapy"),
    ("locoregional", "locoregional treatment (ablation, TACE, TARE)"),
    ("transplant", "transplant (organ or stem cell)"),
    ("other", "other treatment"),
)
PRIOR_THERAPY_INTENTS: tuple[tuple[str, str], ...] = (
    ("neoadjuvant", "neoadjuvant (before surgery or radiotherapy)"),
    ("adjuvant", "adjuvant (after surgery or radiotherapy)"),
    ("consolidation", "consolidation"),
    ("maintenance", "maintenance"),
    ("curative", "curative"),
    ("palliative", "palliative"),
)
# Kinds and intents whose course is not a numbered line of therapy: its line is 0 or null.
UNNUMBERED_KINDS: frozenset[str] = frozenset(
    {"operation", "radiotherapy", "locoregional", "transplant"}
)
UNNUMBERED_INTENTS: frozenset[str] = frozenset({"neoadjuvant", "adjuvant", "curative"})

# Keys of one diagnosis.prior_therapies[] entry; paths use "[]" for "any index". Shown and
# exported in this order; the first six are the keys of FORMAT.md §1 in their original order.
PRIOR_THERAPY_FIELDS: tuple[Field, ...] = (
    Field(
        "diagnosis.prior_therapies[].line",
        "diagnosis",
        "Line of therapy",
        FieldType.INT,
        minimum=0,
        maximum=30,
        help="Palliative systemic lines: 1 for first line, 2 for second line, ... 0 or empty "
        "for an operation, radiotherapy, a transplant or a curative-intent course.",
    ),
    Field(
        "diagnosis.prior_therapies[].kind",
        "diagnosis",
        "Kind of treatment",
        FieldType.ENUM,
        choices=PRIOR_THERAPY_KINDS,
        help="Empty in older files: the regimen's words then tell what it was.",
    ),
    Field(
        "diagnosis.prior_therapies[].intent",
        "diagnosis",
        "Intent",
        FieldType.ENUM,
        choices=PRIOR_THERAPY_INTENTS,
    ),
    Field(
        "diagnosis.prior_therapies[].regimen",
        "diagnosis",
        "Regimen",
        FieldType.STR,
        max_length=_SHORT,
        help="E.g. R-CHOP x6, right hemihepatectomy, 60 Gy in 30 fractions.",
    ),
    Field(
        "diagnosis.prior_therapies[].start_date",
        "diagnosis",
        "Start date",
        FieldType.DATE,
        unit="yyyy-mm-dd",
    ),
    Field(
        "diagnosis.prior_therapies[].end_date",
        "diagnosis",
        "End date",
        FieldType.DATE,
        unit="yyyy-mm-dd",
    ),
    Field(
        "diagnosis.prior_therapies[].best_response",
        "diagnosis",
        "Best response",
        FieldType.ENUM,
        choices=(
            ("CR", "complete response"),
            ("PR", "partial response"),
            ("SD", "stable disease"),
            ("PD", "progressive disease"),
        ),
    ),
    Field(
        "diagnosis.prior_therapies[].months_to_relapse",
        "diagnosis",
        "Time to relapse",
        FieldType.NUMBER,
        unit="months",
        minimum=0,
        maximum=600,
        help="Months from the end of this line to relapse or progression.",
    ),
    Field(
        "diagnosis.prior_therapies[].stop_reason",
        "diagnosis",
        "Why it ended",
        FieldType.ENUM,
        choices=(
            ("completed", "completed as planned"),
            ("progression", "progression on treatment"),
            ("toxicity", "stopped for toxicity"),
            # The word of files written before 2026-11-27; read exactly as "toxicity".
            ("intolerance", "stopped for intolerance or toxicity"),
            ("patient_choice", "stopped at the patient's wish"),
            ("other", "other reason"),
        ),
        help="A drug the disease progressed on, or that was stopped for toxicity, is not "
        "re-offered in the same setting unless a guideline supports rechallenge.",
    ),
    Field(
        "diagnosis.prior_therapies[].toxicity",
        "diagnosis",
        "Worst toxicity",
        FieldType.TOXICITY,
        help='The organ and CTCAE grade (1-5) of its worst toxicity, e.g. {"organ": "lung", '
        '"grade": 3}.',
    ),
)

# Keys of the toxicity object of one prior therapy.
TOXICITY_FIELDS: tuple[Field, ...] = (
    Field(
        "diagnosis.prior_therapies[].toxicity.organ",
        "diagnosis",
        "Toxicity organ",
        FieldType.STR,
        max_length=100,
        help="The organ or system affected, e.g. lung, colon, liver, skin, heart, nerves.",
    ),
    Field(
        "diagnosis.prior_therapies[].toxicity.grade",
        "diagnosis",
        "CTCAE toxicity grade",
        FieldType.INT,
        minimum=1,
        maximum=5,
        help="CTCAE grade: 1 mild, 2 moderate, 3 severe, 4 life-threatening, 5 death.",
    ),
)

FIELDS_BY_PATH: Mapping[str, Field] = MappingProxyType(
    {f.path: f for f in FIELDS + PRIOR_THERAPY_FIELDS + TOXICITY_FIELDS}
)

SECTION_KEYS: tuple[str, ...] = tuple(s.key for s in SECTIONS)

# JSON objects that hold fields, in format order.
JSON_SECTIONS: tuple[str, ...] = tuple(
    dict.fromkeys(f.parent for f in FIELDS if f.parent is not None)
)

# Top-level keys in format order: the sections sit between "question" and "notes".
TOP_LEVEL_KEYS: tuple[str, ...] = (
    "format",
    "case_id",
    "cancer_type",
    "question",
    *JSON_SECTIONS,
    "lesions",
    "notes",
)

# Optional top-level list of lesions with serial measurements (FORMAT.md §4); a file without it
# has one lesion, its index_lesion. Read and checked by clinical/calculators/response.py.
LESIONS_KEY = "lesions"

# Top-level key that evaluation files add (FORMAT.md §3); accepted and ignored on import.
EXPECTED_KEY = "expected"


def get_field(path: str) -> Field:
    """Catalog entry for a dotted path; prior-therapy keys use "diagnosis.prior_therapies[].x"."""
    return FIELDS_BY_PATH[path]


def fields_for(cancer_type: str) -> tuple[Field, ...]:
    """Fields that apply to a cancer type, in format order; unknown types get none."""
    return tuple(f for f in FIELDS if f.applies(cancer_type))


def fields_in_section(section: str) -> tuple[Field, ...]:
    return tuple(f for f in FIELDS if f.section == section)


def children(parent: str | None) -> tuple[Field, ...]:
    """Fields whose JSON parent object is ``parent`` (None for the top level)."""
    return tuple(f for f in FIELDS if f.parent == parent)


def _check_catalog() -> None:
    # Import-time guard: a typo in the catalog would silently change the published schema.
    seen: set[str] = set()
    for f in FIELDS + PRIOR_THERAPY_FIELDS + TOXICITY_FIELDS:
        if f.path in seen:
            raise AssertionError(f"duplicate catalog path {f.path}")
        seen.add(f.path)
        if f.section not in SECTION_KEYS:
            raise AssertionError(f"unknown section {f.section} for {f.path}")
        if (f.type is FieldType.ENUM) != bool(f.choices):
            raise AssertionError(f"choices must be given exactly for enum fields: {f.path}")
        if not f.applies_to <= ALL:
            raise AssertionError(f"unknown cancer type in applies_to of {f.path}")


_check_catalog()
