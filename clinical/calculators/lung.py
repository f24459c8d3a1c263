"""Lung adenocarcinoma: the actionable oncogenic drivers of the case, from the structured
biomarkers and, for drivers the case format has no field for (NTRK fusions, ERBB2/HER2
mutations) or that were left empty, from the pathology text with negation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.textfacts import case_texts, stated

DRIVER_SOURCE: Final = (
    "NCCN Guidelines NSCLC v3.2025, Principles of Molecular and Biomarker Analysis and "
    "NSCL-19 to NSCL-33 (actionable drivers: EGFR exon 19 deletion/L858R, other sensitising "
    "EGFR mutations, EGFR exon 20 insertion, ALK, ROS1, BRAF V600E, MET exon 14 skipping, RET, "
    "NTRK1-3 fusions, ERBB2 (HER2) mutations, KRAS G12C); ESMO 2023 oncogene-addicted mNSCLC."
)

# Driver keys, one per matched therapy (rules name them: derived.lung_drivers contains_any).
EGFR_COMMON = "egfr_common"
EGFR_UNCOMMON = "egfr_uncommon"
EGFR_EXON20 = "egfr_exon20ins"

_STRUCTURED: Final[tuple[tuple[str, Mapping[str, str]], ...]] = (
    (
        "biomarkers.egfr",
        {
            "exon19del": EGFR_COMMON,
            "l858r": EGFR_COMMON,
            "exon20ins": EGFR_EXON20,
            "other": EGFR_UNCOMMON,
        },
    ),
    ("biomarkers.alk", {"positive": "alk"}),
    ("biomarkers.ros1", {"positive": "ros1"}),
    ("biomarkers.braf", {"v600e": "braf_v600e"}),
    ("biomarkers.met_exon14", {"positive": "met_exon14"}),
    ("biomarkers.ret", {"positive": "ret"}),
    ("biomarkers.kras", {"g12c": "kras_g12c"}),
)

_POSITIVE = r"(?:[\w-]*\s+){0,3}?(?:fusion|rearrange\w*|positive|translocation|detected)"
# Text patterns for each driver; a structured field, when recorded, wins over the text.
_TEXT: Final[tuple[tuple[str, str | None, re.Pattern[str]], ...]] = (
    ("ntrk", None, re.compile(rf"\bNTRK\s?[123]?\b{_POSITIVE}|\b\w+-NTRK[123]\b", re.I)),
    (
        "erbb2",
        None,
        re.compile(
            r"\b(?:ERBB2|HER2)\b(?:\s*\((?:ERBB2|HER2)\))?[\w\s-]{0,20}?"
            r"(?:mutation|mutant|mutated|exon\s?20|insertion|YVMA|Y772|G776|S310|L755|V659)",
            re.I,
        ),
    ),
    ("ros1", "biomarkers.ros1", re.compile(rf"\bROS1\b{_POSITIVE}|\b\w+-ROS1\b", re.I)),
    ("ret", "biomarkers.ret", re.compile(rf"\bRET\b{_POSITIVE}|\b\w+-RET\b", re.I)),
    ("alk", "biomarkers.alk", re.compile(rf"\bALK\b{_POSITIVE}|\bEML4-ALK\b", re.I)),
    ("braf_v600e", "biomarkers.braf", re.compile(r"\bBRAF\s+V600E\b", re.I)),
    (
        "met_exon14",
        "biomarkers.met_exon14",
        re.compile(r"\bMET\s+(?:exon\s?14|ex14)\s*(?:skipping)?", re.I),
    ),
    ("kras_g12c", "biomarkers.kras", re.compile(r"\bKRAS\s+G12C\b", re.I)),
)
_TEXT_PATHS: Final = (
    "diagnosis.subtype",
    "diagnosis.histology",
    "notes",
    "index_lesion.description",
)


def lung_drivers(case: Mapping[str, Any]) -> CalcResult:
    """The actionable drivers found ([] when results are recorded and none is actionable);
    None when no driver result is recorded at all (molecular testing not reported)."""
    name = "lung_drivers"
    inputs = Inputs(case)
    found: list[str] = []
    reasons: list[str] = []
    recorded = False
    for path, positives in _STRUCTURED:
        raw = lookup(case, path)
        if not isinstance(raw, str) or not raw.strip():
            continue
        recorded = True
        inputs.used[path] = raw
        driver = positives.get(raw.strip().casefold())
        if driver and driver not in found:
            found.append(driver)
            reasons.append(f"{path} {raw}")
    texts = case_texts(inputs, _TEXT_PATHS)
    for driver, field, pattern in _TEXT:
        if driver in found:
            continue
        if field is not None and isinstance(lookup(case, field), str):
            continue  # the structured result is the record; the text does not overrule it
        clause = stated(texts, pattern)
        if clause is not None:
            recorded = True
            found.append(driver)
            reasons.append(f'{driver} in "{clause}"')
    if not recorded:
        inputs.missing.append("biomarkers.egfr")
        return inputs.result(name, None, DRIVER_SOURCE, "no driver result recorded")
    detail = "; ".join(reasons) if reasons else "results recorded, no actionable driver"
    return inputs.result(name, found, DRIVER_SOURCE, detail)


# Drivers whose matched inhibitor is the preferred first line (checkpoint inhibitors are not
# given first): KRAS G12C and ERBB2 mutations are treated first like driver-negative disease.
FIRST_LINE_TARGETED: Final = frozenset(
    {
        EGFR_COMMON,
        EGFR_UNCOMMON,
        EGFR_EXON20,
        "alk",
        "ros1",
        "braf_v600e",
        "met_exon14",
        "ret",
        "ntrk",
    }
)
# Drivers whose first-line inhibitor controls brain metastases well enough to defer local
# therapy of small asymptomatic ones (osimertinib, alectinib/lorlatinib, repotrectinib or
# entrectinib, selpercatinib, larotrectinib or entrectinib).
CNS_ACTIVE_TARGETED: Final = frozenset({EGFR_COMMON, "alk", "ros1", "ret", "ntrk"})


def _driver_set(case: Mapping[str, Any], name: str, members: frozenset[str]) -> CalcResult:
    drivers = lung_drivers(case)
    inputs = Inputs(case)
    inputs.used.update(drivers.inputs_used)
    if drivers.value is None:
        inputs.missing.extend(drivers.inputs_missing)
        return inputs.result(name, None, DRIVER_SOURCE, drivers.detail)
    hits = [d for d in drivers.value if d in members] if isinstance(drivers.value, list) else []
    detail = ", ".join(hits) if hits else f"none among {', '.join(sorted(members))}"
    return inputs.result(name, bool(hits), DRIVER_SOURCE, detail)


def lung_first_line_targeted(case: Mapping[str, Any]) -> CalcResult:
    """A driver whose matched inhibitor is preferred over immunotherapy in the first line."""
    return _driver_set(case, "lung_first_line_targeted", FIRST_LINE_TARGETED)


def lung_cns_active_targeted(case: Mapping[str, Any]) -> CalcResult:
    """A driver with a first-line inhibitor active in the brain."""
    return _driver_set(case, "lung_cns_active_targeted", CNS_ACTIVE_TARGETED)
