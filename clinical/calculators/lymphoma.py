"""Lymphoma staging and prognostic indices: Ann Arbor stage, IPI, CNS-IPI, FLIPI, the entity,
the Hodgkin risk group and the Helicobacter pylori status."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import affirms, term_occurrences

ANN_ARBOR_SOURCE: Final = (
    "Carbone PP, et al. Report of the Committee on Hodgkin's Disease Staging Classification. "
    "Cancer Res 1971;31(11):1860-1861 (stages I-IV, A/B symptoms, E); Lister TA, et al. "
    "J Clin Oncol 1989;7(11):1630-1636 (Cotswolds: X for bulk); Cheson BD, et al. "
    "J Clin Oncol 2014;32(27):3059-3068 (Lugano: A/B for Hodgkin only, bulk recorded instead of X)."
)
IPI_SOURCE: Final = (
    "The International Non-Hodgkin's Lymphoma Prognostic Factors Project. A predictive model for "
    "aggressive non-Hodgkin's lymphoma. N Engl J Med 1993;329(14):987-994 (five factors; risk "
    "groups low 0-1, low-intermediate 2, high-intermediate 3, high 4-5)."
)
CNS_IPI_SOURCE: Final = (
    "Schmitz N, Zeynalova S, Nickelsen M, et al. CNS International Prognostic Index: a risk model "
    "for CNS relapse in patients with diffuse large B-cell lymphoma treated with R-CHOP. "
    "J Clin Oncol 2016;34(26):3150-3156 (IPI factors plus kidney/adrenal involvement; low 0-1, "
    "intermediate 2-3, high 4-6)."
)

_P_STAGE = "staging.ann_arbor_stage"
_ROMAN: Final = ("I", "II", "III", "IV")
_ARABIC: Final = {"1": "I", "2": "II", "3": "III", "4": "IV"}
_STAGE_RE = re.compile(r"(IV|III|II|I|[1-4])([ABESX]*)")


@dataclass(frozen=True)
class AnnArbor:
    """A parsed Ann Arbor designation: bare stage plus any suffix letters written with it."""

    stage: str
    suffixes: str


def parse_ann_arbor(raw: object) -> AnnArbor | None:
    """Parse "IV", "Stage IIIB", "II-E", "3" ...; None if it is not a stage I-IV designation."""
    if not isinstance(raw, str):
        return None
    text = raw.strip().upper()
    text = re.sub(r"^STAGE", "", text)
    text = re.sub(r"[\s\-_]", "", text)
    match = _STAGE_RE.fullmatch(text)
    if match is None:
        return None
    stage = _ARABIC.get(match.group(1), match.group(1))
    suffixes = match.group(2)
    # "AB" together is self-contradictory, so treat the designation as unreadable.
    if "A" in suffixes and "B" in suffixes:
        return None
    return AnnArbor(stage=stage, suffixes=suffixes)


def _read_stage(inputs: Inputs) -> AnnArbor | None:
    raw = lookup(inputs.case, _P_STAGE)
    if raw is None:
        inputs.missing.append(_P_STAGE)
        return None
    parsed = parse_ann_arbor(raw)
    if parsed is None:
        inputs.missing.append(_P_STAGE)
        inputs.notes.append(f"{_P_STAGE}={raw!r} is not an Ann Arbor stage I-IV")
        return None
    inputs.used[_P_STAGE] = raw
    return parsed


def ann_arbor_stage(case: Mapping[str, Any]) -> CalcResult:
    """Bare Ann Arbor stage "I".."IV" as recorded; suffixes and consistency notes go in detail."""
    name = "ann_arbor_stage"
    inputs = Inputs(case)
    parsed = _read_stage(inputs)
    if parsed is None:
        return inputs.result(name, None, ANN_ARBOR_SOURCE)
    stage = parsed.stage
    notes: list[str] = []

    # Optional inputs: they only refine the designation shown in detail, never the value.
    b_symptoms = inputs.boolean("staging.b_symptoms", record_missing=False)
    bulky = inputs.boolean("staging.bulky_disease", record_missing=False)
    marrow = inputs.boolean("staging.bone_marrow_involvement", record_missing=False)
    both_sides = inputs.boolean("staging.both_sides_of_diaphragm", record_missing=False)

    if b_symptoms is None:
        ab = "B" if "B" in parsed.suffixes else "A" if "A" in parsed.suffixes else ""
        if not ab:
            notes.append("A/B not derivable (staging.b_symptoms not available)")
    else:
        ab = "B" if b_symptoms else "A"
        written = "B" if "B" in parsed.suffixes else "A" if "A" in parsed.suffixes else ""
        if written and written != ab:
            notes.append(
                f"recorded suffix {written} conflicts with staging.b_symptoms={b_symptoms}"
            )
    suffix = ab + ("E" if "E" in parsed.suffixes else "") + ("S" if "S" in parsed.suffixes else "")
    if bulky or "X" in parsed.suffixes:
        suffix += "X"
        notes.append("bulky disease (Lugano 2014 records bulk rather than the X suffix)")
    notes.insert(0, f"designation {stage}{suffix}")

    # Internal consistency checks: flag, do not correct (the PET-CT reading is the source).
    if marrow and stage != "IV":
        notes.append("bone marrow involvement recorded but stage is not IV: check")
    if both_sides and stage in ("I", "II"):
        notes.append("disease on both sides of the diaphragm recorded but stage is I-II: check")
    return inputs.result(name, stage, ANN_ARBOR_SOURCE, notes)


def _ipi_factors(inputs: Inputs) -> dict[str, bool] | None:
    """The five IPI risk factors, or None if any input is missing/invalid."""
    age = inputs.number("patient.age_years", minimum=0, maximum=130)
    ldh = inputs.number("biomarkers.ldh_u_l", positive=True)
    uln = inputs.number("biomarkers.ldh_uln_u_l", positive=True)
    ecog = inputs.number("patient.ecog", minimum=0, maximum=5)
    stage = _read_stage(inputs)
    extranodal = inputs.number("staging.extranodal_sites_count", minimum=0)
    for path, value in (("patient.ecog", ecog), ("staging.extranodal_sites_count", extranodal)):
        if value is not None and value != int(value):
            inputs.missing.append(path)
            inputs.notes.append(f"{path} is not a whole number")
            return None
    if (
        age is None
        or ldh is None
        or uln is None
        or ecog is None
        or stage is None
        or extranodal is None
    ):
        return None
    return {
        "age > 60": age > 60,
        "LDH > ULN": ldh > uln,
        "ECOG >= 2": ecog >= 2,
        "Ann Arbor III-IV": stage.stage in ("III", "IV"),
        "extranodal sites > 1": extranodal > 1,
    }


def _applicability_notes(case: Mapping[str, Any]) -> list[str]:
    notes: list[str] = []
    setting = lookup(case, "diagnosis.setting")
    if setting in ("recurrent", "progressive"):
        notes.append(
            f"setting is {setting}: the index was validated at diagnosis, so at relapse it is "
            "descriptive only"
        )
    text = " ".join(
        str(v)
        for v in (lookup(case, "diagnosis.histology"), lookup(case, "diagnosis.subtype"))
        if v
    ).lower()
    if "hodgkin" in text and "non-hodgkin" not in text and "non hodgkin" not in text:
        notes.append("validated in aggressive non-Hodgkin lymphoma, not Hodgkin lymphoma")
    return notes


def _describe(factors: Mapping[str, bool]) -> str:
    present = [k for k, v in factors.items() if v]
    return "factors present: " + (", ".join(present) if present else "none")


def ipi_risk_group(score: int) -> str:
    """Risk group of the 1993 IPI."""
    if score <= 1:
        return "low"
    return {2: "low-intermediate", 3: "high-intermediate"}.get(score, "high")


def cns_ipi_risk_group(score: int) -> str:
    """Risk group of the CNS-IPI (Schmitz 2016)."""
    if score <= 1:
        return "low"
    return "intermediate" if score <= 3 else "high"


def ipi(case: Mapping[str, Any]) -> CalcResult:
    """International Prognostic Index 0-5; every one of the five factors is required."""
    inputs = Inputs(case)
    factors = _ipi_factors(inputs)
    if factors is None:
        return inputs.result("ipi", None, IPI_SOURCE, _applicability_notes(case))
    score = sum(factors.values())
    detail = [f"{ipi_risk_group(score)} risk", _describe(factors), *_applicability_notes(case)]
    return inputs.result("ipi", score, IPI_SOURCE, detail)


def cns_ipi(case: Mapping[str, Any]) -> CalcResult:
    """CNS-IPI 0-6: the five IPI factors plus kidney and/or adrenal involvement (all required)."""
    inputs = Inputs(case)
    factors = _ipi_factors(inputs)
    kidney = inputs.boolean("staging.kidney_or_adrenal_involvement")
    if factors is None or kidney is None:
        return inputs.result("cns_ipi", None, CNS_IPI_SOURCE, _applicability_notes(case))
    factors = {**factors, "kidney/adrenal involvement": kidney}
    score = sum(factors.values())
    detail = [f"{cns_ipi_risk_group(score)} risk", _describe(factors), *_applicability_notes(case)]
    return inputs.result("cns_ipi", score, CNS_IPI_SOURCE, detail)


FLIPI_SOURCE: Final = (
    "Solal-Celigny P, Roy P, Colombat P, et al. Follicular Lymphoma International Prognostic "
    "Index. Blood 2004;104(5):1258-1265 (age > 60, Ann Arbor III-IV, haemoglobin < 12 g/dL, "
    "LDH > ULN, > 4 nodal areas; low 0-1, intermediate 2, high >= 3)."
)


def flipi_risk_group(score: int) -> str:
    """Risk group of the FLIPI (Solal-Celigny 2004)."""
    if score <= 1:
        return "low"
    return "intermediate" if score == 2 else "high"


def _flipi(case: Mapping[str, Any]) -> tuple[Inputs, dict[str, bool] | None]:
    inputs = Inputs(case)
    age = inputs.number("patient.age_years", minimum=0, maximum=130)
    stage = _read_stage(inputs)
    hb = inputs.number("labs.hemoglobin_g_dl", positive=True, maximum=25.0)
    ldh = inputs.number("biomarkers.ldh_u_l", positive=True)
    uln = inputs.number("biomarkers.ldh_uln_u_l", positive=True)
    nodal = inputs.number("staging.nodal_regions_involved", minimum=0, maximum=50)
    if nodal is not None and nodal != int(nodal):
        inputs.missing.append("staging.nodal_regions_involved")
        inputs.notes.append("staging.nodal_regions_involved is not a whole number")
        return inputs, None
    if age is None or stage is None or hb is None or ldh is None or uln is None or nodal is None:
        return inputs, None
    return inputs, {
        "age > 60": age > 60,
        "Ann Arbor III-IV": stage.stage in ("III", "IV"),
        "haemoglobin < 12 g/dL": hb < 12,
        "LDH > ULN": ldh > uln,
        "nodal areas > 4": nodal > 4,
    }


_FLIPI_NOTES: Final = (
    "for follicular lymphoma; FLIPI counts nodal areas on its own 12-area map, here taken from "
    "staging.nodal_regions_involved"
)


def flipi(case: Mapping[str, Any]) -> CalcResult:
    """FLIPI 0-5; every one of the five factors is required."""
    inputs, factors = _flipi(case)
    if factors is None:
        return inputs.result("flipi", None, FLIPI_SOURCE, _FLIPI_NOTES)
    score = sum(factors.values())
    detail = [f"{flipi_risk_group(score)} risk", _describe(factors), _FLIPI_NOTES]
    return inputs.result("flipi", score, FLIPI_SOURCE, detail)


def flipi_risk(case: Mapping[str, Any]) -> CalcResult:
    """FLIPI risk group: low (0-1), intermediate (2), high (>= 3)."""
    inputs, factors = _flipi(case)
    if factors is None:
        return inputs.result("flipi_risk", None, FLIPI_SOURCE, _FLIPI_NOTES)
    score = sum(factors.values())
    detail = [f"FLIPI {score}", _describe(factors), _FLIPI_NOTES]
    return inputs.result("flipi_risk", flipi_risk_group(score), FLIPI_SOURCE, detail)


# --- lymphoma entity, Hodgkin risk group, Helicobacter pylori status --------------------------

ENTITY_SOURCE: Final = (
    "WHO Classification of Haematolymphoid Tumours, 5th edition (Alaggio R et al., Leukemia "
    "2022;36:1720-1748) and the International Consensus Classification (Campo E et al., Blood "
    "2022;140:1229-1253): the entity named in diagnosis.histology and diagnosis.subtype, read "
    "with negation ('non-Hodgkin' is not Hodgkin); marginal zone lymphoma split by site."
)
ENTITIES: Final = (
    "classic_hodgkin",
    "nlphl",
    "mantle_cell",
    "mzl_gastric_malt",
    "mzl_extragastric_malt",
    "mzl_splenic",
    "mzl_nodal",
    "burkitt",
    "hgbl",
    "pmbcl",
    "dlbcl",
    "follicular",
    "cll_sll",
    "t_cell",
    "other",
)
# The entities that follow an indolent course (the ones a transformation starts from, and the
# low tumour-lysis risk group besides classic Hodgkin lymphoma).
INDOLENT_ENTITIES: Final = frozenset(
    {
        "follicular",
        "mzl_gastric_malt",
        "mzl_extragastric_malt",
        "mzl_splenic",
        "mzl_nodal",
        "cll_sll",
        "nlphl",
    }
)


def _says(text: str, *terms: str) -> bool:
    return any(affirms(text, term) for term in terms)


def classify_lymphoma(histology: str, site: str = "") -> str:
    """The entity a histology text names (see ENTITIES); "other" when none is recognised."""
    text = histology.casefold()
    if _says(text, "hodgkin", "chl"):
        if _says(text, "lymphocyte predominant", "lymphocyte-predominant", "nlphl", "nlpbl"):
            return "nlphl"
        return "classic_hodgkin"
    if _says(text, "mantle cell", "mantle-cell", "mcl"):
        return "mantle_cell"
    if _says(text, "marginal zone", "marginal-zone", "malt", "mzl", "smzl", "nmzl"):
        if _says(text, "splenic", "smzl"):
            return "mzl_splenic"
        if _says(text, "nodal marginal", "nmzl") and not _says(text, "extranodal"):
            return "mzl_nodal"
        if _says(f"{text} {site.casefold()}", "gastric", "stomach"):
            return "mzl_gastric_malt"
        if _says(text, "malt", "extranodal") or not _says(site.casefold(), "node", "nodal"):
            return "mzl_extragastric_malt"
        return "mzl_nodal"
    if _says(text, "burkitt"):
        return "burkitt"
    if _says(
        text,
        "high-grade b-cell",
        "high grade b-cell",
        "double-hit",
        "double hit",
        "triple-hit",
        "triple hit",
        "hgbl",
    ):
        return "hgbl"
    if _says(text, "primary mediastinal", "pmbcl", "pmbl"):
        return "pmbcl"
    if _says(text, "diffuse large", "dlbcl", "large b-cell", "lbcl"):
        return "dlbcl"
    if _says(text, "follicular"):
        return "follicular"
    if _says(text, "chronic lymphocytic", "small lymphocytic", "cll", "sll"):
        return "cll_sll"
    if _says(text, "t-cell", "t cell", "nk/t", "anaplastic large", "mycosis"):
        return "t_cell"
    return "other"


def lymphoma_entity(case: Mapping[str, Any]) -> CalcResult:
    """The lymphoma entity from histology and subtype (histology required)."""
    inputs = Inputs(case)
    histology = inputs.text("diagnosis.histology")
    subtype = inputs.text("diagnosis.subtype", record_missing=False) or ""
    site = inputs.text("index_lesion.site", record_missing=False) or ""
    if histology is None:
        return inputs.result("lymphoma_entity", None, ENTITY_SOURCE)
    entity = classify_lymphoma(f"{histology}; {subtype}", site)
    return inputs.result("lymphoma_entity", entity, ENTITY_SOURCE, f"read from '{histology}'")


HODGKIN_GROUP_SOURCE: Final = (
    "German Hodgkin Study Group (GHSG) risk factors, as used by ESMO 2018 (Eichenauer DA et al., "
    "Ann Oncol 2018;29 Suppl 4:iv19-iv29) and NCCN Hodgkin Lymphoma: large mediastinal mass, "
    "extranodal disease, ESR >= 50 mm/h (>= 30 with B symptoms), >= 3 nodal areas; stage I-II "
    "without a factor = early favourable, with one = early unfavourable (IIB with a large "
    "mediastinal mass or extranodal disease = advanced); III-IV = advanced. Bulky disease is read "
    "as the large mediastinal mass, nodal regions as GHSG areas, ESR from the notes."
)
_ESR_RE: Final = re.compile(
    r"\b(?:ESR|erythrocyte\s+sedimentation\s+rate)\b\D{0,20}?(\d{1,3})(?:\s*mm)?", re.IGNORECASE
)


def esr_from_notes(notes: str) -> int | None:
    """The ESR (mm/h) a note states, e.g. "ESR 38 mm/h"; None when it states none."""
    match = _ESR_RE.search(notes)
    return int(match.group(1)) if match else None


def hodgkin_stage_group(case: Mapping[str, Any]) -> CalcResult:
    """early_favourable | early_unfavourable | early_esr_unknown (no other risk factor, the ESR
    not stated) | advanced, for classic Hodgkin lymphoma only."""
    name = "hodgkin_stage_group"
    inputs = Inputs(case)
    entity = lymphoma_entity(case).value
    if entity != "classic_hodgkin":
        return inputs.result(name, None, HODGKIN_GROUP_SOURCE, "not classic Hodgkin lymphoma")
    stage = _read_stage(inputs)
    if stage is None:
        return inputs.result(name, None, HODGKIN_GROUP_SOURCE)
    if stage.stage in ("III", "IV"):
        return inputs.result(name, "advanced", HODGKIN_GROUP_SOURCE, f"stage {stage.stage}")
    bulky = inputs.boolean("staging.bulky_disease")
    extranodal_n = inputs.number("staging.extranodal_sites_count", minimum=0)
    nodal_n = inputs.number("staging.nodal_regions_involved", minimum=0, maximum=50)
    b_symptoms = inputs.boolean("staging.b_symptoms")
    notes = inputs.text("notes", record_missing=False) or ""
    esr = esr_from_notes(notes)
    extranodal = None if extranodal_n is None else extranodal_n > 0
    esr_high = None
    if esr is not None and b_symptoms is not None:
        esr_high = esr >= (30 if b_symptoms else 50)
    elif esr is not None and esr >= 50:
        esr_high = True
    factors = {
        "large mediastinal mass (bulky)": bulky,
        "extranodal disease": extranodal,
        "ESR raised": esr_high,
        ">= 3 nodal areas": None if nodal_n is None else nodal_n >= 3,
    }
    present = [k for k, v in factors.items() if v]
    if b_symptoms and stage.stage == "II" and (bulky or extranodal):
        inputs.missing.clear()
        return inputs.result(
            name, "advanced", HODGKIN_GROUP_SOURCE, "stage IIB with bulk or extranodal disease"
        )
    if present:
        # One risk factor decides: what else is missing cannot make the disease favourable.
        inputs.missing.clear()
        detail = "risk factors: " + ", ".join(present)
        return inputs.result(name, "early_unfavourable", HODGKIN_GROUP_SOURCE, detail)
    if any(v is None for k, v in factors.items() if k != "ESR raised"):
        if esr is None:
            inputs.missing.append("notes (ESR)")
        return inputs.result(name, None, HODGKIN_GROUP_SOURCE, "risk factors not all known")
    if esr_high is None:
        # Early stage, no risk factor among those recorded; the ESR (not a case field) decides
        # favourable or unfavourable, so the group says it is pending instead of guessing.
        detail = "early stage without bulk, extranodal disease or >= 3 areas; ESR not stated"
        return inputs.result(name, "early_esr_unknown", HODGKIN_GROUP_SOURCE, detail)
    return inputs.result(name, "early_favourable", HODGKIN_GROUP_SOURCE, "no GHSG risk factor")


H_PYLORI_SOURCE: Final = (
    "Helicobacter pylori status as stated in the notes, comorbidities, histology or lesion "
    "description ('H. pylori positive', 'negative for Helicobacter'); ESMO marginal zone "
    "lymphoma guideline 2020 (Zucca E et al.): the status decides first-line therapy of gastric "
    "MALT lymphoma."
)
_HP_TERMS: Final = (
    "helicobacter",
    "h. pylori",
    "h.pylori",
    "h pylori",
    "hp-positive",
    "hp-negative",
)
_HP_POSITIVE_AFTER_RE: Final = re.compile(
    r"^\W{0,3}(?:\w+\W+){0,3}?(?:positive|detected|present|infection|infected|gastritis|seen)\b",
    re.IGNORECASE,
)
_HP_POSITIVE_BEFORE_RE: Final = re.compile(r"\bpositive\s+for\s*$", re.IGNORECASE)
_HP_UNKNOWN_RE: Final = re.compile(
    r"^\W{0,3}(?:\w+\W+){0,3}?(?:pending|awaited|unknown|not\s+(?:tested|done|available|known))",
    re.IGNORECASE,
)


def h_pylori_status(case: Mapping[str, Any]) -> CalcResult:
    """positive | negative from free text (the last statement wins); None when none is made."""
    inputs = Inputs(case)
    texts: list[str] = []
    for path in ("notes", "diagnosis.histology", "diagnosis.subtype", "index_lesion.description"):
        text = inputs.text(path, record_missing=False)
        if text:
            texts.append(text)
    comorbidities = lookup(case, "patient.comorbidities")
    if isinstance(comorbidities, list):
        texts += [str(c) for c in comorbidities if isinstance(c, str)]
    status: str | None = None
    said = ""
    for text in texts:
        for term in _HP_TERMS:
            for start, end, negated in term_occurrences(text, term):
                after = text[end : end + 60]
                if _HP_UNKNOWN_RE.match(after):
                    continue
                if negated or "negative" in term:
                    status, said = "negative", text
                elif (
                    "positive" in term
                    or _HP_POSITIVE_AFTER_RE.match(after)
                    or _HP_POSITIVE_BEFORE_RE.search(text[:start])
                ):
                    status, said = "positive", text
    if status is None:
        inputs.missing.append("notes (H. pylori status)")
        return inputs.result("h_pylori", None, H_PYLORI_SOURCE, "no H. pylori status stated")
    return inputs.result("h_pylori", status, H_PYLORI_SOURCE, f"from: {said[:120]}")
