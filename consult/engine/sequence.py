"""The steps of one pathway in the order they are given.

The pathway is assembled as "the chosen option, then the adjuncts that join it", which is not
the order of care: fertility preservation is done before gonadotoxic chemotherapy (ESMO
Clinical Practice Guidelines, Lambertini M et al., Fertility preservation and post-treatment
pregnancies in post-pubertal cancer patients, Ann Oncol 2020;31:1664-1678: referral and
cryopreservation before starting treatment); a symptomatic or large brain metastasis is treated
locally (resection or stereotactic radiosurgery, with steroids for oedema) before systemic
therapy, even with a targetable driver (ASCO-SNO-ASTRO Guideline, Vogelbaum MA et al.,
Treatment for brain metastases, J Clin Oncol 2022;40:492-516: local therapy for symptomatic
metastases; CNS-active systemic therapy first only when asymptomatic); neoadjuvant therapy
precedes surgery, which precedes adjuvant therapy; and a step whose own words say "before
chemotherapy" (antiviral prophylaxis before anti-CD20 therapy) comes before it.

Pure Python, on the words and modality of each step; the order is stable otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, TypeVar

from consult.engine.schemas import ProposedComponent

Step = TypeVar("Step", bound=ProposedComponent)

_FERTILITY: Final = re.compile(
    r"\bfertility|\boocyte|\bembryo|\bsperm|\bcryopreserv\w*|\begg\s+freez\w*"
    r"|\bovarian\s+(?:tissue|suppression\s+for\s+fertility)",
    re.IGNORECASE,
)
_BEFORE: Final = re.compile(
    r"\bbefore\s+(?:the\s+)?(?:first\s+|starting\s+|start\s+of\s+|any\s+|each\s+)?"
    r"(?:chemo\w*|systemic|treatment|therapy|anti-?cd20|b-cell|rituximab|immunotherapy"
    r"|gonadotoxic|cytotoxic|the\s+first|cycle)",
    re.IGNORECASE,
)
# A step that starts after something else: said in its first words ("After surgery: ...",
# "Surgery 3-6 weeks after neoadjuvant therapy"), not in a later clause ("... HER2 therapy
# completed to 1 year after surgery").
_AFTER: Final = re.compile(
    r"^\W*(?:\S+\s+){0,5}?(?:after|following|at\s+(?:progression|relapse))\b",
    re.IGNORECASE,
)
_BRAIN: Final = re.compile(
    r"\bbrain\b|\bintracranial|\bcerebral|\bradiosurgery|\bSRS\b|\bcraniotom\w*"
    r"|\bwhole[-\s]brain|\bposterior\s+fossa|\bvasogenic|\bcerebral\s+o?edema",
    re.IGNORECASE,
)
_STEROID: Final = re.compile(r"\bdexamethasone|\bcorticosteroid|\bsteroid", re.IGNORECASE)
_NEOADJUVANT: Final = re.compile(
    r"\bneo-?adjuvant|\bpre-?operative|\binduction\b|\bthen\s+surgery|;\s*surgery\b",
    re.IGNORECASE,
)
_ADJUVANT: Final = re.compile(r"^\W*(?:adjuvant|post-?operative)\b", re.IGNORECASE)
_OPERATIONS: Final = ("surgery", "ablation", "transplant")
_LOCAL: Final = (*_OPERATIONS, "locoregional", "radiotherapy")

# Phases, earliest first.
FIRST, BRAIN_LOCAL, NEOADJUVANT, MAIN, ADJUVANT, LATER = range(6)


def phase(step: ProposedComponent, *, operation: bool = False) -> int:
    """Where a step falls in the course of care; ``operation``: the pathway has an operation
    (then radiotherapy and the adjuncts that follow surgery come after it)."""
    text = step.description
    if _FERTILITY.search(text) and step.modality != "systemic":
        return FIRST
    if _BEFORE.search(text) and not _AFTER.search(text):
        return FIRST
    if _BRAIN.search(text) and (
        step.modality in _LOCAL or (step.modality == "supportive" and _STEROID.search(text))
    ):
        return BRAIN_LOCAL
    if step.modality in _OPERATIONS:
        return MAIN
    if step.modality == "surveillance":
        return LATER
    if _ADJUVANT.search(text):
        return ADJUVANT
    if _AFTER.search(text):
        return ADJUVANT if operation else LATER
    if step.modality == "systemic" and _NEOADJUVANT.search(text):
        return NEOADJUVANT
    if operation and (
        step.modality == "radiotherapy" or (step.adjunct and "surgery" in step.with_modalities)
    ):
        return ADJUVANT
    return MAIN


def in_sequence(pathway: Sequence[Step]) -> list[Step]:
    """The pathway's steps in the order they are given (stable within a phase)."""
    operation = any(step.modality in _OPERATIONS for step in pathway)
    return [
        step
        for _, step in sorted(
            enumerate(pathway), key=lambda p: (phase(p[1], operation=operation), p[0])
        )
    ]
