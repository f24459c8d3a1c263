"""Tumour-lysis risk before the first cycle of lymphoma therapy (low | intermediate | high).

Cairo MS, Coiffier B, Reiter A, Younes A; TLS Expert Panel. Recommendations for the evaluation
of risk and prophylaxis of tumour lysis syndrome (TLS) in adults and children with malignant
diseases: an expert TLS panel consensus. Br J Haematol 2010;149(4):578-586 (risk by disease,
bulk and LDH, raised by renal dysfunction or involvement); Coiffier B, et al. Guidelines for
the management of pediatric and adult tumor lysis syndrome: an evidence-based review. J Clin
Oncol 2008;26(16):2767-2778 (Burkitt lymphoma high risk; prophylaxis by risk group).

Read here: Burkitt and lymphoblastic lymphoma are high risk. An aggressive lymphoma (DLBCL,
high-grade B-cell, primary mediastinal, mantle cell, T-cell) with LDH above the upper limit
and bulky disease is high risk, with one of the two intermediate, with neither low; an
intermediate risk with a creatinine clearance below 60 mL/min or kidney involvement is high.
Indolent lymphomas and Hodgkin lymphoma are low risk. A high risk the notes state (a
spontaneous tumour lysis, hyperuricaemia) is added by ``clinical/applicability.py``, which
reads the notes. The 60 mL/min cut-off for "renal dysfunction" is the engineers' reading, for
the reviewing team to confirm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from clinical.calculators.lymphoma import (
    INDOLENT_ENTITIES,
    classify_lymphoma,
    parse_ann_arbor,
)
from clinical.calculators.renal import crcl_cockcroft_gault
from clinical.results import CalcResult, Inputs, lookup

TLS_SOURCE: Final = (
    "Cairo MS, et al. Br J Haematol 2010;149(4):578-586 (TLS risk classification: disease, "
    "bulk, LDH, renal function); Coiffier B, et al. J Clin Oncol 2008;26(16):2767-2778."
)
_VERY_HIGH: Final = frozenset({"burkitt"})
_AGGRESSIVE: Final = frozenset({"dlbcl", "hgbl", "pmbcl", "mantle_cell", "t_cell"})
_LOW: Final = INDOLENT_ENTITIES | {"classic_hodgkin"}
RENAL_CUTOFF_ML_MIN: Final = 60


def tls_risk(case: Mapping[str, Any]) -> CalcResult:
    """The tumour-lysis risk group of a lymphoma before its first cycle; None when the entity
    is not known or an aggressive lymphoma's LDH (and bulk) are not recorded."""
    name = "tls_risk"
    inputs = Inputs(case)
    histology = inputs.text("diagnosis.histology")
    if histology is None:
        return inputs.result(name, None, TLS_SOURCE)
    subtype = inputs.text("diagnosis.subtype", record_missing=False) or ""
    site = inputs.text("index_lesion.site", record_missing=False) or ""
    text = f"{histology}; {subtype}"
    entity = classify_lymphoma(text, site)
    if entity in _VERY_HIGH or "lymphoblastic" in text.casefold():
        return inputs.result(name, "high", TLS_SOURCE, f"{entity}: high risk by disease")
    if entity in _LOW:
        return inputs.result(name, "low", TLS_SOURCE, f"{entity}: low risk by disease")
    if entity not in _AGGRESSIVE:
        return inputs.result(name, None, TLS_SOURCE, f"{entity}: no risk group read")
    ldh = inputs.number("biomarkers.ldh_u_l", positive=True, record_missing=False)
    uln = inputs.number("biomarkers.ldh_uln_u_l", positive=True, record_missing=False)
    bulky = inputs.boolean("staging.bulky_disease", record_missing=False)
    raised = None if ldh is None or uln is None else ldh > uln
    if raised is None and not bulky:
        inputs.missing.append("biomarkers.ldh_u_l")
        return inputs.result(name, None, TLS_SOURCE, "LDH and its upper limit not recorded")
    factors = [f for f, on in (("LDH above the upper limit", raised), ("bulky", bulky)) if on]
    if raised and bulky:
        return inputs.result(name, "high", TLS_SOURCE, f"{entity}: {' and '.join(factors)}")
    if not factors:
        return inputs.result(name, "low", TLS_SOURCE, f"{entity}: LDH not raised, not bulky")
    crcl = crcl_cockcroft_gault(case).value
    kidney = lookup(case, "staging.kidney_or_adrenal_involvement") is True
    renal: list[str] = []
    number = isinstance(crcl, int | float) and not isinstance(crcl, bool)
    if number and isinstance(crcl, int | float) and crcl < RENAL_CUTOFF_ML_MIN:
        renal.append(f"creatinine clearance {crcl:g} mL/min")
    if kidney:
        renal.append("kidney or adrenal involvement")
    detail = f"{entity}: {' and '.join(factors)}"
    if renal:
        return inputs.result(name, "high", TLS_SOURCE, f"{detail}; raised by {', '.join(renal)}")
    stage = parse_ann_arbor(lookup(case, "staging.ann_arbor_stage"))
    if stage is not None:
        detail += f" (stage {stage.stage})"
    return inputs.result(name, "intermediate", TLS_SOURCE, detail)
