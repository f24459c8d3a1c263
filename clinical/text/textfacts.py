"""Facts read from the free text of a case (notes, lesion description, comorbidities, subtype),
with negation: "no seizures", "asymptomatic", "EGFR, ALK and ROS1 negative" and "not a
surgical candidate" are read the way a clinician reads them.

Rules used to test the words themselves (``notes contains "seizure"``), so "no seizures"
counted as a seizure and a missing note made the rule unknown. These readers return True when
the text states the finding, False when text is there and does not state it, and None only
when there is no text to read at all (so a rule asks for it instead of assuming).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import clause_at, negated_at

TEXT_SOURCE: Final = (
    "Rule-based reading of the case's free text (NegEx-style, clinical/text/negation.py: "
    "a finding is negated by no/not/without/denies/negative for/free of/absence of/non- in the "
    "five words before it in the same clause, or by negative/not detected/absent/excluded/"
    "wild-type/ruled out/-free after it). Not a language model: what it cannot read it leaves "
    "out, and the matched words are shown with the fact."
)

# Results that deny a finding after it, beyond the shared reader's: molecular "wild-type".
_NEG_AFTER = re.compile(
    r"^[^,.;]{0,30}?\b(?:wild[-\s]?type|wt\b|neg\b|undetected)",
    re.IGNORECASE,
)


def _negated(text: str, start: int, end: int) -> bool:
    return negated_at(text, start, end) or bool(_NEG_AFTER.match(text[end:]))


def stated(texts: Iterable[str], pattern: re.Pattern[str]) -> str | None:
    """The first clause that states the pattern without negating it, or None. Negation and
    scope are the shared reader's (clinical/text/negation.py): "non-bulky", "no
    seizures", "seizure-free" and "EGFR wild-type" state nothing."""
    for text in texts:
        for match in pattern.finditer(text):
            if not _negated(text, match.start(), match.end()):
                return clause_at(text, match.start(), match.end())
    return None


def case_texts(inputs: Inputs, paths: Sequence[str]) -> list[str]:
    """The non-empty texts at the paths (strings, or lists of strings), recorded as used."""
    found: list[str] = []
    for path in paths:
        value = lookup(inputs.case, path)
        if isinstance(value, str) and value.strip():
            found.append(value)
            inputs.used[path] = value
        elif isinstance(value, list):
            items = [v for v in value if isinstance(v, str) and v.strip()]
            if items:
                found.extend(items)
                inputs.used[path] = items
    return found


def text_fact(
    case: Mapping[str, Any], name: str, pattern: re.Pattern[str], paths: Sequence[str]
) -> CalcResult:
    """True/False whether the texts state the pattern; None when there is no text at all."""
    inputs = Inputs(case)
    texts = case_texts(inputs, paths)
    if not texts:
        inputs.missing.extend(p for p in paths if p not in inputs.missing)
        return inputs.result(name, None, TEXT_SOURCE, "no free text to read")
    clause = stated(texts, pattern)
    detail = f'stated: "{clause}"' if clause else "not stated in the text"
    return inputs.result(name, clause is not None, TEXT_SOURCE, detail)


_DESCRIPTIVE: Final = (
    "index_lesion.description",
    "notes",
    "patient.comorbidities",
    "diagnosis.subtype",
)

INOPERABLE: Final = re.compile(
    r"\b(?:medically\s+)?inoperable\b|\bunfit\s+for\s+(?:surgery|resection|an\s+operation)"
    r"|\bnot\s+(?:fit|suitable)\s+for\s+(?:surgery|resection|an\s+operation)"
    r"|\bnot\s+a\s+(?:surgical|operative)\s+candidate|\bhigh\s+(?:surgical|operative)\s+risk"
    r"|\bprohibitive\s+(?:surgical\s+)?risk",
    re.IGNORECASE,
)
UNRESECTABLE: Final = re.compile(
    r"\bunresectable\b|\bnot\s+resectable\b|\bnon-?resectable\b|\bbulky\b"
    r"|\bmulti-?\s?station\b|\bmultiple\s+(?:nodal\s+)?stations\b|\binvad\w*\s+(?:the\s+)?"
    r"(?:heart|great\s+vessels|aorta|trachea|carina|oesophagus|esophagus|vertebral\s+body)",
    re.IGNORECASE,
)
BRAIN_SYMPTOMS: Final = re.compile(
    r"(?<![a-z])symptomatic\b|\bseizures?\b|\bconvulsions?\b|\bhemipar\w+|\bweakness\b"
    r"|\b(?:focal\s+)?neurological\s+deficits?\b|\bfocal\s+deficits?\b|\baphasia\b"
    r"|\bdysphasia\b|\bataxia\b|\bvasogenic\b|\b(?:o)?edema\b|\boedema\b|\bmass\s+effect\b"
    r"|\bmidline\s+shift\b|\braised\s+intracranial\b|\bheadaches?\b|\bconfusion\b",
    re.IGNORECASE,
)
BONE_METASTASES: Final = re.compile(
    r"\b(?:bone|osseous|skeletal|vertebral|spinal|spine|pelvic|pelvis|rib|sternal|femoral)\w*"
    r"[\s,()a-z-]{0,40}?(?:metasta\w*|lesions?|deposits?|disease|involvement)"
    r"|\bmetasta\w*[\s,a-z-]{0,40}?\b(?:bone|bones|spine|pelvis|ribs?|skeleton)\b",
    re.IGNORECASE,
)
OLIGOMETASTATIC: Final = re.compile(
    r"\boligo-?\s?metasta\w*|\b(?:single|solitary|isolated)\s+(?:\w+\s+){0,3}?metasta\w*",
    re.IGNORECASE,
)


def recorded_inoperable(case: Mapping[str, Any]) -> CalcResult:
    """The record says the patient is medically inoperable (not fit for surgery)."""
    return text_fact(case, "recorded_inoperable", INOPERABLE, _DESCRIPTIVE)


def recorded_unresectable(case: Mapping[str, Any]) -> CalcResult:
    """The record says the tumour is unresectable (or bulky/multistation nodal disease)."""
    return text_fact(case, "recorded_unresectable", UNRESECTABLE, _DESCRIPTIVE)


def bone_metastases(case: Mapping[str, Any]) -> CalcResult:
    """The record states bone metastases."""
    return text_fact(case, "bone_metastases", BONE_METASTASES, _DESCRIPTIVE)


def brain_metastases_symptomatic(case: Mapping[str, Any]) -> CalcResult:
    """Brain metastases that cause symptoms or need steroids: False without brain
    metastases, None when their number is not recorded."""
    name = "brain_metastases_symptomatic"
    inputs = Inputs(case)
    count = inputs.number("staging.brain_metastases_count", minimum=0, maximum=1000)
    if count is None:
        return inputs.result(name, None, TEXT_SOURCE)
    if count == 0:
        return inputs.result(name, False, TEXT_SOURCE, "no brain metastases")
    texts = case_texts(inputs, _DESCRIPTIVE)
    clause = stated(texts, BRAIN_SYMPTOMS)
    if clause is not None:
        return inputs.result(name, True, TEXT_SOURCE, f'stated: "{clause}"')
    # Steroids in a patient with brain metastases are, until shown otherwise, for them.
    if lookup(case, "organ_function.immunosuppression") == "high_dose_steroids":
        inputs.used["organ_function.immunosuppression"] = "high_dose_steroids"
        return inputs.result(name, True, TEXT_SOURCE, "brain metastases on high-dose steroids")
    medications = lookup(case, "patient.medications")
    if isinstance(medications, list) and any(
        isinstance(m, str) and re.search(r"dexamethason", m, re.I) for m in medications
    ):
        inputs.used["patient.medications"] = medications
        return inputs.result(name, True, TEXT_SOURCE, "brain metastases on dexamethasone")
    return inputs.result(name, False, TEXT_SOURCE, "no symptom stated")


def oligometastatic(case: Mapping[str, Any]) -> CalcResult:
    """Limited metastatic disease: a single extrathoracic metastasis (M1b) or the record says
    oligometastatic / a single metastasis. None when the M category is not recorded."""
    name = "oligometastatic"
    inputs = Inputs(case)
    m = inputs.text("staging.m")
    if m is None:
        return inputs.result(name, None, TEXT_SOURCE)
    if m.upper() == "M1B":
        return inputs.result(name, True, TEXT_SOURCE, "M1b: a single extrathoracic metastasis")
    if not m.upper().startswith("M1"):
        return inputs.result(name, False, TEXT_SOURCE, f"{m}: no distant metastasis")
    clause = stated(case_texts(inputs, _DESCRIPTIVE), OLIGOMETASTATIC)
    detail = f'stated: "{clause}"' if clause else f"{m} without a statement of limited disease"
    return inputs.result(name, clause is not None, TEXT_SOURCE, detail)


def steroids_for_brain_metastases(case: Mapping[str, Any]) -> CalcResult:
    """High-dose steroids taken for symptomatic brain metastases, not for an autoimmune
    disease: a reason to taper before immunotherapy rather than to give it up. False in every
    other case (including when the reason cannot be told), so that a rule against
    immunotherapy on high-dose steroids keeps its full force there."""
    name = "steroids_for_brain_metastases"
    inputs = Inputs(case)
    steroids = lookup(case, "organ_function.immunosuppression") == "high_dose_steroids"
    autoimmune = lookup(case, "organ_function.autoimmune_activity")
    brain = brain_metastases_symptomatic(case).value is True
    inputs.used["organ_function.immunosuppression"] = lookup(
        case, "organ_function.immunosuppression"
    )
    inputs.used["organ_function.autoimmune_activity"] = autoimmune
    value = steroids and brain and autoimmune == "none"
    detail = (
        "high-dose steroids for symptomatic brain metastases, no autoimmune disease"
        if value
        else "not established that the steroids are for brain metastases alone"
    )
    return inputs.result(name, value, TEXT_SOURCE, detail)
