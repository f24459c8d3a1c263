"""The optional LLM rater: the same blinded packets, scored through ``consult.llm`` and kept
as a separate arm (LLMRating) that no rater page reads. Its agreement with the physicians is
measured in the analytics, never assumed."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from django.db import transaction
from pydantic import BaseModel, ConfigDict, Field

from consult.engine.aio import run_coroutine
from consult.engine.prompting import load, version
from consult.rating.blinding import blind_packet, blind_plan_text
from consult.rating.models import LLMRating, LLMScore, Packet, Study
from consult.rating.rubric import DIMENSIONS
from consult.rating.selectors import case_summary
from consult.rating.services import RatingServiceError
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import is_admin
from mdtboard.audit.services import audit_record

logger = logging.getLogger(__name__)

PROMPT = "rater"
NO_LLM = "No LLM endpoint is configured (OPENAI_BASE_URL, OPENAI_MODEL)."
NOT_IN_STUDY = "This study was set up without the LLM rater."


class PlanScores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    safety_ethics: int = Field(ge=1, le=5)
    efficiency: int = Field(ge=1, le=5)
    completeness: int = Field(ge=1, le=5)
    clinical_appropriateness: int = Field(ge=1, le=5)
    evidence_utilization: int = Field(ge=1, le=5)
    patient_centeredness: int = Field(ge=1, le=5)


class RaterReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_a: PlanScores
    plan_b: PlanScores
    preference: Literal["A", "B", "none"]
    system_guess: Literal["A", "B", "unsure"]
    comment: str = Field(default="", max_length=2000)


def _settings() -> Any:
    from consult.llm import LLMSettings

    return LLMSettings.from_env()


def llm_rater_available() -> bool:
    try:
        return _settings() is not None
    except ValueError:
        return False


def packet_prompt(packet: Packet) -> str:
    """What the LLM reads: the rubric, the dossier summary and both plans, as physicians see
    them (the same neutral rendering, the same A/B positions)."""
    lines = ["DIMENSIONS (score each plan 1-5):"]
    for d in DIMENSIONS:
        lines.append(f"- {d.key} ({d.label}): {d.question} Anchors: {d.anchor_text}.")
    data = packet.consultation.snapshot.data
    lines += ["", "CASE DOSSIER", f"MDT question: {data.get('question') or 'not stated'}"]
    for section in case_summary(data):
        lines.append(f"{section.label}:")
        lines += [f"  {row.label}: {row.text}" for row in section.rows]
        for i, therapy in enumerate(section.prior_therapies or [], 1):
            lines.append(
                f"  Prior therapy {i}: " + "; ".join(f"{r.label} {r.text}" for r in therapy)
            )
    system, comparator = packet.plan.payload, packet.comparator.payload
    documents = {"A": system, "B": comparator}
    if packet.system_position == "B":
        documents = {"A": comparator, "B": system}
    for position, plan in zip(
        ("A", "B"), blind_packet(documents["A"], documents["B"]), strict=True
    ):
        lines += ["", blind_plan_text(plan, position)]
    return "\n".join(lines)


@dataclass(frozen=True)
class LlmRun:
    scored: int
    failed: int
    skipped: int


def study_llm_rate_enqueue(*, actor: User, study: Study) -> None:
    if not is_admin(actor):
        raise RatingServiceError("Only an administrator can run the LLM rater.")
    if not study.llm_arm:
        raise RatingServiceError(NOT_IN_STUDY)
    if not llm_rater_available():
        raise RatingServiceError(NO_LLM)
    from consult.rating.tasks import study_llm_rate as task

    with transaction.atomic():
        audit_record(action="study.llm_rate_requested", actor=actor, obj=study)
        transaction.on_commit(lambda: task.delay(study.pk))


def study_llm_rate(*, study_id: int) -> LlmRun:
    """Score every packet of the study the configured model has not scored yet. A packet
    whose call fails is left for a later run; the others are kept."""
    from consult.llm import Budget, LLMClient, LLMError

    settings = _settings()
    if settings is None:
        raise RatingServiceError(NO_LLM)
    study = Study.objects.get(pk=study_id)
    if not study.llm_arm:
        raise RatingServiceError(NOT_IN_STUDY)
    model = settings.role_models.get(PROMPT, settings.model)
    done = set(LLMRating.objects.filter(study=study, model=model).values_list("packet", flat=True))
    packets = [
        p
        for p in study.packets.select_related("consultation__snapshot", "plan", "comparator")
        if p.pk not in done
    ]
    prompts = [(p, packet_prompt(p)) for p in packets]
    system = f"ROLE: {PROMPT}\n\n{load(PROMPT)}"

    async def score_all() -> list[Any]:
        budget = Budget(tokens=settings.token_budget, cost_usd=settings.cost_budget_usd)
        results: list[Any] = []
        async with LLMClient(settings, budget) as client:
            for _, user in prompts:
                try:
                    results.append(
                        await client.complete_structured(
                            role=PROMPT, system=system, user=user, schema=RaterReply
                        )
                    )
                except LLMError as exc:
                    results.append(exc)
        return results

    results = run_coroutine(score_all)
    scored = failed = 0
    for (packet, _), result in zip(prompts, results, strict=True):
        if isinstance(result, Exception):
            failed += 1
            logger.warning("LLM rater failed on packet %s (%s)", packet.pk, type(result).__name__)
            continue
        reply, usage = result
        _store(study, packet, model, reply, usage)
        scored += 1
    return LlmRun(scored, failed, len(done))


@transaction.atomic
def _store(study: Study, packet: Packet, model: str, reply: RaterReply, usage: Any) -> None:
    rating = LLMRating.objects.create(
        study=study,
        packet=packet,
        model=model,
        prompt_version=version(PROMPT),
        preference=reply.preference,
        system_guess=reply.system_guess,
        comment=reply.comment.strip(),
        tokens_prompt=usage.prompt_tokens,
        tokens_completion=usage.completion_tokens,
        latency_ms=usage.latency_ms,
    )
    LLMScore.objects.bulk_create(
        LLMScore(
            llm_rating=rating, position=position, dimension=d.key, value=getattr(scores, d.key)
        )
        for position, scores in (("A", reply.plan_a), ("B", reply.plan_b))
        for d in DIMENSIONS
    )
    audit_record(
        action="rating.llm_submit",
        obj=rating,
        payload={"study": study.pk, "packet": packet.pk, "model": model},
    )
