"""The patient's recorded drug allergies as the drug classes they rule out.

``patient.allergies`` is free text, one entry per allergy ("Penicillin (anaphylaxis 2015)",
"carboplatin - grade 3 infusion reaction", "iodine contrast"). Each entry is read against a
curated table of allergen names (generic, class and common wording); an entry belongs to a
class when one of its names occurs in it at a word start and is not negated ("no known drug
allergies", "penicillin allergy ruled out" mean no allergy). The classes carry the
cross-reactivity the allergy guidelines describe: a penicillin allergy is a ``penicillin``
allergy and, because of the shared beta-lactam ring, also flags ``cephalosporin_cross``
(checked, not forbidden); a reaction to one platinum salt or one taxane stands for the class.

Values: the sorted list of classes; [] when allergies are recorded and none maps to a class
(or none is recorded, an empty list); None when ``patient.allergies`` is missing (the allergy
check then reports "not checked"). ``allergies_unmapped`` lists the entries no class covers, so
the plan can say which ones a clinician must check by hand.

Sources: EAACI position paper on beta-lactam allergy (Romano A et al., Allergy
2020;75:1300-1315) for penicillin-cephalosporin cross-reactivity; AAAAI/ACAAI drug allergy
practice parameter update (Khan DA et al., J Allergy Clin Immunol 2022;150:1333-1393) for
platinum, taxane and monoclonal-antibody reactions and sulfonamide antibiotics; ACR Manual on
Contrast Media (2024) for iodinated contrast.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import affirms

ALLERGY_SOURCE: Final = (
    "EAACI beta-lactam allergy position paper (Romano A et al., Allergy 2020); AAAAI/ACAAI "
    "drug allergy practice parameter 2022 (Khan DA et al.); ACR Manual on Contrast Media 2024. "
    "An entry maps to a class when a name in the class table occurs in it, not negated."
)

# class -> names that place an allergy entry in it (lower case, matched at a word start).
ALLERGEN_CLASSES: Final[Mapping[str, tuple[str, ...]]] = {
    "penicillin": (
        "penicillin", "amoxicillin", "amoxycillin", "ampicillin", "co-amoxiclav", "augmentin",
        "flucloxacillin", "piperacillin", "tazocin", "benzylpenicillin", "phenoxymethylpenicillin",
        "temocillin", "dicloxacillin", "oxacillin", "beta-lactam", "betalactam", "β-lactam",
    ),
    "cephalosporin": (
        "cephalosporin", "cefalexin", "cephalexin", "cefuroxime", "ceftriaxone", "cefotaxime",
        "cefazolin", "ceftazidime", "cefepime", "cefixime", "cefaclor", "cefadroxil", "cefpodoxime",
    ),
    "carbapenem": ("carbapenem", "meropenem", "imipenem", "ertapenem"),
    "platinum": ("platinum", "platin", "carboplatin", "cisplatin", "oxaliplatin"),
    "taxane": (
        "taxane", "paclitaxel", "docetaxel", "cabazitaxel", "taxol", "taxotere", "cremophor",
    ),
    "sulfonamide_antibiotic": (
        "sulfonamide", "sulphonamide", "sulfa", "sulpha", "co-trimoxazole", "cotrimoxazole",
        "trimethoprim-sulfamethoxazole", "sulfamethoxazole", "septrin", "bactrim",
    ),
    "iodinated_contrast": (
        "contrast", "iodinated", "iodine", "iohexol", "iopamidol", "iodixanol", "lipiodol",
    ),
    "murine_chimeric_antibody": (
        "murine", "mouse protein", "chimeric", "rituximab", "mabthera", "rituxan", "cetuximab",
    ),
    "anthracycline": ("anthracycline", "doxorubicin", "epirubicin", "daunorubicin"),
    "tetracycline": ("tetracycline", "doxycycline", "minocycline"),
    "macrolide": ("macrolide", "clarithromycin", "erythromycin", "azithromycin"),
    "nitroimidazole": ("metronidazole", "tinidazole", "nitroimidazole"),
    "fluoroquinolone": ("quinolone", "levofloxacin", "ciprofloxacin", "moxifloxacin"),
    "bismuth": ("bismuth",),
}  # fmt: skip
# A beta-lactam allergy is checked against the classes that share the ring (EAACI 2020:
# cross-reactivity penicillin -> cephalosporin about 1-2 %, higher with shared side chains;
# -> carbapenem below 1 %): a check, not a prohibition.
CROSS_REACTIVE: Final[Mapping[str, tuple[str, ...]]] = {
    "penicillin": ("beta_lactam_cross",),
    "cephalosporin": ("beta_lactam_cross",),
}
# Entries that state there is no allergy at all.
_NONE_RE: Final = re.compile(
    r"^\s*(?:none|nil|nkda|nka|no known(?: drug)? allerg\w*|no allerg\w*|none known)\s*\.?\s*$",
    re.IGNORECASE,
)


def _entries(case: Mapping[str, Any]) -> list[str] | None:
    raw = lookup(case, "patient.allergies")
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return None
    return [e.strip() for e in raw if isinstance(e, str) and e.strip()]


def _classes_of(entry: str) -> set[str]:
    found: set[str] = set()
    for cls, names in ALLERGEN_CLASSES.items():
        if any(affirms(entry, name) for name in names):
            found.add(cls)
    return found


def allergy_classes(case: Mapping[str, Any]) -> CalcResult:
    """The drug classes the recorded allergies rule out, cross-reactivity included."""
    name = "allergy_classes"
    inputs = Inputs(case)
    entries = _entries(case)
    if entries is None:
        inputs.missing.append("patient.allergies")
        return inputs.result(name, None, ALLERGY_SOURCE, "allergies not recorded: not checked")
    inputs.used["patient.allergies"] = entries
    classes: set[str] = set()
    for entry in entries:
        if _NONE_RE.match(entry):
            continue
        for cls in _classes_of(entry):
            classes.add(cls)
            classes.update(CROSS_REACTIVE.get(cls, ()))
    detail = ", ".join(sorted(classes)) or "no drug-class allergy recorded"
    return inputs.result(name, sorted(classes), ALLERGY_SOURCE, detail)


def allergies_unmapped(case: Mapping[str, Any]) -> CalcResult:
    """The recorded allergy entries that no class of the table covers (to check by hand)."""
    name = "allergies_unmapped"
    inputs = Inputs(case)
    entries = _entries(case)
    if entries is None:
        inputs.missing.append("patient.allergies")
        return inputs.result(name, None, ALLERGY_SOURCE)
    inputs.used["patient.allergies"] = entries
    unmapped = [e for e in entries if not _NONE_RE.match(e) and not _classes_of(e)]
    return inputs.result(name, unmapped, ALLERGY_SOURCE, "; ".join(unmapped))
