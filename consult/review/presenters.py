"""A plan as an MDT recommendation, for the page and the PDF: the question and its answer
first, the pathway in order, alternatives with when, what was ruled out and why, each item's
evidence (linked) and the facts that made it apply, every gate with its result in words,
monitoring by phase in time order, and clinical labels wherever the plan has field names.

Gates are rendered from whatever keys the plan gives them: keys beyond the known ones are
shown too, so a gate that gains a field is never silently cut."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from clinical.vocab import (
    GATE_STATUS_LABELS,
    MODALITY_LABELS,
    PHASE_LABELS,
    RELEVANT_STAGING,
)
from consult.casefile.fields import get_field
from consult.engine.answer import plan_answer
from consult.engine.guideline import relevant_staging
from consult.labels import (
    GATE_EFFECT_WORDS,
    anchor_label,
    choice_labels,
    clinical_text,
    fact_label,
    fact_labels,
    fact_words,
    gate_status_label,
    staging_label,
)

__all__ = ["clinical_text", "plan_diff", "recommendation_view"]

# The order a reader sees gates in: failed first.
STATUS_ORDER = {status: n for n, status in enumerate(GATE_STATUS_LABELS)}
KNOWN_GATE_KEYS = {
    "gate",
    "status",
    "detail",
    "applies_to",
    "needs",
    "needs_facts",
    "unit",
    "label",
    "title",
    "effect",
    "action",
}
# Effects whose words the gate's detail usually says already.
_SAID_BY_DETAIL = {"clear": "does not apply", "needs_data": "cannot be checked"}
_NEED = re.compile(r"^(?P<fact>[a-z_]+\.[a-z0-9_]+)(?: \(for (?P<unit>[^)]+)\))?$")


@dataclass
class Link:
    label: str
    url: str


def fact_link(fact: str, *, dossier_id: int, derived: Mapping[str, Any]) -> Link:
    """Where to fill a missing fact in: the dossier section and field, or for a derived fact
    the first of its missing inputs."""
    label = fact_label(fact)
    path = fact
    if fact.startswith("derived."):
        result = derived.get(fact.removeprefix("derived."))
        missing = list(getattr(result, "inputs_missing", []) or [])
        path = missing[0] if missing else ""
    try:
        section = get_field(path).section if path else ""
    except KeyError:
        section = ""
    if not section:
        return Link(label, reverse("consult:dossier-detail", kwargs={"pk": dossier_id}))
    url = reverse("consult:dossier-edit", kwargs={"pk": dossier_id, "section": section})
    return Link(label, f"{url}#id_{path.replace('.', '__')}")


@dataclass
class EvidenceRef:
    unit_id: str  # for the link only; a clinician reads the title, source and anchor
    url: str
    source: str
    anchor: str
    grade: str
    version: str
    title: str = ""
    # The source as a citation opens with it, and the unit's paraphrase of it (when the
    # cited version is in the knowledge base).
    organisation: str = ""
    guideline: str = ""
    source_version: str = ""
    year: int | None = None
    source_url: str = ""
    paraphrase: str = ""

    @property
    def name(self) -> str:
        """What the evidence is called on the page: the unit's title, else its source."""
        return self.title or self.source or "Knowledge-base unit"

    @property
    def citation(self) -> str:
        """ "EASL, Clinical Practice Guidelines on HCC, 2025 (version 2025), §4.2": the source
        (organisation, guideline, version, section) a paraphrase opens with."""
        if not self.organisation:
            return ", ".join(p for p in (self.source, self.anchor) if p)
        edition = self.source_version
        if self.year and str(self.year) not in edition:
            edition = f"{edition} ({self.year})" if edition else str(self.year)
        parts = [self.organisation, self.guideline, edition, self.anchor]
        return ", ".join(p for p in parts if p)


@dataclass
class Item:
    role: str
    position: int | None
    modality: str
    description: str
    agents: list[str]
    dose_adjustments: list[str]
    conditions: list[str]
    when: str
    rationale: list[str]
    evidence: list[EvidenceRef]
    adjunct: bool
    # A pathway item that failed a gate and leads only because nothing safer is on offer:
    # the precondition it waits for.
    waits_for: str = ""


@dataclass
class Gate:
    name: str
    status: str
    status_label: str
    symbol: str
    detail: str
    applies_to: list[str]
    needs: list[Link]
    extra: list[tuple[str, str]]
    effect: str = ""
    action: str = ""
    # The rule does not concern this patient (checked, and it does not apply).
    not_applicable: bool = False


@dataclass
class MonitoringPhase:
    key: str
    label: str
    rows: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Recommendation:
    question: str
    answer: str
    intent: str
    abstain: bool
    pathway: list[Item]
    alternatives: list[Item]
    rejected: list[dict[str, str]]
    staging: list[tuple[str, Any]]
    gates: list[Gate]
    flags: list[dict[str, str]]
    monitoring: list[MonitoringPhase]
    conflicts: list[dict[str, str]]
    needs: list[tuple[Link, str]]
    confidence: Any
    evidence: list[EvidenceRef]
    engine: str
    rounds: Any
    # An LLM consultation's account (the plan's "llm" block): how many turns the guideline
    # engine answered and why, and the tokens spent ({} for the guideline engine).
    llm: dict[str, Any] = field(default_factory=dict)

    @property
    def fallback_note(self) -> str:
        """ "20 of 57 turns answered by the guideline engine: token budget reached", or ""."""
        return str(self.llm.get("note") or "")

    # The answer first: at most three sentences in the question's own terms.
    sentences: list[str] = field(default_factory=list)

    @property
    def gates_to_read(self) -> list[Gate]:
        """What failed or could not be checked: shown in full."""
        return [g for g in self.gates if g.status != "pass"]

    @property
    def gates_passed(self) -> list[Gate]:
        """Rules that applied to this patient and passed: one collapsed line."""
        return [g for g in self.gates if g.status == "pass" and not g.not_applicable]

    @property
    def gates_not_applicable(self) -> list[Gate]:
        """Rules that do not apply to this patient: behind a toggle."""
        return [g for g in self.gates if g.status == "pass" and g.not_applicable]

    @property
    def monitoring_rows(self) -> list[tuple[MonitoringPhase, int, dict[str, str]]]:
        """The monitoring table: (phase, rows of the phase for its first row else 0, row)."""
        out = []
        for phase in self.monitoring:
            for n, row in enumerate(phase.rows):
                out.append((phase, len(phase.rows) if n == 0 else 0, row))
        return out

    @property
    def gate_summary(self) -> str:
        """ "2 failed, 5 not checked, 1 passed", in that order, for the report's cover."""
        counts: dict[str, int] = dict.fromkeys(GATE_STATUS_LABELS, 0)
        for gate in self.gates:
            counts[gate.status] = counts.get(gate.status, 0) + 1
        return ", ".join(f"{n} {gate_status_label(s)[0].lower()}" for s, n in counts.items() if n)


def _evidence(
    doc: Mapping[str, Any],
    version_ids: Mapping[str, int],
    titles: Mapping[str, str],
    details: Mapping[str, Any],
) -> dict[str, EvidenceRef]:
    refs = {}
    for e in doc.get("evidence") or []:
        unit_id = str(e.get("unit_id") or "")
        pk = version_ids.get(unit_id)
        cited = details.get(unit_id)
        refs[unit_id] = EvidenceRef(
            unit_id=unit_id,
            url=reverse("knowledge:evidence", kwargs={"version_id": pk}) if pk else "",
            source=str(e.get("source") or ""),
            anchor=str(e.get("anchor") or ""),
            grade=str(e.get("grade") or ""),
            version=str(e.get("version") or ""),
            title=str(titles.get(unit_id) or getattr(cited, "title", "") or ""),
            organisation=str(getattr(cited, "organisation", "") or ""),
            guideline=str(getattr(cited, "guideline", "") or ""),
            source_version=str(getattr(cited, "source_version", "") or ""),
            year=getattr(cited, "year", None),
            source_url=str(getattr(cited, "url", "") or ""),
            paraphrase=clinical_text(getattr(cited, "text", "") or ""),
        )
    return refs


def _item(c: Mapping[str, Any], evidence: Mapping[str, EvidenceRef]) -> Item:
    cited = []
    for unit_id in c.get("evidence") or []:
        cited.append(evidence.get(unit_id) or EvidenceRef(unit_id, "", "", "", "", "", ""))
    role = str(c.get("role") or "primary")
    modality = str(c.get("modality") or "")
    return Item(
        role=role,
        position=c.get("order") if role == "primary" else c.get("rank"),
        modality=MODALITY_LABELS.get(modality, modality.capitalize()),
        description=str(c.get("description") or ""),
        agents=[str(a) for a in c.get("agents") or []],
        dose_adjustments=[clinical_text(d) for d in c.get("dose_adjustments") or []],
        conditions=[clinical_text(d) for d in c.get("conditions") or []],
        when=clinical_text(c.get("when") or ""),
        rationale=[fact_words(r) for r in c.get("rationale") or []],
        evidence=cited,
        adjunct=bool(c.get("adjunct")),
        waits_for=clinical_text(c.get("waits_for") or ""),
    )


def _staging_keys(doc: Mapping[str, Any], case: Mapping[str, Any] | None) -> tuple[str, ...]:
    if case:
        keys = relevant_staging(case)
        if keys:
            return keys
    staging = doc.get("staging") or {}
    for keys in RELEVANT_STAGING.values():
        if any(staging.get(k) is not None for k in keys if k != "tnm_stage"):
            return keys
    return tuple(k for k, v in staging.items() if v is not None)


def _answer(summary: str, question: str) -> str:
    # The engine's summary restates the question first; the page shows it just above.
    if question and summary.startswith(question):
        return summary[len(question) :].strip()
    return summary


# "cannot be checked for systemic": the engine names a plan item by its modality key.
_FOR_MODALITY = re.compile(r"\b(for|before|of) (" + "|".join(MODALITY_LABELS) + r")\b(?! therapy)")


def _modality_words(text: str) -> str:
    return _FOR_MODALITY.sub(lambda m: f"{m[1]} {MODALITY_LABELS[m[2]].lower()}", text)


def gate_title(raw: Mapping[str, Any]) -> tuple[str, str]:
    """A gate's clinical name and the rest of its detail. The gate's own label if it has one;
    else the rule's title, which the engine writes before the detail's first colon; the
    internal key (made readable) only as a last resort."""
    detail = clinical_text(raw.get("detail") or "")
    own = raw.get("label") or raw.get("title")
    if own:
        return clinical_text(own), detail
    head, colon, rest = detail.partition(": ")
    if colon and 0 < len(head) <= 160 and rest.strip():
        return head, rest.strip()
    return staging_label(str(raw.get("gate") or "")), detail


def _gate(raw: Mapping[str, Any], *, dossier_id: int, derived: Mapping[str, Any]) -> Gate:
    status = str(raw.get("status") or "unknown")
    label, symbol = gate_status_label(status)
    # The fields to fill in, linked to the dossier; a plan recorded before gates named their
    # fields lists the data in words only.
    facts = [str(n) for n in raw.get("needs_facts") or []]
    if facts:
        needs = [fact_link(f, dossier_id=dossier_id, derived=derived) for f in facts]
    else:
        needs = [
            fact_link(str(n), dossier_id=dossier_id, derived=derived)
            if _NEED.match(str(n))
            else Link(clinical_text(n), "")
            for n in raw.get("needs") or []
        ]
    needs = list({n.label: n for n in needs}.values())
    extra = []
    for key, value in raw.items():
        if key in KNOWN_GATE_KEYS or value in (None, "", [], {}):
            continue
        shown = "; ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        extra.append((staging_label(key), clinical_text(shown)))
    name, detail = gate_title(raw)
    detail = _modality_words(detail)
    effect = str(raw.get("effect") or "")
    words = GATE_EFFECT_WORDS.get(effect, clinical_text(effect))
    if effect in _SAID_BY_DETAIL and _SAID_BY_DETAIL[effect] in detail.lower():
        words = ""  # the engine's detail says it already; once is enough on a phone
    action = clinical_text(raw.get("action") or "")
    return Gate(
        name=name,
        status=status,
        status_label=label,
        symbol=symbol,
        detail=detail,
        applies_to=[str(a) for a in raw.get("applies_to") or []],
        needs=needs,
        extra=extra,
        effect=words,
        # The action is often the detail itself; say it once.
        action=action if action and action not in detail else "",
        not_applicable=effect == "clear",
    )


def recommendation_view(
    doc: Mapping[str, Any],
    *,
    case: Mapping[str, Any] | None,
    dossier_id: int,
    derived: Mapping[str, Any],
    version_ids: Mapping[str, int],
    titles: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
) -> Recommendation:
    """``details``: unit id -> the cited version with its source
    (``selectors.evidence_details``), for citations that open with their source."""
    recommendation = doc.get("recommendation") or {}
    evidence = _evidence(doc, version_ids, titles or {}, details or {})
    components = recommendation.get("components") or []
    pathway = sorted(
        (_item(c, evidence) for c in components if (c.get("role") or "primary") == "primary"),
        key=lambda i: i.position if isinstance(i.position, int) else 99,
    )
    alternatives = sorted(
        (_item(c, evidence) for c in components if c.get("role") == "alternative"),
        key=lambda i: i.position if isinstance(i.position, int) else 99,
    )
    safety = doc.get("safety") or {}
    gates = sorted(
        (_gate(g, dossier_id=dossier_id, derived=derived) for g in safety.get("gates") or []),
        key=lambda g: STATUS_ORDER.get(g.status, 1),
    )
    phases = {key: MonitoringPhase(key, label) for key, label in PHASE_LABELS.items()}
    for m in doc.get("monitoring") or []:
        phase = phases.get(str(m.get("phase")))
        if phase is None:
            continue
        anchor = str(m.get("anchor") or "")
        phase.rows.append(
            {
                "what": clinical_text(m.get("what")),
                "interval": clinical_text(m.get("interval")),
                "anchor": anchor_label(anchor),
            }
        )
    gate_titles = {
        str(g.get("unit")): str(g.get("detail") or "").split(":")[0]
        for g in safety.get("gates") or []
        if g.get("unit")
    }
    # Each missing fact once, with every rule that waits for it.
    wanted: dict[str, tuple[Link, list[str]]] = {}
    for item in doc.get("needs_data") or []:
        match = _NEED.match(str(item))
        if match is None:
            link, why = Link(clinical_text(item), ""), ""
        else:
            link = fact_link(match["fact"], dossier_id=dossier_id, derived=derived)
            why = clinical_text(gate_titles.get(match["unit"] or "", ""))
        _, reasons = wanted.setdefault(link.label, (link, []))
        if why and why not in reasons:
            reasons.append(why)
    needs = [(link, "; ".join(reasons)) for link, reasons in wanted.values()]
    question = str(recommendation.get("question") or (case or {}).get("question") or "")
    staging = doc.get("staging") or {}
    answer = plan_answer(doc, question=question, labels=fact_labels(), values=choice_labels())
    return Recommendation(
        question=question,
        answer=clinical_text(_answer(str(recommendation.get("summary") or ""), question)),
        intent=str(recommendation.get("intent") or ""),
        abstain=bool(doc.get("abstain")),
        pathway=pathway,
        alternatives=alternatives,
        rejected=[
            {"option": str(r.get("option") or ""), "reason": clinical_text(r.get("reason"))}
            for r in doc.get("rejected_options") or []
        ],
        staging=[(staging_label(k), staging.get(k)) for k in _staging_keys(doc, case)],
        gates=gates,
        flags=[
            {"severity": str(f.get("severity") or ""), "text": clinical_text(f.get("text"))}
            for f in safety.get("flags") or []
        ],
        monitoring=list(phases.values()),
        conflicts=[
            {
                "between": " and ".join(str(b).capitalize() for b in c.get("between") or []),
                "kind": str(c.get("kind") or ""),
                "resolution": clinical_text(c.get("resolution")),
            }
            for c in doc.get("conflicts") or []
        ],
        needs=needs,
        confidence=doc.get("confidence"),
        evidence=list(evidence.values()),
        engine=str(doc.get("engine") or ""),
        rounds=doc.get("rounds"),
        llm=dict(doc.get("llm") or {}),
        sentences=[clinical_text(s) for s in answer.sentences],
    )


# --- versions ------------------------------------------------------------------------------------
def plan_lines(doc: Mapping[str, Any]) -> list[str]:
    """The parts of a plan an amendment changes, one line per fact, for a readable diff."""
    recommendation = doc.get("recommendation") or {}
    lines = [f"Intent: {recommendation.get('intent') or '—'}"]
    components = recommendation.get("components") or []
    for role, key in (("primary", "order"), ("alternative", "rank")):
        chosen = [c for c in components if (c.get("role") or "primary") == role]
        chosen.sort(key=lambda c: c.get(key) or 99)
        for c in chosen:
            head = f"{role.capitalize()} {c.get(key) or ''}".strip()
            lines.append(f"{head}: [{c.get('modality')}] {c.get('description')}")
            if c.get("agents"):
                lines.append(f"{head} drugs: {', '.join(c['agents'])}")
            if c.get("dose_adjustments"):
                lines.append(f"{head} dose: {'; '.join(c['dose_adjustments'])}")
            if c.get("when"):
                lines.append(f"{head} when: {c['when']}")
            if c.get("conditions"):
                lines.append(f"{head} before starting: {'; '.join(c['conditions'])}")
    for r in doc.get("rejected_options") or []:
        lines.append(f"Ruled out: {r.get('option')} ({r.get('reason')})")
    for m in doc.get("monitoring") or []:
        phase = PHASE_LABELS.get(str(m.get("phase")), str(m.get("phase")))
        interval = f", {m['interval']}" if m.get("interval") else ""
        lines.append(f"Follow-up, {phase}: {m.get('what')}{interval}")
    return lines


def plan_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, str]]:
    """("+"|"-"|" ", line) pairs from the older version to the newer."""
    out: list[tuple[str, str]] = []
    for line in difflib.ndiff(plan_lines(old), plan_lines(new)):
        tag = line[:1]
        if tag in "+- ":
            out.append((tag, line[2:]))
    return out
