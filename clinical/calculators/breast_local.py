"""Which breast operation the patient has already had: breast-conserving surgery, mastectomy,
or none on record. After breast-conserving surgery whole-breast radiotherapy belongs to the
pathway whatever the systemic therapy; after mastectomy, chest-wall and nodal radiotherapy when
node-positive or T3-T4.

Read from the prior therapies and the free text (notes, lesion description), with negation and
with plans left out: "lumpectomy planned", "no mastectomy", "declines mastectomy" are not
operations done.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import clause_at, negated_at

SURGERY_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[].regimen, the notes and the lesion description "
    "(breast-conserving surgery, lumpectomy, wide local excision, quadrantectomy, partial or "
    "segmental mastectomy = breast-conserving; total, simple, skin- or nipple-sparing or "
    "modified radical mastectomy = mastectomy; a completion mastectomy after breast-conserving "
    "surgery counts as mastectomy). Planned, proposed, declined or negated operations are not "
    "counted. ESMO early breast cancer 2024, local treatment: radiotherapy after breast-"
    "conserving surgery; post-mastectomy radiotherapy for node-positive or T3-T4 disease."
)
VALUES: Final = ("breast_conserving", "mastectomy", "none_recorded")

_BCS = re.compile(
    r"\b(?:breast[-\s]conserving\s+(?:surgery|therapy|operation)|bcs|lumpectomy|wide\s+local"
    r"\s+excision|wle|quadrantectomy|(?:partial|segmental)\s+mastectomy|segmentectomy"
    r"|tumou?rectomy)\b",
    re.IGNORECASE,
)
_MASTECTOMY = re.compile(r"(?<!partial\s)(?<!segmental\s)\bmastectom(?:y|ies)\b", re.IGNORECASE)
# Words that make an operation a plan or a wish, not a fact.
_NOT_DONE = re.compile(
    r"\b(?:planned|plan|scheduled|proposed|propose|awaiting|await|candidate|recommend\w*"
    r"|consider\w*|declin\w*|refus\w*|prefer\w*|wish\w*|wants?|would|will|option|offered"
    r"|discuss\w*|feasible|possible|unless|if)\b",
    re.IGNORECASE,
)


def _done(text: str, pattern: re.Pattern[str]) -> bool:
    for match in pattern.finditer(text):
        if negated_at(text, match.start(), match.end()):
            continue
        if _NOT_DONE.search(clause_at(text, match.start(), match.end())):
            continue
        return True
    return False


def breast_surgery_done(case: Mapping[str, Any]) -> CalcResult:
    """breast_conserving | mastectomy | none_recorded (never None: no operation on record is
    itself what the rules need to know)."""
    name = "breast_surgery_done"
    inputs = Inputs(case)
    texts: list[str] = []
    therapies = lookup(case, "diagnosis.prior_therapies")
    if isinstance(therapies, list):
        texts += [
            str(t["regimen"])
            for t in therapies
            if isinstance(t, Mapping) and isinstance(t.get("regimen"), str)
        ]
    for path in ("notes", "index_lesion.description"):
        value = lookup(case, path)
        if isinstance(value, str) and value.strip():
            texts.append(value)
            inputs.used[path] = value
    if any(_done(text, _MASTECTOMY) for text in texts):
        return inputs.result(name, "mastectomy", SURGERY_SOURCE, "mastectomy on record")
    if any(_done(text, _BCS) for text in texts):
        detail = "breast-conserving surgery on record"
        return inputs.result(name, "breast_conserving", SURGERY_SOURCE, detail)
    return inputs.result(name, "none_recorded", SURGERY_SOURCE, "no breast operation on record")
