"""Whether germline genetic testing is to be offered to a patient with breast cancer.

Bedrosian I, Somerfield MR, Achatz MI, et al. Germline testing in patients with breast cancer:
ASCO-Society of Surgical Oncology guideline. J Clin Oncol 2024;42(5):584-604 (BRCA1/2 testing
offered to every patient diagnosed at 65 or younger; above 65 when a criterion holds: personal
or family history, Ashkenazi Jewish ancestry, triple-negative disease, male sex, or eligibility
for a PARP inhibitor). Sessa C, et al. ESMO Clinical Practice Guideline on risk reduction and
screening of cancer in hereditary breast-ovarian cancer syndromes. Ann Oncol 2023;34(1):33-47.

Yes when no germline result is recorded and a criterion holds; no when a result is recorded
(the test was done) or none holds; unknown when the age is missing and no other criterion
holds. Family history and ancestry are read from the notes, negation respected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from clinical.calculators.breast import breast_subtype
from clinical.calculators.tnm import breast_tnm_stage
from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import affirms

GERMLINE_SOURCE: Final = (
    "Bedrosian I, et al. Germline testing in patients with breast cancer: ASCO-SSO guideline. "
    "J Clin Oncol 2024;42(5):584-604 (all patients <= 65 at diagnosis; above 65 by personal or "
    "family history, Ashkenazi ancestry, triple-negative disease, male sex, PARP-inhibitor "
    "eligibility). Sessa C, et al. Ann Oncol 2023;34(1):33-47 (ESMO, hereditary breast-ovarian "
    "cancer)."
)
AGE_ALL_OFFERED: Final = 65
_HISTORY_TERMS: Final = (
    "family history of breast",
    "family history of ovarian",
    "family history of pancreatic",
    "family history of prostate",
    "strong family history",
    "mother had breast",
    "sister had breast",
    "mother with breast",
    "sister with breast",
    "brca in a relative",
    "brca carrier in the family",
    "ashkenazi",
)


def _notes(case: Mapping[str, Any]) -> str:
    parts = [lookup(case, "notes"), lookup(case, "patient.preferences")]
    comorbidities = lookup(case, "patient.comorbidities")
    if isinstance(comorbidities, list):
        parts += comorbidities
    return " ; ".join(str(p) for p in parts if isinstance(p, str) and p.strip())


def germline_testing_indicated(case: Mapping[str, Any]) -> CalcResult:
    """True when germline testing is to be offered and no result is on record."""
    name = "germline_testing_indicated"
    inputs = Inputs(case)
    recorded = inputs.text("biomarkers.germline_brca", record_missing=False)
    if recorded is not None:
        return inputs.result(name, False, GERMLINE_SOURCE, f"germline result on record: {recorded}")
    age = inputs.number("patient.age_years", minimum=0, maximum=130, record_missing=False)
    reasons: list[str] = []
    if age is not None and age <= AGE_ALL_OFFERED:
        reasons.append(f"age {age:g} (<= {AGE_ALL_OFFERED} at diagnosis)")
    if inputs.text("patient.sex", record_missing=False) == "male":
        reasons.append("male breast cancer")
    subtype = breast_subtype(case).value
    if subtype == "TNBC":
        reasons.append("triple-negative disease")
    if subtype in ("TNBC", "HR+/HER2-") and breast_tnm_stage(case).value == "IV":
        reasons.append("HER2-negative metastatic disease (PARP-inhibitor eligibility)")
    text = _notes(case).casefold()
    history = [t for t in _HISTORY_TERMS if affirms(text, t)]
    if history:
        reasons.append(f"the notes: {history[0]}")
    if reasons:
        return inputs.result(name, True, GERMLINE_SOURCE, "; ".join(reasons))
    if age is None:
        inputs.missing.append("patient.age_years")
        return inputs.result(name, None, GERMLINE_SOURCE, "age not recorded")
    return inputs.result(name, False, GERMLINE_SOURCE, f"age {age:g} and no other criterion")
