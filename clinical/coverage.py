"""The coverage map: what the knowledge base models, per cancer, read from its therapy options.

A situation is *covered* when a therapy option (``role: option``, not supportive) is written
for it: its context names the situation in ``derived.situations``, the lymphoma entity in
``derived.lymphoma_entity``, or the variant's words in ``diagnosis.histology`` /
``diagnosis.subtype``. A cancer's common histology (the one its guidelines are about) is
covered by every option written without a histology condition. The immediate steps of
clinical/text/situations' emergencies are adjuncts of supportive intent: they never cover a
situation, they are what the plan offers when it abstains.

The same function serves the curator's page and docs/coverage.md (over the knowledge base) and
the engine (over the units the retriever gave it), so a unit added to the knowledge base changes
both at once. Pure Python.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from clinical.calculators.lymphoma import classify_lymphoma
from clinical.calculators.situations import ENTITY_LABELS, Situation, catalogue, entity_label
from clinical.text.concepts import situation_dictionary

CANCERS: Final = ("hcc", "lung_adenocarcinoma", "breast", "lymphoma")

# The histology each cancer type's guidelines are written for: an option without a histology
# condition covers it (and only it).
COMMON_HISTOLOGY: Final[Mapping[str, str]] = {
    "hcc": "hepatocellular carcinoma",
    "lung_adenocarcinoma": "adenocarcinoma (non-squamous non-small-cell lung cancer)",
    "breast": (
        "invasive breast carcinoma (no special type, lobular and special types treated by "
        "receptor status)"
    ),
}

_HISTOLOGY_FACTS: Final = ("diagnosis.histology", "diagnosis.subtype")
_SETTING_FACTS: Final = {
    "diagnosis.setting": "setting",
    "derived.early_relapse": "early relapse (within 12 months)",
    "derived.months_to_relapse": "months to relapse",
    "derived.breast_surgery_done": "after breast surgery",
    "derived.recorded_unresectable": "recorded unresectable",
    "derived.recorded_inoperable": "recorded inoperable",
}
_STAGE_FACTS: Final = (
    "derived.tnm_stage",
    "derived.bclc",
    "derived.ann_arbor_stage",
    "derived.hodgkin_stage_group",
    "derived.child_pugh_class",
)
_SITE_FACTS: Final = {
    "staging.brain_metastases_count": "brain metastases",
    "derived.brain_metastases_symptomatic": "brain metastases",
    "derived.bone_metastases": "bone metastases",
    "derived.oligometastatic": "oligometastatic disease",
    "staging.macrovascular_invasion": "macrovascular invasion",
    "staging.extrahepatic_spread": "extrahepatic spread",
}
_BIOMARKER_PREFIXES: Final = ("biomarkers.", "derived.breast_subtype", "derived.lung_")


@dataclass(frozen=True)
class UnitRef:
    """What the map needs of a unit: its key, cancer, kind and content (context, action)."""

    key: str
    cancer_type: str
    kind: str
    content: Mapping[str, Any]

    @property
    def action(self) -> Mapping[str, Any]:
        action: Mapping[str, Any] = self.content.get("action") or {}
        return action

    @property
    def conditions(self) -> list[Mapping[str, Any]]:
        context = self.content.get("context") or {}
        return [*(context.get("all") or ()), *(context.get("any") or ())]

    @property
    def is_option(self) -> bool:
        """A therapy option (a way to treat the disease), not an adjunct or a supportive step."""
        action = self.action
        return (
            self.kind == "therapy_step"
            and action.get("type") == "therapy"
            and action.get("role", "option") == "option"
            and action.get("intent") != "supportive"
        )

    @property
    def is_situation_step(self) -> bool:
        """An immediate step or a referral written for a situation outside the pathways."""
        action = self.action
        return (
            self.kind == "therapy_step"
            and not self.is_option
            and (
                bool(action.get("specialists") or action.get("board_decides"))
                or any(c.get("fact") == "derived.situations" for c in self.conditions)
            )
        )


@dataclass
class CancerCoverage:
    """One cancer's map: each entry -> the keys of the options that model it."""

    cancer: str
    histologies: dict[str, list[str]] = field(default_factory=dict)
    situations: dict[str, list[str]] = field(default_factory=dict)  # situation id -> options
    entities: dict[str, list[str]] = field(default_factory=dict)  # lymphoma entity -> options
    sites: dict[str, list[str]] = field(default_factory=dict)
    settings: dict[str, list[str]] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)
    stages: dict[str, list[str]] = field(default_factory=dict)
    biomarker_groups: dict[str, list[str]] = field(default_factory=dict)
    # Situations outside the pathways -> the immediate steps / referrals the plan offers.
    outside: dict[str, list[str]] = field(default_factory=dict)
    options: int = 0


def _values(condition: Mapping[str, Any]) -> list[Any]:
    value = condition.get("value")
    return list(value) if isinstance(value, list | tuple) else [value]


def _describe(condition: Mapping[str, Any]) -> str:
    fact = str(condition.get("fact", "")).removeprefix("derived.").removeprefix("biomarkers.")
    op = condition.get("op")
    value = condition.get("value")
    words = {
        "eq": "=",
        "ne": "≠",
        "in": "in",
        "not_in": "not in",
        "lt": "<",
        "le": "≤",
        "gt": ">",
        "ge": "≥",
        "contains_any": "names",
    }
    if op in ("is_true", "is_false", "present"):
        return f"{fact} {str(op).replace('_', ' ')}"
    shown = ", ".join(str(v) for v in value) if isinstance(value, list | tuple) else str(value)
    return f"{fact} {words.get(str(op), op)} {shown}"


def _variant_of_term(term: str, cancer: str) -> list[str]:
    """The variant situations a histology term of a condition names (by the same patterns the
    reader uses)."""
    specs = catalogue()
    found = []
    for concept in situation_dictionary().concepts:
        spec = specs.get(_situation_of(concept.id))
        if spec is None or spec.kind != "histology_variant":
            continue
        if spec.cancers and cancer not in spec.cancers:
            continue
        if any(re.search(p, term, re.IGNORECASE) for p in concept.patterns):
            found.append(spec.id)
    return found


def _situation_of(concept_id: str) -> str:
    # Concept ids are their situation's id (situations.yaml keeps them equal).
    return concept_id


def _line_label(condition: Mapping[str, Any]) -> str:
    op, value = condition.get("op"), condition.get("value")
    if op == "eq":
        return f"line {value}"
    if op == "ge":
        return f"line {value} or later"
    if op == "le":
        return f"line {value} or earlier"
    return _describe(condition)


def coverage_map(units: Iterable[UnitRef]) -> dict[str, CancerCoverage]:
    """Per cancer, what its therapy options model (and which situations only have immediate
    steps). Options of "any" cancer count for every cancer."""
    units = list(units)
    maps = {cancer: CancerCoverage(cancer=cancer) for cancer in CANCERS}
    for unit in units:
        cancers = CANCERS if unit.cancer_type == "any" else (unit.cancer_type,)
        for cancer in cancers:
            if cancer not in maps:
                continue
            coverage = maps[cancer]
            if unit.is_situation_step:
                for condition in unit.conditions:
                    if condition.get("fact") == "derived.situations":
                        for value in _values(condition):
                            coverage.outside.setdefault(str(value), []).append(unit.key)
                continue
            if not unit.is_option:
                continue
            coverage.options += 1
            _add_option(coverage, unit)
    return maps


def _add_option(coverage: CancerCoverage, unit: UnitRef) -> None:
    cancer = coverage.cancer
    key = unit.key
    histology_condition = False
    for condition in unit.conditions:
        fact = str(condition.get("fact", ""))
        if fact == "derived.situations":
            histology_condition = True
            for value in _values(condition):
                coverage.situations.setdefault(str(value), []).append(key)
        elif fact == "derived.lymphoma_entity" and condition.get("op") in ("eq", "in"):
            histology_condition = True
            for value in _values(condition):
                coverage.entities.setdefault(str(value), []).append(key)
        elif fact in _HISTOLOGY_FACTS and condition.get("op") == "contains_any":
            histology_condition = True
            for term in _values(condition):
                if cancer == "lymphoma":
                    entity = classify_lymphoma(str(term))
                    if entity != "other":
                        coverage.entities.setdefault(entity, []).append(key)
                    continue
                for variant in _variant_of_term(str(term), cancer):
                    coverage.situations.setdefault(variant, []).append(key)
                coverage.histologies.setdefault(f"named: {term}", []).append(key)
        elif fact == "derived.line":
            coverage.lines.setdefault(_line_label(condition), []).append(key)
        elif fact in _SETTING_FACTS:
            label = _describe(condition) if fact == "diagnosis.setting" else _SETTING_FACTS[fact]
            coverage.settings.setdefault(label, []).append(key)
        elif fact in _STAGE_FACTS:
            coverage.stages.setdefault(_describe(condition), []).append(key)
        elif fact in _SITE_FACTS:
            coverage.sites.setdefault(_SITE_FACTS[fact], []).append(key)
        elif fact.startswith(_BIOMARKER_PREFIXES):
            coverage.biomarker_groups.setdefault(_describe(condition), []).append(key)
    if not histology_condition and cancer in COMMON_HISTOLOGY:
        coverage.histologies.setdefault(COMMON_HISTOLOGY[cancer], []).append(key)
    if not any(
        str(c.get("fact")) in ("derived.line", "diagnosis.setting") for c in unit.conditions
    ):
        coverage.settings.setdefault("any setting (no setting condition)", []).append(key)


def is_covered(situation: Situation, coverage: CancerCoverage | None) -> bool:
    """Whether the knowledge base has a therapy option for this situation. Fails closed: a
    cancer without a map covers nothing."""
    if coverage is None or coverage.options == 0:
        return False
    if situation.id.startswith("lymphoma_entity:"):
        return situation.id.removeprefix("lymphoma_entity:") in coverage.entities
    return situation.id in coverage.situations


def uncovered(situations: Sequence[Situation], coverage: CancerCoverage | None) -> list[Situation]:
    return [s for s in situations if not is_covered(s, coverage)]


def unit_refs(rows: Iterable[tuple[str, str, str, Mapping[str, Any]]]) -> list[UnitRef]:
    return [
        UnitRef(key=k, cancer_type=c, kind=kind, content=content) for k, c, kind, content in rows
    ]


# --- the document ------------------------------------------------------------------------------

_CANCER_TITLES: Final = {
    "hcc": "Hepatocellular carcinoma",
    "lung_adenocarcinoma": "Lung adenocarcinoma (non-squamous NSCLC)",
    "breast": "Breast cancer",
    "lymphoma": "Lymphoma",
}


@dataclass(frozen=True)
class Row:
    entry: str
    units: tuple[str, ...]
    kind: str = ""


@dataclass(frozen=True)
class Table:
    title: str
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class CancerTables:
    """One cancer's map as tables: what has a pathway, and what is outside (with the units
    that give its immediate steps)."""

    cancer: str
    title: str
    options: int
    tables: tuple[Table, ...]
    outside: tuple[Row, ...]


def _rows(entries: Mapping[str, list[str]]) -> tuple[Row, ...]:
    return tuple(
        Row(entry=entry, units=tuple(dict.fromkeys(entries[entry]))) for entry in sorted(entries)
    )


def coverage_tables(maps: Mapping[str, CancerCoverage]) -> list[CancerTables]:
    """The map in the order a curator reads it (the page and docs/coverage.md)."""
    specs = catalogue()
    result = []
    for cancer in CANCERS:
        coverage = maps[cancer]
        histologies = dict(coverage.histologies)
        if cancer == "lymphoma":
            histologies = {
                f"{entity_label(e)} ({e})": keys for e, keys in coverage.entities.items()
            }
        situations = {
            f"{specs[s].label} ({s})" if s in specs else s: keys
            for s, keys in coverage.situations.items()
        }
        tables = (
            Table("Histologies and variants with a pathway", _rows(histologies)),
            Table("Special situations with a pathway", _rows(situations)),
            Table("Disease sites", _rows(coverage.sites)),
            Table("Settings", _rows(coverage.settings)),
            Table("Lines of therapy", _rows(coverage.lines)),
            Table("Stages", _rows(coverage.stages)),
            Table("Biomarker-defined groups", _rows(coverage.biomarker_groups)),
        )
        outside = [
            Row(
                entry=f"{spec.label} ({spec.id})",
                units=tuple(dict.fromkeys(coverage.outside.get(spec.id, []))),
                kind=spec.kind.replace("_", " "),
            )
            for spec in specs.values()
            if (not spec.cancers or cancer in spec.cancers)
            and spec.id not in coverage.situations
            and spec.id != "lymphoma_entity"
        ]
        if cancer == "lymphoma":
            outside += [
                Row(
                    entry=f"{entity_label(e)} (lymphoma_entity:{e})",
                    units=tuple(dict.fromkeys(coverage.outside.get(f"lymphoma_entity:{e}", []))),
                    kind="histology variant",
                )
                for e in ENTITY_LABELS
                if e not in coverage.entities
            ]
        result.append(
            CancerTables(
                cancer=cancer,
                title=_CANCER_TITLES[cancer],
                options=coverage.options,
                tables=tables,
                outside=tuple(outside),
            )
        )
    return result


def _keys(keys: Sequence[str], limit: int = 4) -> str:
    unique = list(dict.fromkeys(keys))
    shown = ", ".join(f"`{k}`" for k in unique[:limit])
    return shown + (f" and {len(unique) - limit} more" if len(unique) > limit else "")


def render_markdown(maps: Mapping[str, CancerCoverage]) -> list[str]:
    """docs/coverage.md, as lines (deterministic: the test compares it with the committed
    file)."""
    lines = [
        "# Coverage map of the knowledge base",
        "",
        "Generated by `python manage.py coverage_map` from the seed knowledge base "
        "(`knowledge/seed/*.yaml`) with `clinical/coverage.py`; do not edit by hand "
        "(`tests/knowledge/unit/test_coverage_map.py` fails when it is stale). Curators see "
        "the same map of the published knowledge base at `/kb/coverage/`.",
        "",
        "A situation is **covered** when a therapy option of the knowledge base is written for "
        "it. A case in a situation that is not covered gets a plan that **abstains** "
        '(`recommendation.intent` = `"abstain"`): it says first what was recognised, gives the '
        "immediate safe steps and the board's questions from the units listed under "
        '"Outside the pathways", and names the nearest standard pathway as not recommended.',
        "",
    ]
    for cancer in coverage_tables(maps):
        lines += [
            f"## {cancer.title} (`{cancer.cancer}`)",
            "",
            f"{cancer.options} therapy options.",
            "",
        ]
        for table in cancer.tables:
            lines += [f"### {table.title}", ""]
            if not table.rows:
                lines += ["None modelled.", ""]
                continue
            lines += ["| entry | options | units |", "|---|---|---|"]
            lines += [f"| {r.entry} | {len(r.units)} | {_keys(r.units)} |" for r in table.rows]
            lines.append("")
        lines += [
            "### Outside the pathways: the plan abstains",
            "",
            "| situation | kind | immediate steps and referral |",
            "|---|---|---|",
        ]
        for row in cancer.outside:
            steps = _keys(row.units) if row.units else "none: the board is told and decides"
            lines.append(f"| {row.entry} | {row.kind} | {steps} |")
        lines.append("")
    return lines
