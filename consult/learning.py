"""The learning loop's consult side (issue 16): what a review or a rating teaches, written as
a CorrectKB or ChainKB entry (by the LLM when one is configured, by a template otherwise) and
handed to knowledge.memory; and the experience retriever the engine recalls past cases with."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from clinical.calculators import derive_all, staging_summary
from clinical.results import CalcValue
from consult.engine.aio import run_coroutine
from consult.engine.prompting import load
from consult.engine.protocols import PastCase
from consult.rating.models import Rating
from consult.rating.vetting import study_vetting
from consult.review.models import ClinicianReview, Decision, PlanReview
from consult.review.selectors import plan_versions
from knowledge.embeddings import EmbeddingError
from knowledge.memory.evolution import evolution_propose
from knowledge.memory.models import EntrySource
from knowledge.memory.selectors import experience_learnt_from, experience_similar
from knowledge.memory.services import (
    EntryDraft,
    experience_helped_mark,
    experience_record,
    experience_revet,
    experience_unvet,
)

logger = logging.getLogger(__name__)

REFLECTOR = "reflector"
# A reason that speaks of harm: the correction was about safety (a pattern evolution weighs).
SAFETY_WORDS = re.compile(
    r"\b(contraindicat\w*|toxic\w*|interact\w*|unsafe|safety|harm\w*|bleed\w*|varice\w*|"
    r"renal|kidney|hepat\w*|liver|cardi\w*|allerg\w*|pregnan\w*|dose|dosing|frail\w*|"
    r"comorbid\w*|organ function|child[- ]pugh|lvef|egfr|creatinine)\b",
    re.IGNORECASE,
)
# A rejection for a reason of record-keeping rather than medicine: nothing to learn from it.
ADMINISTRATIVE_WORDS = re.compile(
    r"\b(duplicate\w*|wrong (?:patient|case|dossier|file)|entered in error|in error|test(?:ing)?|"
    r"demo|withdrawn|cancel\w*|transferred|another (?:team|hospital)|not for (?:this )?"
    r"(?:mdt|meeting|board)|administrative)\b",
    re.IGNORECASE,
)
CLINICAL_WORDS = re.compile(
    r"\b(stage|staging|tumou?r|lesion|metasta\w*|resect\w*|surgery|therap\w*|treat\w*|"
    r"dose|drug|regimen|chemo\w*|radio\w*|ablation|transplant\w*|prefer\w*|declin\w*|"
    r"performance|ecog|frail\w*|guideline|evidence|indicat\w*|progress\w*|response)\b",
    re.IGNORECASE,
)


def administrative_reason(reason: str, kind: str = "") -> bool:
    """Whether a rejection's reason is administrative: said so on the form, or (recorded
    before the form asked) worded only as record-keeping, with no clinical word."""
    if kind:
        return kind == "administrative"
    return bool(ADMINISTRATIVE_WORDS.search(reason or "")) and not (
        CLINICAL_WORDS.search(reason or "") or SAFETY_WORDS.search(reason or "")
    )


def _sentence(text: str) -> str:
    """A piece of free text as the end of a sentence: trimmed, without its own end stop."""
    return " ".join(str(text or "").split()).rstrip(" .;:,")


# Never part of a summary: the pseudonym and free text that may carry identifying detail.
_SKIP = {"pseudonym", "description", "site", "expected", "format", "case_id", "question"}
_SECTIONS = ("patient", "diagnosis", "index_lesion", "staging", "biomarkers", "labs")


def _words(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_words(v) for v in value if not isinstance(v, dict))
    return str(value).replace("_", " ")


def case_text(case: Mapping[str, Any], staging: Mapping[str, CalcValue] | None = None) -> str:
    """The case as the memory recalls it: cancer, staging (derived), the facts recorded (never
    the pseudonym or free-text descriptions), and the MDT question. Deterministic. A
    submitted case gives the staging frozen with its snapshot; without it, it is derived."""
    parts = [str(case.get("cancer_type") or "other").replace("_", " ")]
    if staging is None:
        staging = staging_summary(derive_all(case))
    derived = [f"{k.replace('_', ' ')} {v}" for k, v in sorted(staging.items()) if v is not None]
    if derived:
        parts.append("derived: " + "; ".join(derived))
    for section in _SECTIONS:
        block = case.get(section)
        if not isinstance(block, Mapping):
            continue
        facts = [
            f"{key.replace('_', ' ')} {_words(value)}"
            for key, value in block.items()
            if key not in _SKIP and value not in (None, "", [], {}) and not isinstance(value, dict)
        ]
        if facts:
            parts.append(f"{section.replace('_', ' ')}: " + "; ".join(facts))
    if case.get("question"):
        parts.append(f"question: {case['question']}")
    return ". ".join(parts)


def plan_text(plan: Mapping[str, Any]) -> str:
    """A plan in one paragraph: the pathway in order, the alternatives with when, what was
    ruled out."""
    recommendation = plan.get("recommendation") or {}
    components = recommendation.get("components") or []
    primary = [c for c in components if c.get("role") == "primary"]
    alternatives = [c for c in components if c.get("role") == "alternative"]
    text = []
    if primary:
        pathway = "; then ".join(str(c.get("description")) for c in primary)
        intent = recommendation.get("intent")
        text.append(f"Pathway{f' ({intent})' if intent else ''}: {pathway}.")
    else:
        text.append("No treatment recommended (the board abstained).")
    if alternatives:
        text.append(
            "Alternatives: "
            + "; ".join(
                f"{c.get('description')} ({c.get('when') or 'if needed'})" for c in alternatives
            )
            + "."
        )
    ruled_out = [str(r.get("option")) for r in plan.get("rejected_options") or []]
    if ruled_out:
        text.append("Ruled out: " + "; ".join(ruled_out[:6]) + ".")
    return " ".join(text)


def _primary(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    components = (plan.get("recommendation") or {}).get("components") or []
    return [c for c in components if c.get("role") == "primary"]


def _key_reasoning(plan: Mapping[str, Any]) -> str:
    """Why the accepted plan was right: the rationale of its pathway, the gates that changed
    it, and the evidence it stands on (unit ids)."""
    lines = []
    for component in _primary(plan):
        why = "; ".join(str(r) for r in component.get("rationale") or [])
        if why:
            lines.append(f"{component.get('description')}: {why}")
    acted = [
        f"{g.get('gate')} ({g.get('effect') or g.get('status')})"
        for g in (plan.get("safety") or {}).get("gates") or []
        if g.get("status") == "fail" or g.get("effect") in ("dose", "precondition", "withdrawn")
    ]
    if acted:
        lines.append("Safety gates that shaped it: " + ", ".join(acted[:6]))
    units = [str(e.get("unit_id")) for e in plan.get("evidence") or []]
    if units:
        lines.append("Evidence: " + ", ".join(units[:8]))
    return ". ".join(lines) or "The board's pathway as proposed."


def _analysis(plan: Mapping[str, Any]) -> str:
    conflicts = [str(c.get("resolution")) for c in plan.get("conflicts") or []][:3]
    failed = [
        f"{g.get('gate')}: {g.get('detail')}"
        for g in (plan.get("safety") or {}).get("gates") or []
        if g.get("status") == "fail"
    ][:3]
    units = [str(e.get("unit_id")) for e in plan.get("evidence") or []][:8]
    text = [f"Relied on {', '.join(units)}." if units else "No evidence cited."]
    if conflicts:
        text.append("Conflicts: " + " ".join(conflicts))
    if failed:
        text.append("Gates failed: " + " ".join(failed))
    text.append(f"{plan.get('rounds') or 1} round(s); confidence {plan.get('confidence', '?')}.")
    return " ".join(text)


def correction_signals(
    board: Mapping[str, Any], correct: Mapping[str, Any] | None, reason: str, decision: str
) -> dict[str, Any]:
    """What the correction changed, as data: modalities and items removed from or added to
    the pathway, and whether the reason speaks of safety."""
    before = {str(c.get("description")): str(c.get("modality")) for c in _primary(board)}
    after = {str(c.get("description")): str(c.get("modality")) for c in _primary(correct or {})}
    removed = sorted({m for d, m in before.items() if d not in after})
    added = sorted({m for d, m in after.items() if d not in before})
    return {
        "decision": decision,
        "removed": removed if correct is not None else sorted(set(before.values())),
        "added": added,
        "removed_items": [d for d in before if d not in after][:6],
        "added_items": [d for d in after if d not in before][:6],
        "safety": bool(SAFETY_WORDS.search(reason or "")),
        # The reason as given, for the administrator's page (never recalled for a case).
        "reason": _sentence(reason)[:300],
    }


def template_reflection(
    *, board: Mapping[str, Any], correct_text: str, reason: str, signals: Mapping[str, Any]
) -> dict[str, str]:
    """The four ChainKB fields, written from the review without an LLM."""
    removed = "; ".join(_sentence(i) for i in signals.get("removed_items") or []) or "nothing"
    added = "; ".join(_sentence(i) for i in signals.get("added_items") or []) or "nothing"
    what = {
        "amend": "The team amended the board's plan",
        "reject": "The team rejected the board's plan",
        "rating": "A rater scored the board's plan poorly",
    }.get(str(signals.get("decision")), "The board's plan was corrected")
    lesson = (
        "Check the patient facts behind this reason before proposing the same pathway in a "
        "similar case."
    )
    if signals.get("safety"):
        lesson = (
            "The reason concerns safety: weigh contraindications, organ function and "
            "interactions before proposing the same items in a similar case."
        )
    return {
        "initial_hypothesis": plan_text(board),
        "analysis": _analysis(board),
        "final_conclusion": str((board.get("recommendation") or {}).get("summary") or ""),
        "error_reflection": (
            f"{what}. Reason: {_sentence(reason) or 'not given'}. Taken out of the pathway: "
            f"{removed}. Put in: {added}. {lesson}"
        ),
    }


class Reflection(BaseModel):
    model_config = ConfigDict(extra="forbid")

    initial_hypothesis: str = Field(max_length=1500)
    analysis: str = Field(max_length=2000)
    final_conclusion: str = Field(max_length=1500)
    error_reflection: str = Field(max_length=2000)


def _llm_reflection(user: Mapping[str, Any]) -> tuple[dict[str, str], str] | None:
    """The reflection by the configured LLM, or None (none configured, or it failed: the
    template writes it)."""
    from consult.llm import Budget, LLMClient, LLMError, llm_settings

    try:
        settings = llm_settings()
    except ValueError:
        return None
    if settings is None:
        return None

    system = f"ROLE: {REFLECTOR}\n\n{load(REFLECTOR)}"
    model = settings.role_models.get(REFLECTOR, settings.model)

    async def ask() -> Any:
        budget = Budget(tokens=settings.token_budget, cost_usd=settings.cost_budget_usd)
        async with LLMClient(settings, budget) as client:
            return await client.complete_structured(
                role=REFLECTOR,
                system=system,
                user=json.dumps(user, ensure_ascii=False, default=str),
                schema=Reflection,
            )

    try:
        reply, _usage = run_coroutine(ask)
    except LLMError as exc:
        logger.warning(
            "reflection by the LLM failed (%s): the template writes it", type(exc).__name__
        )
        return None
    if not isinstance(reply, Reflection):
        return None
    return reply.model_dump(), f"llm:{model}"


def chain_fields(
    *,
    case_summary: str,
    board: Mapping[str, Any],
    correct_text: str,
    reason: str,
    signals: Mapping[str, Any],
) -> tuple[dict[str, Any], str]:
    """The ChainKB fields and who wrote them."""
    by_llm = _llm_reflection(
        {
            "case_summary": case_summary,
            "board_plan": plan_text(board),
            "board_conflicts": [c.get("resolution") for c in board.get("conflicts") or []],
            "board_gates": [
                {"gate": g.get("gate"), "status": g.get("status"), "detail": g.get("detail")}
                for g in (board.get("safety") or {}).get("gates") or []
            ],
            "correct_plan": correct_text,
            "team_reason": reason,
        }
    )
    if by_llm is not None:
        return by_llm
    return (
        template_reflection(board=board, correct_text=correct_text, reason=reason, signals=signals),
        "template",
    )


def _chain_recorded(draft: EntryDraft) -> int:
    """Record a ChainKB entry, then look for a pattern it completes: the administrator sees a
    proposal as soon as enough corrected cases share one (it still changes nothing until
    approved)."""
    entry = experience_record(draft=draft)
    evolution_propose()
    return entry.pk


# --- from a review --------------------------------------------------------------------------


def experience_from_review(*, review_id: int) -> int | None:
    """The entry a clinician's decision teaches: accept -> CorrectKB (and the past cases the
    plan recalled helped); amend or reject -> ChainKB with a reflection. Returns its id."""
    review = ClinicianReview.objects.select_related(
        "consultation__snapshot", "consultation__dossier"
    ).get(pk=review_id)
    consultation = review.consultation
    progress = PlanReview.objects.filter(consultation=consultation).first()
    if progress is not None and progress.cycle != review.cycle:
        return None  # reopened before the worker got to it: the decision no longer stands
    if review.decision == Decision.REJECT and administrative_reason(
        review.reason, review.reason_kind
    ):
        return None  # a rejection for a reason of record-keeping teaches nothing
    case = consultation.snapshot.data
    staging = consultation.snapshot.frozen.staging
    versions = {v.number: v for v in plan_versions(consultation=consultation)}
    decided = versions.get(review.plan_number)
    if decided is None:
        return None
    common: dict[str, Any] = {
        "source_ref": f"review:{review.pk}",
        "consultation_ref": consultation.pk,
        "case_ref": consultation.dossier_id,
        "judged_by_ref": review.reviewer_id,
        "cancer_type": str(case.get("cancer_type") or "other"),
        "case_summary": case_text(case, staging),
        "question": str(case.get("question") or ""),
    }
    if review.decision == Decision.ACCEPT:
        experience_helped_mark(consultation_ref=consultation.pk)
        draft = EntryDraft(
            source=EntrySource.REVIEW_ACCEPT,
            plan=plan_text(decided.payload),
            key_reasoning=_key_reasoning(decided.payload),
            **common,
        )
        return experience_record(draft=draft).pk
    # What was wrong: for an amendment, the version it amended; for a rejection, the version
    # rejected (the board's own, or an amendment of it).
    board = decided.payload
    if review.decision == Decision.AMEND and decided.based_on in versions:
        board = versions[decided.based_on].payload
    if review.decision == Decision.AMEND:
        correct: dict[str, Any] | None = decided.payload
        correct_text = plan_text(decided.payload)
        source = EntrySource.REVIEW_AMEND
    else:
        correct = None
        meeting = getattr(consultation, "meeting", None)
        decision_text = meeting.final_decision if meeting is not None else ""
        correct_text = decision_text or f"Not the board's plan: {review.reason}"
        source = EntrySource.REVIEW_REJECT
    signals = correction_signals(board, correct, review.reason, str(review.decision))
    fields, written_by = chain_fields(
        case_summary=common["case_summary"],
        board=board,
        correct_text=correct_text,
        reason=review.reason,
        signals=signals,
    )
    draft = EntryDraft(
        source=source,
        plan=correct_text,
        signals=signals,
        written_by=written_by,
        **fields,
        **common,
    )
    return _chain_recorded(draft)


# --- from a rating --------------------------------------------------------------------------

GOOD_MEAN = 4.0  # every dimension averaged: a plan physicians call good
POOR_MEAN = 2.5
POOR_SAFETY = 2  # or a safety score this low, whatever the rest


def experience_forget_review(*, review_id: int) -> int:
    """A decision the team reopened teaches nothing any more: what was learnt from it is
    retired for good: the decision that follows the reopening teaches instead."""
    return experience_unvet(
        source_ref=f"review:{review_id}", reason="the team reopened this decision"
    )


def experience_from_rating(*, rating_id: int) -> int | None:
    """A rating was submitted or cleared: vet the ratings of its study again and learn from
    those that pass (consult/rating/vetting.py), withdraw what was learnt from those that no
    longer do. Returns the entry of this rating, if it teaches one now."""
    study = Rating.objects.select_related("assignment__study").get(pk=rating_id).assignment.study
    entry_id = None
    for vetting in study_vetting(study=study).values():
        source_ref = f"rating:{vetting.rating_id}"
        if not vetting.vetted:
            experience_unvet(source_ref=source_ref, reason=vetting.reason)
            continue
        experience_revet(source_ref=source_ref)
        made = _experience_from_vetted_rating(rating_id=vetting.rating_id)
        if vetting.rating_id == rating_id:
            entry_id = made
    return entry_id


def _experience_from_vetted_rating(*, rating_id: int) -> int | None:
    """A vetted rating of the board's plan: well (mean >= 4) -> CorrectKB; poorly (mean <=
    2.5, or safety <= 2) -> ChainKB, the human MDT plan it was compared with as the correct
    one. In between it teaches nothing. Returns the entry's id."""
    learnt = experience_learnt_from(source_ref=f"rating:{rating_id}")
    if learnt is not None:
        return learnt.pk  # already learnt (a reflection by the LLM is not written twice)
    rating = Rating.objects.select_related(
        "assignment__packet__consultation__snapshot",
        "assignment__packet__plan",
        "assignment__packet__comparator",
    ).get(pk=rating_id)
    packet = rating.assignment.packet
    scores = {
        s.dimension: s.value for s in rating.scores.all() if s.position == packet.system_position
    }
    if not scores:
        return None
    mean = sum(scores.values()) / len(scores)
    safety = scores.get("safety_ethics", 5)
    case = packet.consultation.snapshot.data
    staging = packet.consultation.snapshot.frozen.staging
    board = packet.plan.payload
    common: dict[str, Any] = {
        "source_ref": f"rating:{rating.pk}",
        "consultation_ref": packet.consultation_id,
        "case_ref": packet.consultation.dossier_id,
        "judged_by_ref": rating.assignment.rater_id,
        "cancer_type": str(case.get("cancer_type") or "other"),
        "case_summary": case_text(case, staging),
        "question": str(case.get("question") or ""),
    }
    if mean <= POOR_MEAN or safety <= POOR_SAFETY:
        comparator = packet.comparator.payload
        reason = f"rated {mean:.1f} of 5 on average, safety {safety} of 5" + (
            f"; the rater commented: {_sentence(rating.comment)}" if rating.comment else ""
        )
        signals = correction_signals(board, comparator, reason, "rating")
        fields, written_by = chain_fields(
            case_summary=common["case_summary"],
            board=board,
            correct_text=plan_text(comparator),
            reason=reason,
            signals=signals,
        )
        draft = EntryDraft(
            source=EntrySource.RATING_POOR,
            plan=plan_text(comparator),
            signals=signals,
            written_by=written_by,
            **fields,
            **common,
        )
        return _chain_recorded(draft)
    if mean >= GOOD_MEAN:
        draft = EntryDraft(
            source=EntrySource.RATING_GOOD,
            plan=plan_text(board),
            key_reasoning=_key_reasoning(board),
            **common,
        )
        return experience_record(draft=draft).pk
    return None


# --- recall, for the engine -----------------------------------------------------------------


def brief(summary: str) -> str:
    """A past case as another team's clinicians may read it in a plan: its cancer and derived
    staging only, none of the other patient's demographics, laboratory values or history."""
    parts = summary.split(". ")
    return ". ".join(parts[:1] + [p for p in parts[1:2] if p.startswith("derived:")])


class DbExperience:
    """The engine's ExperienceRetriever over the database memory (CorrectKB and ChainKB
    together): the k most similar past cases of the same cancer, each with its lesson and a
    brief of the case (the plan that records them is read by the patient's team). ``staging``:
    the one frozen with the snapshot under deliberation."""

    def __init__(self, *, staging: Mapping[str, CalcValue] | None = None) -> None:
        self.staging = staging

    def similar(self, *, case: Mapping[str, Any], k: int) -> list[PastCase]:
        try:
            found = experience_similar(
                text=case_text(case, self.staging),
                cancer_type=str(case.get("cancer_type") or "other"),
                k=k,
            )
        except EmbeddingError as exc:
            # The board deliberates without memory rather than not at all.
            logger.warning("experience recall failed (%s): no past cases", type(exc).__name__)
            return []
        return [
            PastCase(
                kind=r.kind,
                summary=brief(r.summary),
                lesson=r.lesson,
                similarity=r.similarity,
                entry_id=r.entry_id,
                label=r.label,
            )
            for r in found
        ]


def recalled(plan: Mapping[str, Any]) -> Sequence[tuple[int, float]]:
    """The (entry id, similarity) of the past cases a plan says informed it."""
    return [
        (int(p["entry_id"]), float(p.get("similarity") or 0))
        for p in plan.get("informed_by") or []
        if p.get("entry_id")
    ]
