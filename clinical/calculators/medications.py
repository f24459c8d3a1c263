"""Interaction-relevant classes of the patient's current medications.

Each class is a curated table of generic and brand names. A medication entry of the case
(``patient.medications[]``, free text such as "Clarithromycin 500 mg bd") belongs to the class
when one of the names occurs in it, case-insensitively, starting at a word boundary (so
"apixaban 5 mg" matches but a name hidden inside another word does not). The value is the
list of the patient's entries in that class, as written; [] when medications are recorded and
none is in the class; None when patient.medications is not recorded.

Tables are deliberately limited to drugs whose classification is well established; absence
from a table is not evidence of safety, and the detail says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup

FDA_DDI_SOURCE: Final = (
    "US FDA, Drug Development and Drug Interactions: Table of Substrates, Inhibitors and "
    "Inducers (clinical index inhibitors/inducers of CYP3A and CYP2D6; accessed 2024), "
    "with product labels for combination and brand products."
)
CREDIBLEMEDS_SOURCE: Final = (
    "CredibleMeds QTdrugs list (AZCERT), drugs with a Known Risk of Torsades de Pointes "
    "(accessed 2024); product labels for oncology drugs with QT warnings."
)
ANTITHROMBOTIC_SOURCE: Final = (
    "ESC 2021 / EHRA practical guide on NOACs (Steffel J et al., Europace 2021) and product "
    "labels (SmPC): oral and parenteral anticoagulants; antiplatelet agents per ESC 2023 ACS "
    "guidelines."
)
TAMOXIFEN_CYP2D6_SOURCE: Final = (
    "US FDA Table of Substrates, Inhibitors and Inducers (CYP2D6 strong and moderate "
    "inhibitors); NCCN Breast Cancer guideline discussion of CYP2D6 inhibitors with tamoxifen "
    "(avoid strong and moderate inhibitors where possible)."
)

# --- strong CYP3A4 inhibitors (FDA table: increase AUC of sensitive substrates >= 5-fold) ----
STRONG_CYP3A4_INHIBITORS: Final[tuple[str, ...]] = (
    "clarithromycin", "biaxin", "klacid",
    "telithromycin",
    "itraconazole", "sporanox",
    "ketoconazole", "nizoral",  # systemic; topical ketoconazole is listed too - flag, not guess
    "posaconazole", "noxafil",
    "voriconazole", "vfend",
    "ritonavir", "norvir", "paxlovid", "kaletra",  # Paxlovid = nirmatrelvir/ritonavir
    "cobicistat", "tybost", "genvoya", "stribild", "symtuza", "prezcobix", "evotaz",
    "indinavir", "nelfinavir", "saquinavir", "lopinavir", "tipranavir",
    "nefazodone",
    "idelalisib", "zydelig",
    "conivaptan",
    "tucatinib", "tukysa",  # Tukysa label: strong CYP3A inhibitor
)  # fmt: skip
# Grapefruit juice is a strong inhibitor in the FDA table but is not a medication.

# --- strong CYP3A4 inducers (FDA table: decrease AUC of sensitive substrates >= 80 %) ---------
STRONG_CYP3A4_INDUCERS: Final[tuple[str, ...]] = (
    "rifampicin", "rifampin", "rifadin", "rimactane",
    "carbamazepine", "tegretol",
    "phenytoin", "fosphenytoin", "dilantin", "epanutin",
    # a typographic apostrophe in the entry is normalised to ' before matching
    "st john's wort", "st. john's wort", "st johns wort", "hypericum",
    "enzalutamide", "xtandi",
    "apalutamide", "erleada",
    "mitotane", "lysodren",
    "lumacaftor",  # in Orkambi; FDA lists it with the strong inducers
    "orkambi",
)  # fmt: skip

# --- QT prolonging: CredibleMeds "Known Risk of TdP" ------------------------------------------
QT_PROLONGING_DRUGS: Final[tuple[str, ...]] = (
    # antiarrhythmics
    "amiodarone", "cordarone", "dronedarone", "multaq", "sotalol", "dofetilide",
    "disopyramide", "flecainide", "ibutilide", "procainamide", "quinidine",
    # antidepressants / antipsychotics
    "citalopram", "celexa", "cipramil",
    "escitalopram", "lexapro", "cipralex",
    "haloperidol", "haldol", "chlorpromazine", "thioridazine", "pimozide", "droperidol",
    "sulpiride",
    # opioids
    "methadone",
    # antiemetics / prokinetics
    "ondansetron", "zofran", "domperidone", "motilium",
    # anti-infectives
    "azithromycin", "zithromax", "clarithromycin", "erythromycin",
    "levofloxacin", "levaquin", "tavanic", "moxifloxacin", "avelox", "ciprofloxacin",
    "fluconazole", "pentamidine",
    "hydroxychloroquine", "plaquenil", "chloroquine", "quinine",
    # oncology
    "arsenic trioxide", "trisenox", "vandetanib", "caprelsa", "oxaliplatin",
    # other
    "donepezil", "cilostazol", "propofol", "sevoflurane",
)  # fmt: skip

# --- anticoagulants ----------------------------------------------------------------------------
ANTICOAGULANTS: Final[tuple[str, ...]] = (
    "warfarin", "coumadin", "marevan", "acenocoumarol", "sintrom", "phenprocoumon", "marcumar",
    "apixaban", "eliquis",
    "rivaroxaban", "xarelto",
    "edoxaban", "lixiana", "savaysa",
    "dabigatran", "pradaxa",
    "enoxaparin", "clexane", "lovenox",
    "dalteparin", "fragmin",
    "tinzaparin", "innohep",
    "lmwh",  # low-molecular-weight heparin written as an abbreviation
    "heparin",  # unfractionated heparin; enoxaparin etc. are matched by their own names
    "fondaparinux", "arixtra",
    "argatroban", "bivalirudin",
)  # fmt: skip

# --- antiplatelets -----------------------------------------------------------------------------
ANTIPLATELETS: Final[tuple[str, ...]] = (
    "aspirin", "acetylsalicylic acid", "asa",  # "asa" as a whole word only (see _pattern)
    "clopidogrel", "plavix",
    "prasugrel", "efient", "effient",
    "ticagrelor", "brilinta", "brilique",
    "dipyridamole", "persantine", "aggrenox",
    "cangrelor", "ticlopidine",
)  # fmt: skip

# --- CYP2D6 inhibitors relevant to tamoxifen (strong and moderate) ----------------------------
CYP2D6_INHIBITORS: Final[dict[str, str]] = {
    # strong
    "paroxetine": "strong", "paxil": "strong", "seroxat": "strong",
    "fluoxetine": "strong", "prozac": "strong",
    "bupropion": "strong", "wellbutrin": "strong", "zyban": "strong",
    "quinidine": "strong",
    "terbinafine": "strong", "lamisil": "strong",
    # moderate
    "duloxetine": "moderate", "cymbalta": "moderate",
    "cinacalcet": "moderate",
    "mirabegron": "moderate",
    "abiraterone": "moderate",
}  # fmt: skip


# The facts that say what the patient takes: the list itself and each interacting class read
# from it (derive.py names them ``derived.<calculator>``).
MEDICATION_FACTS = frozenset(
    {
        "patient.medications",
        "derived.strong_cyp3a4_inhibitors",
        "derived.strong_cyp3a4_inducers",
        "derived.qt_prolonging_drugs",
        "derived.anticoagulants",
        "derived.antiplatelets",
        "derived.cyp2d6_inhibitors",
    }
)
# Polypharmacy: five or more regular medicines (WHO, Medication Safety in Polypharmacy,
# 2019, section 1): a pharmacist reviews the list whatever the knowledge base's rules say.
POLYPHARMACY_COUNT = 5


def _pattern(names: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    # Word boundary before the name (so "asa" does not match "lasalocid"); short abbreviations
    # need a boundary after too.
    parts = []
    for name in sorted(names, key=len, reverse=True):
        escaped = re.escape(name)
        parts.append(rf"\b{escaped}\b" if len(name) <= 4 else rf"\b{escaped}")
    return re.compile("|".join(parts), re.IGNORECASE)


def _in_class(
    case: Mapping[str, Any], name: str, names: tuple[str, ...] | list[str], source: str
) -> CalcResult:
    inputs = Inputs(case)
    raw = lookup(case, "patient.medications")
    if not isinstance(raw, list):
        inputs.missing.append("patient.medications")
        return inputs.result(name, None, source)
    inputs.used["patient.medications"] = list(raw)
    pattern = _pattern(names)
    hits = [str(m) for m in raw if isinstance(m, str) and pattern.search(m.replace("\u2019", "'"))]
    detail = (
        f"{len(hits)} of {len(raw)} medications in the class; curated list - a drug not on it "
        "is not thereby safe"
    )
    return inputs.result(name, hits, source, detail)


def strong_cyp3a4_inhibitors(case: Mapping[str, Any]) -> CalcResult:
    """The patient's medications that are strong CYP3A4 inhibitors."""
    return _in_class(case, "strong_cyp3a4_inhibitors", STRONG_CYP3A4_INHIBITORS, FDA_DDI_SOURCE)


def strong_cyp3a4_inducers(case: Mapping[str, Any]) -> CalcResult:
    """The patient's medications that are strong CYP3A4 inducers."""
    return _in_class(case, "strong_cyp3a4_inducers", STRONG_CYP3A4_INDUCERS, FDA_DDI_SOURCE)


def qt_prolonging_drugs(case: Mapping[str, Any]) -> CalcResult:
    """The patient's medications with a known risk of torsades de pointes."""
    return _in_class(case, "qt_prolonging_drugs", QT_PROLONGING_DRUGS, CREDIBLEMEDS_SOURCE)


def anticoagulants(case: Mapping[str, Any]) -> CalcResult:
    """The patient's anticoagulant medications."""
    return _in_class(case, "anticoagulants", ANTICOAGULANTS, ANTITHROMBOTIC_SOURCE)


def antiplatelets(case: Mapping[str, Any]) -> CalcResult:
    """The patient's antiplatelet medications."""
    return _in_class(case, "antiplatelets", ANTIPLATELETS, ANTITHROMBOTIC_SOURCE)


def cyp2d6_inhibitors(case: Mapping[str, Any]) -> CalcResult:
    """The patient's strong or moderate CYP2D6 inhibitors (relevant to tamoxifen)."""
    result = _in_class(case, "cyp2d6_inhibitors", list(CYP2D6_INHIBITORS), TAMOXIFEN_CYP2D6_SOURCE)
    if isinstance(result.value, list) and result.value:
        strengths = []
        for med in result.value:
            found = _pattern(list(CYP2D6_INHIBITORS)).search(med)
            strength = CYP2D6_INHIBITORS.get(found.group(0).lower(), "?") if found else "?"
            strengths.append(f"{med}: {strength}")
        return CalcResult(
            name=result.name,
            value=result.value,
            inputs_used=result.inputs_used,
            inputs_missing=result.inputs_missing,
            source=result.source,
            detail=result.detail + "; " + ", ".join(strengths),
        )
    return result
