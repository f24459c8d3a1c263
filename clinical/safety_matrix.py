"""The drug-safety matrix (issue 21 item 2): for every drug the knowledge base can put in a
plan, its critical contraindications and preconditions, the dossier fields and text concepts
that settle each, what the plan does while it is unknown, and the seed rules that enforce it.

The matrix is data (``clinical/safety_matrix.yaml``); this module reads it, checks it against
a knowledge-base bundle and the text reader's concept dictionary, measures its coverage and
renders ``docs/safety-matrix.md``. Pure Python: no Django, the bundle is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Final, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from clinical.rules import Bundle, Condition, SafetyAction, TherapyAction, UnitSpec
from clinical.text.concepts import dictionary
from clinical.vocab import SafetyEffect, Severity

MATRIX_PATH: Final = Path(__file__).with_name("safety_matrix.yaml")

Handling = Literal["step_before", "alternative", "flag"]

HANDLING_TEXT: Final[Mapping[str, str]] = {
    "step_before": "step before the drug",
    "alternative": "next safe option leads",
    "flag": "reported unknown",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Precondition(_Strict):
    family: str
    title: Annotated[str, Field(min_length=3)]
    fields: tuple[str, ...]
    concepts: tuple[str, ...] = ()
    unknown: Handling
    step: Annotated[str, Field(min_length=3)]


class Row(_Strict):
    drugs: tuple[str, ...] = Field(min_length=1)
    precondition: str
    requirement: Annotated[str, Field(min_length=3)]
    source: Annotated[str, Field(min_length=10)]
    rules: tuple[str, ...] = ()
    # Rules that ask for the test or step itself ("DPD testing before capecitabine", "endoscopy
    # before bevacizumab"): they name the drug but read none of the row's fields.
    instructions: tuple[str, ...] = ()
    unknown: Handling | None = None


class Exempt(_Strict):
    drug: str
    reason: Annotated[str, Field(min_length=10)]


class Matrix(_Strict):
    families: Mapping[str, str]
    preconditions: Mapping[str, Precondition]
    rows: tuple[Row, ...]
    exempt: tuple[Exempt, ...] = ()

    @model_validator(mode="after")
    def _references_hold(self) -> Matrix:
        for key, pre in self.preconditions.items():
            if pre.family not in self.families:
                raise ValueError(f"precondition {key}: unknown family {pre.family!r}")
        for row in self.rows:
            if row.precondition not in self.preconditions:
                raise ValueError(f"row {row.drugs}: unknown precondition {row.precondition!r}")
        return self

    def handling(self, row: Row) -> Handling:
        return row.unknown or self.preconditions[row.precondition].unknown


@cache
def load_matrix(path: Path = MATRIX_PATH) -> Matrix:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return Matrix.model_validate(raw)


def _norm(name: str) -> str:
    return " ".join(name.casefold().replace("-", " ").split())


def names_drug(rule_agent: str, drug: str) -> bool:
    """Whether a rule's agent names the drug, the way the safety gate matches a plan item's
    agent (one name inside the other: "high-dose methotrexate" names methotrexate)."""
    a, d = _norm(rule_agent), _norm(drug)
    return a == d or f" {a} " in f" {d} " or f" {d} " in f" {a} "


def seed_drugs(bundle: Bundle) -> list[str]:
    """Every drug the knowledge base can put in a plan: the agents of its therapy steps."""
    found: dict[str, None] = {}
    for unit in bundle.units:
        if isinstance(unit.action, TherapyAction):
            for agent in unit.action.agents:
                found.setdefault(agent.casefold(), None)
    return sorted(found)


def _facts(unit: UnitSpec) -> set[str]:
    return {c.fact for c in (*unit.context.all, *unit.context.any)}


def _fail_closed(conditions: Iterable[Condition]) -> bool:
    """Whether a missing fact leaves the rule unknown (no ``present`` guard)."""
    return all(c.op != "present" for c in conditions)


@dataclass(frozen=True)
class Entry:
    """One drug x precondition of the matrix, with the rules that name that drug."""

    family: str
    drug: str
    precondition: str
    title: str
    requirement: str
    fields: tuple[str, ...]
    concepts: tuple[str, ...]
    unknown: Handling
    step: str
    rules: tuple[str, ...]
    source: str


@dataclass
class Coverage:
    drugs: list[str]
    covered: list[str]
    exempt: list[str]
    entries: list[Entry]
    problems: list[str] = field(default_factory=list)

    @property
    def missing_drugs(self) -> list[str]:
        done = set(self.covered) | set(self.exempt)
        return [d for d in self.drugs if d not in done]

    @property
    def entries_with_rules(self) -> int:
        return sum(1 for e in self.entries if e.rules)

    def summary(self) -> list[str]:
        drugs_ok = len(self.covered) + len(self.exempt)
        families = sorted({e.family for e in self.entries})
        return [
            f"Drug-safety matrix: {drugs_ok}/{len(self.drugs)} seed drugs covered "
            f"({len(self.covered)} with rows, {len(self.exempt)} exempt with a reason); "
            f"{self.entries_with_rules}/{len(self.entries)} drug x precondition rows with a "
            f"rule; {len(families)} families",
            *(f"  missing drug: {d}" for d in self.missing_drugs),
            *(f"  problem: {p}" for p in self.problems),
        ]


def _safety_units(bundle: Bundle) -> dict[str, UnitSpec]:
    return {u.key: u for u in bundle.units if isinstance(u.action, SafetyAction)}


def _row_problems(
    matrix: Matrix, row: Row, rules: Mapping[str, UnitSpec], concept_ids: set[str]
) -> list[str]:
    pre = matrix.preconditions[row.precondition]
    where = f"{row.precondition} x {', '.join(row.drugs)}"
    problems: list[str] = []
    problems += [f"{where}: unknown concept {c!r}" for c in pre.concepts if c not in concept_ids]
    if not row.rules:
        problems.append(f"{where}: no rule")
    for key in (*row.rules, *row.instructions):
        unit = rules.get(key)
        if unit is None:
            problems.append(f"{where}: rule {key} is not a safety rule of the seed")
            continue
        action = unit.action
        if not isinstance(action, SafetyAction):  # _safety_units keeps safety rules only
            continue
        if not any(names_drug(a, d) for a in action.agents for d in row.drugs):
            problems.append(f"{where}: rule {key} names none of the row's drugs")
        facts = _facts(unit)
        if key in row.rules and facts and not facts & set(pre.fields):
            problems.append(f"{where}: rule {key} reads {sorted(facts)}, none of the row's fields")
    return problems


def _handling_problems(matrix: Matrix, row: Row, rules: Mapping[str, UnitSpec]) -> list[str]:
    """A row whose unknown state puts a step before the drug needs a critical rule that stays
    unknown while the fact is missing (or a critical instruction with no condition): that is
    what makes the safety gate ask for the confirmation before the drug."""
    if matrix.handling(row) == "flag":
        return []
    pre = matrix.preconditions[row.precondition]
    problems = []
    for drug in row.drugs:
        ok = False
        for key in (*row.rules, *row.instructions):
            unit = rules.get(key)
            if unit is None:
                continue
            action = unit.action
            if not isinstance(action, SafetyAction):
                continue
            conditions = (*unit.context.all, *unit.context.any)
            if key in row.instructions:
                conditions = ()
            if (
                action.severity is Severity.CRITICAL
                and action.effect in (SafetyEffect.REMOVE, SafetyEffect.CONDITION)
                and any(names_drug(a, drug) for a in action.agents)
                and (
                    not conditions or (_facts(unit) & set(pre.fields) and _fail_closed(conditions))
                )
            ):
                ok = True
        if not ok:
            problems.append(
                f"{row.precondition} x {drug}: '{matrix.handling(row)}' when unknown, but no "
                "critical rule naming it stays unknown while the fact is missing"
            )
    return problems


def coverage(bundle: Bundle, matrix: Matrix | None = None) -> Coverage:
    """Every seed drug against the matrix: which have rows, which are exempt, and what in the
    matrix does not hold against the seed (a rule missing, not naming the drug, not reading
    the row's fields; an unknown concept)."""
    matrix = matrix or load_matrix()
    rules = _safety_units(bundle)
    concept_ids = {c.id for c in dictionary().concepts}
    drugs = seed_drugs(bundle)
    entries: list[Entry] = []
    problems: list[str] = []
    covered: set[str] = set()
    for row in matrix.rows:
        problems += _row_problems(matrix, row, rules, concept_ids)
        problems += _handling_problems(matrix, row, rules)
        pre = matrix.preconditions[row.precondition]
        for drug in row.drugs:
            covered.add(drug.casefold())
            naming = tuple(
                key
                for key in (*row.rules, *row.instructions)
                if key in rules and any(names_drug(a, drug) for a in rules[key].action.agents)  # type: ignore[union-attr]
            )
            if not naming:
                problems.append(f"{row.precondition} x {drug}: none of the row's rules names it")
            entries.append(
                Entry(
                    family=pre.family,
                    drug=drug.casefold(),
                    precondition=row.precondition,
                    title=pre.title,
                    requirement=row.requirement,
                    fields=pre.fields,
                    concepts=pre.concepts,
                    unknown=matrix.handling(row),
                    step=pre.step,
                    rules=naming,
                    source=row.source,
                )
            )
    exempt = sorted({e.drug.casefold() for e in matrix.exempt})
    return Coverage(
        drugs=drugs,
        covered=sorted(d for d in covered if d in drugs),
        exempt=[d for d in exempt if d not in covered],
        entries=entries,
        problems=problems,
    )


def _cell(items: Sequence[str]) -> str:
    return ", ".join(f"`{i}`" for i in items) if items else "-"


def render_markdown(bundle: Bundle, matrix: Matrix | None = None) -> str:
    """``docs/safety-matrix.md``: every drug x precondition with its fields, concepts,
    handling when unknown and rules, drug by drug; generated, never edited by hand."""
    matrix = matrix or load_matrix()
    result = coverage(bundle, matrix)
    lines = [
        "# Drug-safety matrix",
        "",
        "<!-- Generated by `manage.py safety_matrix` from clinical/safety_matrix.yaml and the"
        " seed (knowledge/seed/*.yaml). Do not edit by hand:"
        " tests/clinical/unit/test_safety_matrix.py fails when this file is stale. -->",
        "",
        "DEMONSTRATION CONTENT - NOT FOR CLINICAL USE: sources are paraphrased and must be checked"
        " by oncology pharmacy against the current labels.",
        "",
        "For every drug the knowledge base can put in a plan: its critical contraindications and"
        " preconditions; the dossier fields that settle each (a `derived.` fact is computed from"
        " them) and the text-reader concepts (`clinical/text/concepts.yaml`) that find it in the"
        " notes; what the plan does while it is not recorded (*step before the drug*: the pathway"
        " gets a confirmation step first; *next safe option leads*: the drug waits as an"
        " alternative; *reported unknown*: the gate asks for it, nothing withheld); and the seed"
        " rules that enforce it.",
        "",
        *result.summary(),
        "",
        "## Families",
        "",
        "| family | drug x precondition rows | drugs |",
        "|---|---|---|",
    ]
    for family, title in matrix.families.items():
        rows = [e for e in result.entries if e.family == family]
        lines.append(f"| {title} | {len(rows)} | {len({e.drug for e in rows})} |")
    lines += ["", "## By drug", ""]
    by_drug: dict[str, list[Entry]] = {}
    for entry in result.entries:
        by_drug.setdefault(entry.drug, []).append(entry)
    for drug in sorted(by_drug):
        seed = "" if drug in result.drugs else " (not a seed therapy agent; named by the rules)"
        lines += [
            f"### {drug}{seed}",
            "",
            "| precondition | requirement | fields | text concepts | when unknown | rules"
            " | source |",
            "|---|---|---|---|---|---|---|",
        ]
        for e in by_drug[drug]:
            lines.append(
                f"| {e.title} | {e.requirement} | {_cell(e.fields)} | {_cell(e.concepts)} | "
                f"{HANDLING_TEXT[e.unknown]}: {e.step} | {_cell(e.rules)} | {e.source} |"
            )
        lines.append("")
    if matrix.exempt:
        lines += ["## Drugs without a critical precondition in the matrix", ""]
        lines += ["| drug | why |", "|---|---|"]
        lines += [f"| {e.drug} | {e.reason} |" for e in matrix.exempt]
        lines.append("")
    return "\n".join(lines)
