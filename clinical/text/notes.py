"""The facts the clinical text reader (clinical/text/) finds in a case's free text, merged into
the case the rules read: an empty structured field is filled from the text, a structured field
always wins, and a disagreement between them is reported. Facts the case format has no field
for (a prior pneumonitis, an anticoagulant, a heart failure) are added as they are.

Every fact taken from the text keeps its sentence and the field it came from, so the plan can
show "read from the text" beside it for the clinician to check.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from datetime import date
from typing import Any, Final

from clinical.text.reader import TextFact, case_texts, read_texts

# Facts of the reader that stand for a dossier field of their own.
_EVENT_FIELDS: Final = {
    "patient.prior_immune_adverse_events": (
        "patient.prior_irae_organ",
        {
            "organ": "patient.prior_irae_organ",
            "grade": "patient.prior_irae_grade",
            "agent": "patient.prior_irae_agent",
            "date": "patient.prior_irae_date",
        },
    ),
    "organ_function.recent_bleeding": (
        "organ_function.recent_bleeding_site",
        {
            "site": "organ_function.recent_bleeding_site",
            "date": "organ_function.recent_bleeding_date",
        },
    ),
}
_DATE: Final = re.compile(r"^(?:19|20)\d\d-\d\d-\d\d$")


def _lookup(case: Mapping[str, Any], path: str) -> Any:
    section, _, key = path.partition(".")
    node = case.get(section)
    return node.get(key) if isinstance(node, Mapping) else None


def _set(case: dict[str, Any], path: str, value: Any) -> None:
    section, _, key = path.partition(".")
    node = case.get(section)
    if not isinstance(node, dict):
        node = {}
        case[section] = node
    node[key] = value


def _dates(value: Any) -> Iterator[date]:
    if isinstance(value, str) and _DATE.match(value):
        try:
            yield date.fromisoformat(value)
        except ValueError:
            return
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from _dates(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _dates(inner)


def reference_date(case: Mapping[str, Any], today: date | None = None) -> date:
    """The day "4 weeks ago" counts back from: the newest date recorded in the case file (a
    measurement, the end of a therapy, an endoscopy), else today."""
    found = [d for d in _dates(dict(case)) if today is None or d <= today]
    return max(found) if found else (today or date.today())  # noqa: DTZ011


def _worst_event(fact: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    if fact == "patient.prior_immune_adverse_events":
        return max(events, key=lambda e: (e.get("grade") or 0, e.get("date") or ""))
    dated = [e for e in events if e.get("days_ago") is not None]
    return min(dated, key=lambda e: e["days_ago"]) if dated else events[0]


def _agrees(structured: Any, read: Any) -> bool:
    if isinstance(structured, str) and isinstance(read, str):
        return structured.strip().casefold() == read.strip().casefold()
    if isinstance(structured, bool) or isinstance(read, bool):
        return bool(structured == read)
    if isinstance(structured, int | float) and isinstance(read, int | float):
        return abs(float(structured) - float(read)) < 1
    return bool(structured == read)


def _endoscopy_varices(case: Mapping[str, Any]) -> str | None:
    """The varices value the recorded endoscopy gives (Baveno VII: large or red-sign varices
    are high-risk until treated)."""
    size = _lookup(case, "organ_function.endoscopy_varices_size")
    treated = _lookup(case, "organ_function.endoscopy_varices_treated")
    red = _lookup(case, "organ_function.endoscopy_red_signs")
    if size is None:
        return None
    if size == "none":
        return "none"
    if treated is True:
        return "treated"
    if size == "large" or red is True:
        return "large_untreated"
    return "small"


def complete_from_notes(
    case: Mapping[str, Any], *, filled_by_text: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The case with its empty fields filled from what the free text states; the facts filled
    so (with their sentences); the disagreements (structured value kept); and the facts that
    have no dossier field (name -> value), e.g. ``organ_function.prior_pneumonitis``.

    ``filled_by_text``: fields an earlier text reader already filled (left as they are)."""
    completed = copy.deepcopy(dict(case))
    if _lookup(completed, "organ_function.varices") is None:
        from_endoscopy = _endoscopy_varices(completed)
        if from_endoscopy is not None:
            _set(completed, "organ_function.varices", from_endoscopy)
    _findings, facts = read_texts(case_texts(case), as_of=reference_date(case))
    filled: list[dict[str, Any]] = []
    disagreements: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    for fact in facts:
        extra[fact.fact] = fact.value
        if fact.fact in _EVENT_FIELDS:
            anchor, keys = _EVENT_FIELDS[fact.fact]
            event = _worst_event(fact.fact, list(fact.value))
            if _lookup(case, anchor) is None and anchor not in filled_by_text:
                for key, path in keys.items():
                    if event.get(key) is not None:
                        _set(completed, path, event[key])
                        filled.append(_shown(fact, path, event[key]))
            continue
        if not _is_field(fact.fact):
            continue
        structured = _lookup(case, fact.fact)
        if fact.fact in filled_by_text:
            continue
        if structured is None or structured == "":
            _set(completed, fact.fact, fact.value)
            filled.append(_shown(fact, fact.fact, fact.value))
        elif not _agrees(structured, fact.value):
            disagreements.append({**_shown(fact, fact.fact, fact.value), "structured": structured})
    return completed, filled, disagreements, extra


def _shown(fact: TextFact, path: str, value: Any) -> dict[str, Any]:
    return {
        "fact": path,
        "value": value,
        "phrase": fact.sentence,
        "source": fact.source,
        "assertion": fact.assertion,
    }


def _is_field(path: str) -> bool:
    """Whether ``path`` is a field of the case format (the reader also reads facts that have
    none, which go to the rules as they are)."""
    return path in _FIELD_PATHS


# The case-format fields the reader may fill (FORMAT.md and issue 21 item 4). Listed here
# because knowledge/ does not import the case-file catalogue (consult/casefile/).
_FIELD_PATHS: Final = frozenset(
    {
        "biomarkers.dpd_status",
        "biomarkers.ugt1a1_status",
        "biomarkers.egfr",
        "biomarkers.alk",
        "biomarkers.ros1",
        "biomarkers.kras",
        "biomarkers.braf",
        "biomarkers.met_exon14",
        "biomarkers.ret",
        "biomarkers.germline_brca",
        "labs.hbsag",
        "labs.anti_hbc",
        "organ_function.varices",
        "organ_function.interstitial_lung_disease",
        "organ_function.lvef_pct",
        "organ_function.qtc_ms",
        "organ_function.autoimmune_disease",
        "organ_function.autoimmune_activity",
        "staging.macrovascular_invasion",
        "diagnosis.transplant_history",
        "patient.pregnant",
        "patient.breastfeeding",
        "patient.gestational_age_weeks",
    }
)
