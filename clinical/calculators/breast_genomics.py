"""Tumour genomics that choose the line after a CDK4/6 inhibitor in HR+/HER2- metastatic breast
cancer: ESR1 mutation, PIK3CA mutation, and any PIK3CA/AKT1/PTEN alteration.

The case format has no field for them, so they are read from the pathology and molecular text
(notes, subtype, histology, lesion description) with negation: "ESR1 Y537S detected on ctDNA" is a
mutation, "PIK3CA and ESR1 wild-type", "no ESR1 mutation" and "ESR1 not detected" are not, and
"ESR1 pending" or no mention at all is unknown (the rule asks for the test).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs
from clinical.text.negation import negated_at
from clinical.text.textfacts import case_texts

GENOMICS_SOURCE: Final = (
    "Read from the molecular report in the free text (tumour tissue or ctDNA). ESR1 mutation -> "
    "elacestrant (EMERALD); PIK3CA, AKT1 or PTEN alteration -> capivasertib with fulvestrant "
    "(CAPItello-291), PIK3CA mutation -> alpelisib with fulvestrant (SOLAR-1); NCCN Breast "
    "v2.2025 and ESMO MBC Living Guideline: test ESR1 on progression after endocrine therapy "
    "(ctDNA), PIK3CA/AKT1/PTEN on tissue or ctDNA."
)
_PATHS: Final = ("notes", "diagnosis.subtype", "diagnosis.histology", "index_lesion.description")
# A mention followed by a result that is no result yet.
_PENDING = re.compile(
    r"^[^.;]{0,30}?\b(?:pending|awaited|requested|sent|to\s+be\s+(?:tested|done)|not\s+tested"
    r"|unknown|not\s+available|untested|ordered)\b",
    re.IGNORECASE,
)
# The result that follows a gene name in its sentence: the first of a denial or a finding
# decides ("PIK3CA mutated and ESR1 wild-type"; "PIK3CA, AKT1 and PTEN wild-type").
_DENIED = re.compile(
    r"\b(?:wild[-\s]?type|wt\b|neg\b|negative|(?:(?:mutations?|alterations?|variants?)\s+)?"
    r"(?:not\s+(?:detected|mutated|altered|found|identified)|undetected|unaltered|absent)"
    r"|no\s+(?:mutation|alteration|variant))",
    re.IGNORECASE,
)
_FOUND = re.compile(
    r"\b(?:mutat\w*|altered|alteration|loss|deleted|deletion|variant|amplifi\w*|positive"
    r"|detected|[A-Z]\d{2,4}(?:[A-Z]|\*|fs\w*|del\w*))",
)
_SENTENCE_END = re.compile(r"[.;\n]")
_GENES: Final = {
    "esr1": re.compile(r"\bESR1\b", re.IGNORECASE),
    "pik3ca": re.compile(r"\bPIK3CA\b", re.IGNORECASE),
    "akt1": re.compile(r"\bAKT1?\b", re.IGNORECASE),
    "pten": re.compile(r"\bPTEN\b", re.IGNORECASE),
}


def _gene_status(texts: list[str], gene: str) -> tuple[bool | None, str]:
    """True (altered), False (tested, not altered) or None (not mentioned, or pending)."""
    verdict: bool | None = None
    seen = ""
    for text in texts:
        for match in _GENES[gene].finditer(text):
            after = text[match.end() :]
            if _PENDING.match(after):
                continue
            stop = _SENTENCE_END.search(after)
            sentence = after[: stop.start()] if stop else after
            denial, finding = _DENIED.search(sentence), _FOUND.search(sentence)
            seen = text[max(0, match.start() - 30) : match.end() + 40].strip()
            if negated_at(text, match.start(), match.end()) or (
                denial and (finding is None or denial.start() <= finding.start())
            ):
                verdict = False
            elif finding:
                return True, seen
    return verdict, seen


def _fact(case: Mapping[str, Any], name: str, genes: tuple[str, ...]) -> CalcResult:
    inputs = Inputs(case)
    texts = case_texts(inputs, _PATHS)
    statuses = {gene: _gene_status(texts, gene) for gene in genes}
    for gene, (status, seen) in statuses.items():
        if status:
            return inputs.result(name, True, GENOMICS_SOURCE, f"{gene.upper()} altered: '{seen}'")
    tested = [g for g, (status, _) in statuses.items() if status is False]
    if tested:
        detail = ", ".join(g.upper() for g in tested) + " tested, not altered"
        return inputs.result(name, False, GENOMICS_SOURCE, detail)
    inputs.missing.append("notes")
    detail = " / ".join(g.upper() for g in genes) + " status not recorded"
    return inputs.result(name, None, GENOMICS_SOURCE, detail)


def esr1_mutation(case: Mapping[str, Any]) -> CalcResult:
    return _fact(case, "esr1_mutation", ("esr1",))


def pik3ca_mutation(case: Mapping[str, Any]) -> CalcResult:
    return _fact(case, "pik3ca_mutation", ("pik3ca",))


def pi3k_pathway_altered(case: Mapping[str, Any]) -> CalcResult:
    """A PIK3CA mutation or an AKT1 or PTEN alteration (the capivasertib population)."""
    return _fact(case, "pi3k_pathway_altered", ("pik3ca", "akt1", "pten"))
