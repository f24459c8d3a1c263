"""Both plans of a packet in one neutral form: the same sections, in the same order, the same
way of writing, whoever wrote the plan, and nothing that names where it came from.

What is left out, for both plans alike: engine and model names, confidence, rounds,
conflicts, agent rationales, evidence citations and knowledge-base unit ids, staging (the
packet's case summary carries the case's staging), timestamps, hashes, gate names and
severities (a plan written by people rarely grades its own warnings), and the summary
paragraph (its content is in the sections; its style is the surest give-away). What remains
is clinical content, with internal identifiers rewritten as clinical words: a unit id in
brackets is dropped, a case-file path becomes its label ("organ_function.qtc_ms" → "QTc
(ms)"), a calculated value is written as its label and value, and a mention of an agent
("the Safety agent") becomes "the team". Text is returned as plain strings: the template
escapes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clinical.vocab import MODALITY_LABELS, PHASE_LABELS
from consult.labels import fact_label, fact_labels

INTENTS = {
    "curative": "Curative",
    "palliative": "Palliative",
    "surveillance": "Surveillance",
}
ROLE_WORDS = (
    "diagnostic",
    "treatment",
    "safety",
    "monitoring",
    "coordinator",
    "hepatology",
    "interventional radiology",
    "interventional_radiology",
    "surgery",
    "radiation oncology",
    "radiation_oncology",
    "pathology",
    "cardio-oncology",
    "cardio_oncology",
    "fertility",
    "pharmacy",
)
_SECTIONS = "patient|diagnosis|index_lesion|staging|biomarkers|labs|organ_function|derived|notes"
# "organ_function.qtc_ms", "derived.frailty": a case-file field or derived fact by its path.
_FIELD = re.compile(rf"\b(?:{_SECTIONS})\.[a-z0-9_]+\b")
# " (common.gate.carboplatin-calvert)": a knowledge-base unit cited in brackets.
# The patterns that begin with white space start only where a run of it starts, and a unit id
# only where a word starts: tried again from every position of a long run, they were quadratic
# (issue 26).
_UNIT_IN_BRACKETS = re.compile(r"(?<!\s)\s*\((?:[a-z][a-z0-9_-]*\.){2,}[a-z0-9_.-]*[a-z0-9_-]\)")
# "hcc.tx.resection": a bare unit id (three or more dotted lowercase parts).
_UNIT = re.compile(r"(?<![\w-])(?:[a-z][a-z0-9_-]*\.){2,}[a-z0-9_-]+\b")
# " [carboplatin auc5 mg: 670]": a value the safety gate calculated.
_CALCULATED = re.compile(r"(?<!\s)\s*\[([a-z0-9_ ]+): ([^\]]+)\]")
_AGENT = re.compile(
    r"\b(?:the\s+)?(?:" + "|".join(re.escape(w) for w in ROLE_WORDS) + r")\s+"
    r"(?:agent|member|role|seat|specialist)s?\b",
    re.IGNORECASE,
)
_UNCHECKED = re.compile(r":? cannot be checked for (?P<what>.+?); needs (?P<needs>.+)$")


def neutral_text(text: Any) -> str:
    """One piece of plan text with internal identifiers rewritten (see the module doc)."""
    if not isinstance(text, str):
        return ""
    out = _UNIT_IN_BRACKETS.sub("", text)
    out = _CALCULATED.sub(_calculated, out)
    out = _FIELD.sub(lambda m: fact_label(m.group(0)), out)
    out = _UNIT.sub("", out)
    out = _AGENT.sub("the team", out)
    return re.sub(r"\s{2,}", " ", out).strip()


def _calculated(match: re.Match[str]) -> str:
    key = "derived." + match.group(1).strip().replace(" ", "_")
    label = fact_labels().get(key) or match.group(1).strip()
    return f" ({label}: {match.group(2).strip()})"


@dataclass(frozen=True)
class BlindItem:
    title: str  # the modality, for treatment items
    text: str
    details: tuple[tuple[str, str], ...] = ()  # ("When", "..."), ("Dose", "...")


@dataclass(frozen=True)
class BlindPhase:
    label: str
    items: tuple[BlindItem, ...]


@dataclass(frozen=True)
class BlindPlan:
    intent: str
    pathway: tuple[BlindItem, ...]
    alternatives: tuple[BlindItem, ...]
    not_advised: tuple[BlindItem, ...]
    precautions: tuple[str, ...]
    follow_up: tuple[BlindPhase, ...]
    needed: tuple[str, ...]
    abstains: bool = False
    sections: tuple[str, ...] = field(
        default=(
            "Intent",
            "Recommended pathway",
            "Alternatives",
            "Not advised",
            "Precautions",
            "Follow-up",
            "Information still needed",
        )
    )


def _unique(items: list[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)


def _component(c: Mapping[str, Any], *, alternative: bool) -> BlindItem:
    modality = str(c.get("modality") or "")
    details: list[tuple[str, str]] = []
    if alternative and c.get("when"):
        details.append(("When", neutral_text(c.get("when"))))
    for dose in c.get("dose_adjustments") or []:
        details.append(("Dose", neutral_text(dose)))
    for condition in c.get("conditions") or []:
        details.append(("Before starting", neutral_text(condition)))
    return BlindItem(
        title=MODALITY_LABELS.get(modality, modality.capitalize()),
        text=neutral_text(c.get("description")),
        details=tuple(d for d in details if d[1]),
    )


def _gate_text(gate: Mapping[str, Any]) -> str:
    detail = str(gate.get("detail") or "")
    match = _UNCHECKED.search(detail)
    if match:
        needs = _unique([neutral_text(n) for n in match["needs"].split(", ")])
        detail = (
            detail[: match.start()]
            + f": not checked for {match['what']} ({', '.join(needs)} not available)"
        )
    return neutral_text(detail)


def _precautions(doc: Mapping[str, Any]) -> tuple[str, ...]:
    safety = doc.get("safety") or {}
    order = {"critical": 0, "major": 1, "minor": 2}
    flags = sorted(safety.get("flags") or [], key=lambda f: order.get(f.get("severity"), 3))
    notes = [neutral_text(f.get("text")) for f in flags]
    notes += [neutral_text(n) for n in safety.get("notes") or []]
    # A gate that failed or could not be checked says so unless a warning already did (the
    # engine writes a failed gate's rule as a warning too: "Name. Text" beside "Name: Text").
    said = [n.casefold() for n in notes]
    for status in ("fail", "unknown"):
        for gate in safety.get("gates") or []:
            if gate.get("status") != status:
                continue
            text = _gate_text(gate)
            name = text.split(":", 1)[0].casefold()
            if text and not any(s.startswith(name) for s in said):
                notes.append(text)
                said.append(text.casefold())
    return _unique(notes)


def _follow_up(doc: Mapping[str, Any]) -> tuple[BlindPhase, ...]:
    phases: dict[str, list[BlindItem]] = {key: [] for key in PHASE_LABELS}
    for item in doc.get("monitoring") or []:
        phase = item.get("phase")
        if phase not in phases:
            continue
        details = []
        if item.get("interval"):
            details.append(("Interval", neutral_text(item.get("interval"))))
        if item.get("anchor") and item.get("anchor") != "other":
            details.append(("Response criteria", str(item.get("anchor"))))
        phases[phase].append(BlindItem("", neutral_text(item.get("what")), tuple(details)))
    return tuple(
        BlindPhase(PHASE_LABELS[key], tuple(items)) for key, items in phases.items() if items
    )


def _needed(doc: Mapping[str, Any]) -> tuple[str, ...]:
    out = []
    for item in doc.get("needs_data") or []:
        text = str(item)
        # "labs.hbsag (for common.tx.x)": the engine's own bookkeeping of who asked.
        path = text.split(" (for ", 1)[0].strip()
        out.append(fact_label(path) if _FIELD.fullmatch(path) or path == "notes" else text)
    return _unique([neutral_text(t) for t in out])


def blind_plan(doc: Mapping[str, Any]) -> BlindPlan:
    """A ``mdtboard.plan/1`` document, system or comparator, as a rater reads it."""
    recommendation = doc.get("recommendation") or {}
    components = recommendation.get("components") or []
    pathway = sorted(
        (c for c in components if c.get("role", "primary") == "primary"),
        key=lambda c: c.get("order") or 99,
    )
    alternatives = sorted(
        (c for c in components if c.get("role") == "alternative"),
        key=lambda c: c.get("rank") or 99,
    )
    return BlindPlan(
        intent=INTENTS.get(str(recommendation.get("intent") or ""), "Not stated"),
        pathway=tuple(_component(c, alternative=False) for c in pathway),
        alternatives=tuple(_component(c, alternative=True) for c in alternatives),
        not_advised=tuple(
            BlindItem(neutral_text(r.get("option")), neutral_text(r.get("reason")))
            for r in doc.get("rejected_options") or []
        ),
        precautions=_precautions(doc),
        follow_up=_follow_up(doc),
        needed=_needed(doc),
        abstains=bool(doc.get("abstain")),
    )


def blind_plan_text(plan: BlindPlan, label: str) -> str:
    """The same plan as plain text, for the LLM rater (it sees what physicians see)."""
    lines = [f"PLAN {label}", f"Intent: {plan.intent}", "Recommended pathway:"]
    lines += [f"  {i}. {_item_line(item)}" for i, item in enumerate(plan.pathway, 1)] or ["  none"]
    lines.append("Alternatives:")
    lines += [f"  {i}. {_item_line(item)}" for i, item in enumerate(plan.alternatives, 1)] or [
        "  none"
    ]
    lines.append("Not advised:")
    lines += [f"  - {item.title}: {item.text}" for item in plan.not_advised] or ["  none"]
    lines.append("Precautions:")
    lines += [f"  - {note}" for note in plan.precautions] or ["  none"]
    lines.append("Follow-up:")
    for phase in plan.follow_up:
        lines.append(f"  {phase.label}:")
        lines += [f"    - {_item_line(item)}" for item in phase.items]
    if not plan.follow_up:
        lines.append("  none")
    lines.append("Information still needed:")
    lines += [f"  - {need}" for need in plan.needed] or ["  none"]
    return "\n".join(lines)


def _item_line(item: BlindItem) -> str:
    head = f"{item.title}: {item.text}" if item.title else item.text
    return head + "".join(f" [{k}: {v}]" for k, v in item.details)
