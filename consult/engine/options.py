"""The MDT question answered: each main treatment option of the case's cancer and setting is
either in the plan or named as not advised, with the patient facts that rule it out.

A therapy step takes part when the knowledge base names the MDT option it belongs to (its
``option``: "liver transplantation", "CAR T-cell therapy"). Steps written for another histology,
line or setting belong to another board's question and are left out; of the options left, those
the plan does not already hold are reported with the failed conditions of the step that came
closest to applying, in clinical words ("Child-Pugh class A (needs B)"), the few closest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clinical.plan import PlanComponent, RejectedOption
from clinical.vocab import STAGING_LABELS
from consult.engine.matching import norm_name
from consult.engine.protocols import Evidence

MAX_NOT_ADVISED = 4
# A step more than two conditions away from applying is another patient's option.
MAX_DISTANCE = 2
# Facts that say which disease, line and setting a step is written for: a step that fails on
# one of them answers another case's question, not this one's. The operations on record are a
# setting too: surveillance after a resection never applied to a patient whose tumour is still
# in place, and is no option ruled out for them.
SCOPE_FACTS = frozenset(
    {
        "cancer_type",
        "diagnosis.histology",
        "diagnosis.subtype",
        "derived.lymphoma_entity",
        "derived.line",
        "diagnosis.setting",
        "derived.prior_regimens",
        "derived.primary_operation_done",
        "derived.breast_surgery_done",
        "derived.operations_done",
    }
)
_OPS = {"lt": "<", "le": "≤", "gt": ">", "ge": "≥"}


def option_label(action: Mapping[str, Any]) -> str:
    return str(action.get("option") or "").strip()


def _label(fact: str, labels: Mapping[str, str]) -> str:
    label = labels.get(fact) or STAGING_LABELS.get(fact.removeprefix("derived."))
    return label or fact.split(".")[-1].replace("_", " ").capitalize()


def _shown(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "none"
    return str(value).replace("_", " ")


def _alternatives(values: Sequence[Any]) -> str:
    shown = [_shown(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def condition_words(row: Sequence[Any], labels: Mapping[str, str]) -> str:
    """One failed condition in clinical words: the patient's value, then what the option needs."""
    fact, op, needed, value, _group = row
    label = _label(str(fact), labels)
    if op == "contains_any":
        return f"{label}: no mention of {_alternatives(needed)}"
    if op in ("is_true", "is_false"):
        return f"{label}: {_shown(value)} (needs {'yes' if op == 'is_true' else 'no'})"
    if op == "eq":
        need = _shown(needed)
    elif op == "ne":
        need = f"other than {_shown(needed)}"
    elif op == "in":
        need = _alternatives(needed)
    elif op == "not_in":
        need = f"other than {_alternatives(needed)}"
    else:
        need = f"{_OPS.get(str(op), op)} {_shown(needed)}"
    return f"{label} {_shown(value)} (needs {need})"


def reason(unit: Evidence, labels: Mapping[str, str]) -> str:
    rows = list(unit.failed)
    parts = [condition_words(r, labels) for r in rows if r[4] == "all"]
    either = [condition_words(r, labels) for r in rows if r[4] == "any"]
    if either:
        parts.append("none of its indications holds (" + "; ".join(either) + ")")
    return "not indicated now: " + "; ".join(parts)


def _distance(unit: Evidence) -> int:
    """How far a step is from applying: its failed ``all`` conditions, an ``any`` group as one."""
    rows = list(unit.failed)
    return sum(r[4] == "all" for r in rows) + (1 if any(r[4] == "any" for r in rows) else 0)


def _in_scope(unit: Evidence) -> bool:
    """Written for this case's disease, line and setting: no failed ``all`` condition on a scope
    fact, and an ``any`` group that failed does not consist of scope facts only."""
    rows = list(unit.failed)
    if any(r[0] in SCOPE_FACTS and r[4] == "all" for r in rows):
        return False
    either = [r for r in rows if r[4] == "any"]
    return bool(rows) and not (either and all(r[0] in SCOPE_FACTS for r in either))


def _taken(
    components: Sequence[PlanComponent],
    known: Mapping[str, Evidence],
    rejected: Sequence[RejectedOption],
) -> tuple[set[str], set[str], set[str]]:
    """The option labels the plan holds or already rules out (a contraindication, a member's
    objection), and for items that cite no known step (an LLM's own proposal) their agents and
    the modalities of those without agents."""
    ruled_out = {r.option for r in rejected}
    labels = {
        option_label(e.action)
        for e in known.values()
        if option_label(e.action) and e.action.get("description") in ruled_out
    }
    agents: set[str] = set()
    modalities: set[str] = set()
    for component in components:
        cited = [known[u] for u in component.evidence if u in known]
        labels.update(option_label(e.action) for e in cited if option_label(e.action))
        if cited:
            continue
        agents.update(norm_name(a) for a in component.agents)
        if not component.agents:
            modalities.add(component.modality)
    return labels, agents, modalities


def not_advised(
    considered: Sequence[Evidence],
    components: Sequence[PlanComponent],
    *,
    known: Mapping[str, Evidence],
    labels: Mapping[str, str],
    rejected: Sequence[RejectedOption] = (),
    limit: int = MAX_NOT_ADVISED,
) -> list[RejectedOption]:
    """The main options of the case's cancer and setting that the plan does not hold or
    already rule out, each with why it does not apply; at most ``limit``, the closest to
    applying first (at most two conditions away)."""
    taken, agents, modalities = _taken(components, known, rejected)
    best: dict[str, Evidence] = {}
    for unit in considered:
        label = option_label(unit.action)
        if not label or label in taken or unit.action.get("role") == "adjunct":
            continue
        if not _in_scope(unit) or _distance(unit) > MAX_DISTANCE:
            continue
        unit_agents = {norm_name(str(a)) for a in unit.action.get("agents") or ()}
        if unit_agents & agents or (not unit_agents and unit.action.get("modality") in modalities):
            continue
        current = best.get(label)
        if current is None or _rank(unit) < _rank(current):
            best[label] = unit
    chosen = sorted(best.items(), key=lambda item: (_rank(item[1]), item[0]))[:limit]
    return [
        RejectedOption(option=label[:1].upper() + label[1:], reason=reason(unit, labels))
        for label, unit in chosen
    ]


def _rank(unit: Evidence) -> tuple[int, bool, int, int, int, str]:
    """Closest first; among equals, a step whose ``all`` conditions hold and only its
    indications fail (the right stage, not the right patient), then the step that matches more
    of the patient's facts, explains best why not."""
    return (
        _distance(unit),
        any(r[4] == "all" for r in unit.failed),
        -len(unit.held),
        int(unit.action.get("preference") or 5),
        unit.grade_ordinal,
        unit.unit_id,
    )
