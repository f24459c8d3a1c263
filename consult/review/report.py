"""The PDF report's content: what a colleague takes into the meeting. Built from the saved
rows (dossier snapshot, plan versions, review, agent messages, evidence tree), rendered by a
Django template (which escapes every text, LLM output included) and WeasyPrint."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import timezone

from clinical import lexicon
from consult.labels import dose_fact_concerns, role_label, value_words
from consult.models import Consultation, EvidenceNode
from consult.presenters import NOT_AVAILABLE, case_sections
from consult.review.models import PlanReport
from consult.review.presenters import clinical_text, plan_diff, recommendation_view
from consult.review.selectors import (
    ReviewState,
    VersionView,
    consultation_evidence_nodes,
    consultation_messages,
    consultation_models,
    evidence_details,
    evidence_version_ids,
    review_state_get,
    unit_titles,
)
from consult.timeline import case_timeline

DISCLAIMER = (
    "mdtboard is decision support. This plan is a proposal for the multidisciplinary team; it "
    "is not an order. The treating clinicians remain responsible for every decision, and must "
    "check doses, contraindications and interactions before prescribing."
)


@dataclass
class TreeNode:
    node: EvidenceNode
    children: list[TreeNode] = field(default_factory=list)


def evidence_tree(*, consultation: Consultation) -> list[TreeNode]:
    nodes = {n.node_id: TreeNode(n) for n in consultation_evidence_nodes(consultation=consultation)}
    roots: list[TreeNode] = []
    for tree in nodes.values():
        parent = nodes.get(tree.node.parent_node_id)
        (parent.children if parent is not None else roots).append(tree)
    return roots


@dataclass
class TraceEntry:
    round: int
    role: str
    kind: str
    text: str
    cites: list[str]
    agree: bool | None = None
    same_as_round: int | None = None  # said word for word in that earlier round


def agent_trace(*, consultation: Consultation) -> list[TraceEntry]:
    """Who concluded what, in which round, citing what: one line per role's turn, review and
    vote, from the saved agent messages."""
    entries = []
    for m in consultation_messages(consultation=consultation):
        payload = m.payload or {}
        if m.kind == "report":
            report = payload.get("report") or {}
            cites = sorted(
                {ref for c in report.get("claims") or [] for ref in c.get("evidence") or []}
            )
            entries.append(
                TraceEntry(
                    m.round,
                    role_label(m.role),
                    "conclusion",
                    str(report.get("conclusion") or ""),
                    cites,
                )
            )
        elif m.kind == "review":
            review = payload.get("review") or {}
            target = role_label(str(payload.get("target") or ""))
            entries.append(
                TraceEntry(
                    m.round,
                    role_label(m.role),
                    f"review of {target}",
                    str(review.get("critique") or ""),
                    [],
                    bool(review.get("agree")),
                )
            )
        elif m.kind == "vote":
            vote = payload.get("vote") or {}
            text = str(vote.get("advice") or "") or ("agrees" if vote.get("agree") else "")
            concerns = "; ".join(str(c) for c in vote.get("concerns") or [])
            entries.append(
                TraceEntry(
                    m.round,
                    role_label(m.role),
                    "vote",
                    f"{text} {concerns}".strip(),
                    [],
                    bool(vote.get("agree")),
                )
            )
        elif m.kind == "synthesis":
            synthesis = payload.get("synthesis") or {}
            draft = synthesis.get("draft") or {}
            entries.append(
                TraceEntry(
                    m.round, "Coordinator", "draft plan", str(draft.get("summary") or ""), []
                )
            )
    titles = unit_titles(keys={c for entry in entries for c in entry.cites})
    said: dict[tuple[str, str, str, tuple[str, ...], bool | None], int] = {}
    for entry in entries:
        entry.text = clinical_text(entry.text)
        # The guideline units cited, by title: what the member relied on, in words.
        entry.cites = list(dict.fromkeys(titles.get(c, c) for c in entry.cites))
        # A member who repeats itself in a later round is shown as doing so, not reprinted.
        key = (entry.role, entry.kind, entry.text, tuple(entry.cites), entry.agree)
        if key in said:
            entry.same_as_round = said[key]
        else:
            said[key] = entry.round
    return entries


def final_dissent(*, consultation: Consultation) -> list[TraceEntry]:
    """The members who still disagreed in the last round's vote."""
    votes = [e for e in agent_trace(consultation=consultation) if e.kind == "vote"]
    if not votes:
        return []
    last = max(v.round for v in votes)
    return [v for v in votes if v.round == last and v.agree is False]


def _shown(value: Any) -> Any:
    """A derived list (medications by class, declined treatments) as words."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(str(value_words(v)) for v in value) or "none"
    return value_words(value)


# The facts a board reads on the cover, in this order, when the case records them.
KEY_FACT_PATHS = (
    "diagnosis.histology",
    "diagnosis.subtype",
    "diagnosis.setting",
    "patient.comorbidities",
    "patient.allergies",
)


def key_facts(case: dict[str, Any], staging: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    """The patient's key facts for the cover: who (age, sex, ECOG), the diagnosis, the index
    lesion, the stage of the case's cancer, the biomarkers recorded, prior therapy, and what
    limits treatment (comorbidities, allergies). Only what is recorded; the dossier appendix
    has the rest."""
    rows = {row.path: row for section in case_sections(case) for row in section.rows}
    prior = next((s.prior_therapies for s in case_sections(case) if s.prior_therapies), None)
    facts: list[tuple[str, str]] = []
    who = [
        rows[p].text
        for p in ("patient.age_years", "patient.sex")
        if p in rows and rows[p].available
    ]
    if "patient.ecog" in rows and rows["patient.ecog"].available:
        who.append(f"ECOG {rows['patient.ecog'].text}")
    if who:
        facts.append(("Patient", ", ".join(who)))
    lesion = case.get("index_lesion") or {}
    if lesion.get("site"):
        where = str(lesion["site"])
        if lesion.get("size_mm") is not None:
            where += f", {lesion['size_mm']} mm"
        if lesion.get("count") is not None:
            where += f", {lesion['count']} lesion{'s' if lesion['count'] != 1 else ''}"
        facts.append(("Index lesion", where))
    stage = "; ".join(f"{label} {value}" for label, value in staging if value is not None)
    if stage:
        facts.append(("Stage", stage))
    for path in KEY_FACT_PATHS[:3]:
        if path in rows and rows[path].available:
            facts.append((rows[path].label, rows[path].text))
    markers = [
        f"{row.label}: {row.text}"
        for path, row in rows.items()
        if path.startswith("biomarkers.") and row.available
    ]
    if markers:
        facts.append(("Biomarkers", "; ".join(markers)))
    if prior:
        regimens = [
            next((r.text for r in therapy if r.path.endswith("regimen") and r.available), "")
            for therapy in prior
        ]
        facts.append(("Prior therapy", "; ".join(r for r in regimens if r) or "recorded"))
    for path in KEY_FACT_PATHS[3:]:
        if path in rows and rows[path].available and rows[path].text != "none":
            facts.append((rows[path].label, rows[path].text))
    return facts


def _plan_drugs(doc: dict[str, Any]) -> set[str]:
    drugs: set[str] = set()
    for c in (doc.get("recommendation") or {}).get("components") or []:
        drugs |= lexicon.given(
            [str(a) for a in c.get("agents") or []], str(c.get("description") or "")
        ).drugs
    return drugs


def report_context(
    *,
    state: ReviewState,
    decided: VersionView,
    paper: str,
    generated: Any,
    appendix: Sequence[str] = (),
) -> dict[str, Any]:
    """The two-page summary's content, and that of the appendix sections chosen."""
    consultation = state.consultation
    case = consultation.snapshot.data
    # As frozen with the snapshot: never today's calculators beside yesterday's plan.
    derived = consultation.snapshot.frozen.derived
    all_refs = [e for v in state.versions for e in v.payload.get("evidence") or []]
    version_ids = evidence_version_ids(refs=all_refs)
    details = evidence_details(version_ids=version_ids)
    titles = {unit: cited.title for unit, cited in details.items()}

    def view(doc: dict[str, Any]) -> Any:
        return recommendation_view(
            doc,
            case=case,
            dossier_id=consultation.dossier_id,
            derived=derived,
            version_ids=version_ids,
            titles=titles,
            details=details,
        )

    base = state.version(decided.based_on) if decided.based_on else None
    patient = case.get("patient") or {}
    lesion = case.get("index_lesion") or {}
    decided_view = view(decided.payload)
    drugs = _plan_drugs(decided.payload)
    return {
        "appendix": set(appendix),
        "key_facts": key_facts(case, decided_view.staging),
        "paper": paper,
        "generated": generated,
        "consultation": consultation,
        "case": case,
        "pseudonym": patient.get("pseudonym") or consultation.dossier.patient.pseudonym,
        "lesion": lesion,
        "snapshot": consultation.snapshot,
        "sections": case_sections(case),
        "derived": [
            (name, clinical_text(f"derived.{name}"), _shown(result.value), result.inputs_missing)
            for name, result in derived.items()
            if dose_fact_concerns(name, drugs)
        ],
        "not_available": NOT_AVAILABLE,
        "state": state,
        "decided": decided,
        "view": decided_view,
        "base": base,
        "base_view": view(base.payload) if base else None,
        "diff": plan_diff(base.payload, decided.payload) if base else [],
        "tree": evidence_tree(consultation=consultation),
        "trace": agent_trace(consultation=consultation),
        "dissent": final_dissent(consultation=consultation),
        "models": consultation_models(consultation=consultation),
        "disclaimer": DISCLAIMER,
        "app_version": settings.VERSION,
        "timeline": case_timeline(patient=consultation.dossier.patient, case=case),
    }


def report_html(
    *, report: PlanReport, progress: Callable[[int, str], None] | None = None
) -> tuple[str, dict[str, Any]]:
    state = review_state_get(consultation=report.consultation)
    # The version the report was requested for, even if the team has moved on since.
    decided = next((v for v in state.versions if v.content_hash == report.plan_hash), state.decided)
    if progress:
        progress(20, "Building the report")
    context = report_context(
        state=state,
        decided=decided,
        paper=report.paper,
        generated=timezone.now(),
        appendix=report.appendix or (),
    )
    return render_to_string("review/report.html", context), decided.payload


def plan_json_bytes(plan: dict[str, Any]) -> bytes:
    """A plan as the JSON file a clinician downloads or finds attached to the PDF."""
    return (json.dumps(plan, indent=2, ensure_ascii=False) + "\n").encode()


def report_pdf(*, html: str, plan: dict[str, Any], title: str) -> bytes:
    # Imported here: WeasyPrint costs a process ~0.5 s and ~20 MB, and every process that
    # loads the URL configuration imports this module (the review views), while only the
    # report worker renders PDFs.
    from consult.review.pdf import LocalOnlyFetcher, pdf_render

    return pdf_render(
        html=html, attachment=plan_json_bytes(plan), title=title, fetcher=LocalOnlyFetcher()
    )
