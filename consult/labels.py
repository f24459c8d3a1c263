"""The clinical words of plans, in one place, for every page, the PDF and the rating packets:
the labels of the facts a knowledge unit can test (what a clinician reads instead of
``organ_function.lvef_pct`` or ``derived.albi_grade``), of the board's members, staging systems,
intents, response criteria, gate results and effects; and ``clinical_text``, the engine's and the
members' prose with such names (and knowledge-base unit ids) rewritten as clinical words. The
names themselves, with their short labels, are the core's enums (``clinical.vocab``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from types import MappingProxyType
from typing import Any

from clinical import lexicon
from clinical.vocab import (
    GATE_STATUS_LABELS,
    INTENT_LABELS,
    PHASE_LABELS,
    RESPONSE_ANCHOR_LABELS,
    ROLE_LABELS,
    STAGING_LABELS,
    GateEffect,
)
from consult.casefile.fields import FIELDS

DERIVED_LABELS: Mapping[str, str] = MappingProxyType(
    {
        # The staging systems, as the engine's plans name them.
        **{f"derived.{key}": label for key, label in STAGING_LABELS.items()},
        "derived.albi_score": "ALBI score",
        "derived.flipi_risk": "FLIPI risk group",
        "derived.egfr_ckd_epi_2021": "eGFR (CKD-EPI 2021, mL/min/1.73 m²)",
        "derived.crcl_cockcroft_gault": "Creatinine clearance (Cockcroft–Gault, mL/min)",
        "derived.line": "Line of therapy",
        "derived.situations": "Situation recognised",
        "derived.frailty": "Frailty",
        "derived.declines": "Patient declines",
        "derived.wants": "Patient wishes",
        "derived.strong_cyp3a4_inhibitors": "Strong CYP3A4 inhibitors taken",
        "derived.strong_cyp3a4_inducers": "Strong CYP3A4 inducers taken",
        "derived.qt_prolonging_drugs": "QT-prolonging drugs taken",
        "derived.anticoagulants": "Anticoagulants taken",
        "derived.antiplatelets": "Antiplatelet drugs taken",
        "derived.cyp2d6_inhibitors": "CYP2D6 inhibitors taken",
        "derived.prior_irae_severity": "Prior immune-related adverse events (worst grade)",
        "derived.bleeding_within_6_months": "Significant bleeding in the last 6 months",
        "organ_function.prior_pneumonitis": "Prior pneumonitis",
        "organ_function.peripheral_neuropathy_grade": "Pre-existing peripheral neuropathy (grade)",
        "organ_function.heart_failure": "Heart failure",
        "organ_function.tumour_lysis_risk": "Tumour-lysis risk",
        "patient.anticoagulant": "Anticoagulant named in the notes",
        "patient.qt_prolonging_drug": "QT-prolonging drug named in the notes",
        "patient.strong_cyp3a4_inhibitor": "Strong CYP3A4 inhibitor named in the notes",
        "patient.strong_cyp3a4_inducer": "Strong CYP3A4 inducer named in the notes",
        "derived.within_milan": "Within Milan criteria",
        "derived.within_up_to_7": "Within up-to-7 criteria",
        "derived.within_ucsf": "Within UCSF criteria",
        "derived.tumour_burden_score": "Tumour burden (largest nodule cm + number of nodules)",
        "derived.liver_decompensated": "Decompensated liver disease",
        "derived.carboplatin_auc5_mg": "Carboplatin dose for AUC 5 (Calvert, mg)",
        "derived.carboplatin_auc6_mg": "Carboplatin dose for AUC 6 (Calvert, mg)",
        "derived.carboplatin_gfr_ml_min": "Calvert GFR for carboplatin (mL/min)",
        "derived.carboplatin_gfr_basis": "Basis of the carboplatin GFR",
        "derived.bsa_m2": "Body surface area (m²)",
        "derived.capecitabine_renal_dose_pct": "Capecitabine dose allowed by kidney function (%)",
        "derived.doxorubicin_hepatic_dose_pct": "Anthracycline dose allowed by bilirubin (%)",
        "derived.paclitaxel_hepatic_dose_pct": "Paclitaxel dose allowed by bilirubin (%)",
        "derived.irinotecan_hepatic_dose_pct": "Irinotecan dose allowed by bilirubin (%)",
        "derived.docetaxel_hepatic_dose_pct": "Docetaxel dose allowed by bilirubin (%)",
        "derived.lung_drivers": "Actionable driver",
        "derived.lung_first_line_targeted": "Driver with a first-line targeted therapy",
        "derived.lung_cns_active_targeted": "Driver with a brain-active targeted therapy",
        "derived.recorded_inoperable": "Recorded as medically inoperable",
        "derived.recorded_unresectable": "Recorded as unresectable",
        "derived.oligometastatic": "Oligometastatic disease",
        "derived.brain_metastases_symptomatic": "Symptomatic brain metastases",
        "derived.bone_metastases": "Bone metastases",
        "derived.steroids_for_brain_metastases": "Steroids for brain metastases",
        "derived.fertility_declined": "Fertility preservation declined",
        "derived.adjuvant_cdk46": "Adjuvant CDK4/6 inhibitor by trial criteria",
        "derived.months_to_relapse": "Months from last therapy to relapse",
        "derived.prior_regimens": "Prior regimens",
        "derived.early_relapse": "Relapse within 12 months (or refractory)",
        "derived.lymphoma_entity": "Lymphoma entity",
        "derived.hodgkin_stage_group": "Hodgkin risk group (GHSG)",
        "derived.h_pylori": "Helicobacter pylori",
        "derived.pregnancy_trimester": "Trimester of pregnancy",
        "derived.pregnancy_recorded": "Pregnancy on record",
        "derived.progressed_on": "Progressed on",
        "derived.intolerant_of": "Stopped for intolerance",
        "derived.esr1_mutation": "ESR1 mutation",
        "derived.pik3ca_mutation": "PIK3CA mutation",
        "derived.pi3k_pathway_altered": "PIK3CA, AKT1 or PTEN alteration",
        "derived.breast_surgery_done": "Breast operation done",
        "derived.germline_testing_indicated": "Germline testing to offer",
        "derived.tls_risk": "Tumour-lysis risk group",
        "derived.allergy_classes": "Drug allergies (by class)",
        "derived.allergies_unmapped": "Allergies not matched to a drug class",
        "derived.response": "Response at the latest scan (computed)",
        "derived.response_criteria": "Response criteria",
        "derived.new_lesions": "New lesions at the latest scan",
        "derived.progression_on_imaging": "Progression on imaging",
        "derived.response_oligoprogression": "Oligoprogression (at most three lesions)",
        "derived.continues_current_line": "The current line continues",
        "derived.setting_from_imaging": "Setting shown by the scans",
        "derived.setting_disagreement": "Recorded setting contradicted by the scans",
    }
)


# What the gate did to the plan, in words.
GATE_EFFECT_WORDS: Mapping[str, str] = MappingProxyType(
    {
        GateEffect.REMOVED: "Removed from the plan.",
        GateEffect.WITHDRAWN: "Given without the contraindicated drug.",
        GateEffect.HELD: "Kept only as an alternative, for when this no longer applies.",
        GateEffect.DEMOTED: "Waits for this; a safer option goes first.",
        GateEffect.PRECONDITION: "Given with the action the rule requires.",
        GateEffect.DOSE: "Given at the adjusted dose.",
        GateEffect.WARNING: "Given, with a warning.",
        GateEffect.PARTNER: "Given with its required partner drug.",
        GateEffect.CLEAR: "Checked: does not apply to this patient.",
        GateEffect.NEEDS_DATA: "Cannot be checked until the data below is recorded.",
        GateEffect.CHECKED: "Checked for this patient, whatever the plan.",
    }
)


def role_label(role: Any) -> str:
    """A member of the board by name ("radiation_oncology" -> "Radiation oncology")."""
    name = str(role or "")
    return ROLE_LABELS.get(name, name.replace("_", " ").capitalize())


def staging_label(key: str) -> str:
    """A staging system or score by name ("bclc" -> "BCLC stage")."""
    return STAGING_LABELS.get(key) or key.replace("_", " ").capitalize()


def intent_label(intent: Any, *, missing: str = "Not stated") -> str:
    """A plan's intent in words; ``missing`` when the plan gives none (or one not known)."""
    return INTENT_LABELS.get(str(intent or ""), missing)


def anchor_label(anchor: Any) -> str:
    """The response criteria of a monitoring item as written ("recist" -> "RECIST 1.1")."""
    text = str(anchor or "")
    return RESPONSE_ANCHOR_LABELS.get(text.casefold(), text)


def gate_status_label(status: Any) -> tuple[str, str]:
    """A gate's result as (word, symbol): never colour alone."""
    text = str(status or "")
    return GATE_STATUS_LABELS.get(text, (text.capitalize(), "?"))


@cache
def fact_labels() -> Mapping[str, str]:
    """Every case-file field by its dotted path, and every derived fact."""
    labels = {field.path: field.label for field in FIELDS}
    labels.update(DERIVED_LABELS)
    return MappingProxyType(labels)


def fact_label(fact: str) -> str:
    """The clinical label of a fact; an unknown one is made readable rather than shown raw."""
    return fact_labels().get(fact) or fact.split(".")[-1].replace("_", " ").capitalize()


# --- prose ---------------------------------------------------------------------------------------
_SECTIONS = "derived|patient|diagnosis|index_lesion|staging|biomarkers|labs|organ_function|notes"
# "organ_function.lvef_pct", "derived.frailty": a case-file field or derived fact by its path.
_FACT_PATH = re.compile(rf"\b(?:{_SECTIONS})\.[a-z0-9_]+\b")
# A knowledge-base unit id ("hcc.ci.bevacizumab-untreated-varices", "common.gate.qtc-470-500"):
# three or more dotted lowercase parts. The unit is cited with its title, source and anchor
# where it matters; inside prose its id says nothing to a clinician.
# (Not a host name: "www.nccn.org" stays.)
_UNIT = r"(?!www\.)(?:[a-z][a-z0-9_-]*\.){2,}[a-z0-9_-]*[a-z0-9_](?<!\.org)(?<!\.com)(?<!\.net)"
# " (hcc.ci.x)", " (for hcc.ci.x)", " (see lung.tx.y, common.gate.z)": a bracket of ids only.
# Each starts where a run of white space starts, or at the bracket (comma) itself: an unanchored
# leading \s* was tried again from every space of a long run (quadratic, issue 26).
_UNITS_IN_BRACKETS = re.compile(
    rf"(?<!\s)\s*\((?:(?:for|see|per|from)\s+)?{_UNIT}(?:\s*[,;]\s*{_UNIT})*\)"
)
# ", hcc.ci.x" at the end of a list in brackets: "(major, condition, hcc.ci.x)".
_UNIT_LISTED = re.compile(rf"(?<!\s)\s*[,;]\s*{_UNIT}(?=\s*[),;])")
_UNIT_BARE = re.compile(rf"(?<![\w./-]){_UNIT}(?![\w/-])")
_SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


# Coded values of derived facts (clinical/calculators/) that a plan's "why" lines show.
DERIVED_VALUE_WORDS: Mapping[str, str] = MappingProxyType(
    {
        "none_recorded": "none on record",
        "breast_conserving": "breast-conserving surgery",
    }
)


@cache
def _enum_labels() -> Mapping[str, str]:
    """Enumerated case values as the dossier form labels them ("large_untreated" -> its
    label, lower-cased unless it starts with an abbreviation)."""
    return MappingProxyType(
        {
            value: label.lower() if label[:1].isupper() and not label[1:2].isupper() else label
            for f in FIELDS
            for value, label in f.choices
            if "_" in value
        }
    )


@cache
def choice_labels() -> Mapping[str, str]:
    """Every enumerated case value as the dossier form labels it ("exon19del" -> "exon 19
    deletion"), lower-cased unless it starts with an abbreviation: for coded values shown
    whole, as the facts that made a plan item apply."""
    return MappingProxyType(
        {
            value: label.lower() if label[:1].isupper() and not label[1:2].isupper() else label
            for f in FIELDS
            for value, label in f.choices
            if value
        }
    )


def _word(match: re.Match[str]) -> str:
    key = match.group(0)
    return (
        STAGING_LABELS.get(key)
        or PHASE_LABELS.get(key)
        or ROLE_LABELS.get(key)
        or _enum_labels().get(key)
        or DERIVED_VALUE_WORDS.get(key)
        or key
    )


def fact_words(text: Any) -> str:
    """A line about patient facts ("Situation recognised: spinal_cord_compression ✓") with
    every name in clinical words, and a coded value no label names in plain words."""
    return _SNAKE.sub(lambda m: m.group(0).replace("_", " "), clinical_text(text))


def value_words(value: Any) -> Any:
    """A coded value ("future_pregnancy", "not_pregnant") in words; other values as they are."""
    if isinstance(value, str) and _SNAKE.fullmatch(value):
        return (
            _enum_labels().get(value) or DERIVED_VALUE_WORDS.get(value) or value.replace("_", " ")
        )
    return value


def clinical_text(text: Any) -> str:
    """Prose from a plan or a member, as a clinician reads it: field paths as their labels,
    staging keys, phases and coded values as words, knowledge-base unit ids left out (a
    bracket that held only ids goes with them)."""
    out = str(text or "")
    out = _UNITS_IN_BRACKETS.sub("", out)
    out = _UNIT_LISTED.sub("", out)
    out = _FACT_PATH.sub(lambda m: fact_label(m.group(0)), out)
    out = _UNIT_BARE.sub("", out)
    out = _SNAKE.sub(_word, out)
    out = re.sub(r"(?<!\.)\.\.(?!\.)", ".", out)  # "first. (unit)." leaves one full stop
    out = re.sub(r"[ \t]{2,}", " ", out)
    return re.sub(r" \.(?!\.)", ".", out).strip()


# --- per-cancer content --------------------------------------------------------------------------
def dose_fact_drug(name: str) -> str:
    """The drug a derived dose fact is about ("carboplatin_auc5_mg" -> "carboplatin"), or ""
    for a fact that is not about one drug."""
    drug = name.removeprefix("derived.").split("_", 1)[0]
    return drug if drug in lexicon.DRUGS else ""


def dose_fact_concerns(name: str, drugs: Iterable[str]) -> bool:
    """Whether a derived fact belongs on a page about these drugs: a dose fact only when one
    of them is its drug or of its drug's kind (the anthracycline dose for epirubicin), so a
    liver plan shows no carboplatin dose; every other fact always."""
    drug = dose_fact_drug(name)
    if not drug:
        return True
    kinds = lexicon.classes_of(drug) - {"chemotherapy"}
    return any(d == drug or kinds & lexicon.classes_of(d) for d in drugs)
