"""Consultations: start, run (wiring the pure engine to its journal, the LLM and the
retriever), cancel, and recover runs whose worker died. The journal itself (step store,
lease, numbering, board, broadcaster) is consult/journal/."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import fields
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import InterfaceError, OperationalError, connections, transaction
from django.utils import timezone

from clinical.frozen import FrozenFacts
from clinical.vocab import EventKind
from consult.engine import prompting
from consult.engine.accounting import Account, Turn, account, budget_note, joined
from consult.engine.aio import run_coroutine
from consult.engine.deliberation import Cancelled, Deliberation, EngineConfig
from consult.engine.protocols import EngineEvent
from consult.engine.providers import GuidelineProvider, LLMProvider
from consult.journal import broadcaster
from consult.journal.lease import LeaseLost, lease_claim, lease_lapsed
from consult.journal.numbering import events_append
from consult.journal.store import DbStepStore
from consult.labels import fact_labels
from consult.learning import DbExperience, recalled
from consult.models import (
    AgentMessage,
    Consultation,
    ConsultationEvent,
    ConsultationStatus,
    DossierStatus,
    EngineChoice,
    LesionDossier,
    Plan,
)
from consult.retrieval import DbRetriever
from knowledge.memory.selectors import versions_in_force
from knowledge.memory.services import experience_uses_record
from mdtboard.accounts.models import User
from mdtboard.accounts.roles import is_admin
from mdtboard.audit.hashing import payload_hash
from mdtboard.audit.services import audit_record

logger = logging.getLogger(__name__)

# A dropped database connection (a restart, a failover, a killed backend) is retried: the run
# resumes from its saved steps on a fresh connection, after these pauses (seconds). They add up
# to well under the lease (consult.journal.lease.LEASE), so no other worker's sweep takes the
# run over while this one waits.
DB_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)
DB_LOST = (
    "The database connection was lost and did not come back within 15 seconds; the steps "
    "done so far are kept. Start the consultation again."
)


class ConsultationError(Exception):
    pass


class LLMNotConfigured(Exception):
    """An LLM consultation, but the endpoint is not configured (any more) or misconfigured;
    the message says which, for the board."""


NOT_SUBMITTED = "Submit the dossier first: a consultation deliberates on a frozen snapshot."
NO_LLM = "No LLM endpoint is configured (OPENAI_BASE_URL, OPENAI_MODEL); use the guideline engine."
ALREADY_FINISHED = "This consultation has already finished."
NOT_YOURS = "Only the clinician who started the consultation (or an administrator) can cancel it."


def llm_settings() -> Any:
    from consult.llm import llm_settings as parsed

    return parsed()


def llm_available() -> bool:
    try:
        return llm_settings() is not None
    except ValueError:
        return False  # a half-configured endpoint is reported by the start service


@transaction.atomic
def consultation_start(
    *,
    actor: User,
    dossier: LesionDossier,
    engine: str = EngineChoice.GUIDELINE,
    max_rounds: int = 3,
    budget_short: str = "stop",
    enqueue: bool = True,
    idempotency_key: uuid.UUID | None = None,
) -> Consultation:
    """Queue a deliberation on the dossier's latest submitted snapshot. With the key of the
    form that asked (``idempotency_key``), the same form sent again, or twenty times at once,
    starts one consultation and returns it each time."""
    if idempotency_key is not None:
        existing = Consultation.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_form(existing, actor=actor, dossier=dossier)
    # The dossier's row, locked: parallel sends of one form are taken one at a time.
    dossier = LesionDossier.objects.select_for_update().get(pk=dossier.pk)
    if idempotency_key is not None:
        existing = Consultation.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return _same_form(existing, actor=actor, dossier=dossier)
    snapshot = dossier.snapshots.order_by("-number").first()
    if dossier.status != DossierStatus.SUBMITTED or snapshot is None:
        raise ConsultationError(NOT_SUBMITTED)
    if engine == EngineChoice.LLM and llm_settings() is None:
        raise ConsultationError(NO_LLM)
    # The prompt and weight versions an administrator approved, as they stand now: the
    # consultation records them and a resumed run uses the same ones.
    forces = versions_in_force()
    weights = forces["weights"]
    config = EngineConfig(  # validates the limits
        max_rounds=max_rounds,
        budget_short=budget_short or "stop",
        experience_k=django_settings.MEMORY_TOP_K,
        weight_offsets=weights["offsets"],
    )
    consultation = Consultation.objects.create(
        snapshot=snapshot,
        dossier=dossier,
        engine=engine,
        created_by=actor,
        idempotency_key=idempotency_key,
        config={
            "max_rounds": config.max_rounds,
            "budget_short": config.budget_short,
            "agreement": config.agreement,
            "wall_clock_s": config.wall_clock_s,
            "experience_k": config.experience_k,
            "weight_offsets": dict(config.weight_offsets),
            "weight_version": weights["label"],
            "prompt_addenda": {n: v["addendum"] for n, v in forces["prompts"].items()},
        },
        prompt_versions=prompting.versions({n: v["label"] for n, v in forces["prompts"].items()}),
    )
    audit_record(
        action="consultation.start",
        actor=actor,
        obj=consultation,
        payload={
            "dossier": dossier.pk,
            "snapshot": snapshot.pk,
            "engine": engine,
            "snapshot_hash": snapshot.content_hash,
            "weight_version": weights["label"] or None,
            "prompt_db_versions": {n: v["label"] for n, v in forces["prompts"].items()},
        },
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue(consultation.pk))
    return consultation


FORM_REUSED = "This form was already used for another dossier; reload the page."


def _same_form(existing: Consultation, *, actor: User, dossier: LesionDossier) -> Consultation:
    if existing.dossier_id != dossier.pk or existing.created_by_id != actor.pk:
        raise ConsultationError(FORM_REUSED)
    return existing


def _enqueue(consultation_id: int) -> None:
    """Hand the run to the workers. With the broker down the consultation is saved and stays
    queued: the board says no worker has picked it up, and a worker that starts recovers it;
    the clinician gets their page, not a 500."""
    from consult.tasks import consultation_run as task

    try:
        task.delay(consultation_id)
    except Exception as exc:  # noqa: BLE001 - any broker failure; recovery picks the run up
        logger.warning("could not queue consultation %s (%s)", consultation_id, type(exc).__name__)


@transaction.atomic
def consultation_cancel(*, actor: User, consultation: Consultation) -> Consultation:
    consultation = Consultation.objects.select_for_update().get(pk=consultation.pk)
    if consultation.is_finished:
        raise ConsultationError(ALREADY_FINISHED)
    if consultation.created_by_id != actor.pk and not is_admin(actor):
        raise ConsultationError(NOT_YOURS)
    consultation.cancel_requested = True
    fields = ["cancel_requested"]
    if consultation.status == ConsultationStatus.QUEUED:
        # Nobody is running it: stop it here.
        consultation.status = ConsultationStatus.CANCELLED
        consultation.finished_at = timezone.now()
        fields += ["status", "finished_at"]
        events_append(
            consultation=consultation,
            events=[EngineEvent(EventKind.CANCELLED, {"by": actor.pk})],
        )
    consultation.save(update_fields=fields)
    audit_record(action="consultation.cancel", actor=actor, obj=consultation)
    return consultation


# --- running --------------------------------------------------------------------------------


def _finish(consultation_id: int, status: str, *, error: str = "") -> None:
    """End a run that did not complete (cancelled, failed) in a transaction of its own."""
    with transaction.atomic():
        consultation = Consultation.objects.select_for_update().get(pk=consultation_id)
        if not consultation.is_finished:
            _end(consultation, status, error=error)


def _end(
    consultation: Consultation,
    status: str,
    *,
    error: str = "",
    plan: dict[str, Any] | None = None,
    kb_versions: list[int] | None = None,
) -> None:
    """The run's end, on the locked consultation row: its plan (if any), final status, the
    board's status event, the audit record, and the clinician's notice after commit.

    An LLM consultation says on its status, its plan (``llm``) and the board how many of its
    turns the guideline engine answered, and why: never a silent "completed"."""
    note = ""
    if consultation.engine == EngineChoice.LLM:
        spent = llm_account(consultation)
        budget = _budget_decision(consultation)
        note = joined(spent.note, budget_note(budget))
        if plan is not None:
            plan = {**plan, "llm": {**spent.as_dict(), "note": note, "budget": budget or None}}
    plan_hash = None
    if plan is not None:
        plan_hash = payload_hash(plan)
        Plan.objects.create(consultation=consultation, payload=plan, content_hash=plan_hash)
    consultation.status = status
    consultation.status_note = note[:300]
    consultation.finished_at = timezone.now()
    consultation.error = error[:500]
    consultation.lease_owner = ""
    consultation.lease_until = None
    fields = ["status", "status_note", "finished_at", "error", "lease_owner", "lease_until"]
    if kb_versions is not None:
        consultation.kb_versions = sorted(kb_versions)
        fields.append("kb_versions")
    # Only these: the step store may have moved the token counts in this transaction.
    consultation.save(update_fields=fields)
    events_append(
        consultation=consultation,
        events=[EngineEvent(EventKind.STATUS, {"status": status, "error": error, "note": note})],
    )
    audit_record(
        action=f"consultation.{status}",
        obj=consultation,
        payload={"plan_hash": plan_hash},
    )
    case_id = LesionDossier.objects.values_list("case_id", flat=True).get(
        pk=consultation.dossier_id
    )
    notice = {
        "user_id": consultation.created_by_id,
        "level": "success" if status == "completed" and not note else "warning",
        "text": f"Consultation on {case_id}: {consultation.status_text}.",
    }
    # After the board's last events, on their thread: the run is done once it is saved.
    transaction.on_commit(lambda: broadcaster.notice_broadcast(notice))


def llm_account(consultation: Consultation) -> Account:
    """Every LLM turn of the consultation, from its journal (so a resumed run counts the turns
    of the run before it): tokens per call, role and round, and the guideline engine's turns."""
    rows = AgentMessage.objects.filter(consultation=consultation).values_list(
        "round", "role", "kind", "model_name", "tokens_prompt", "tokens_completion",
        "cost_usd", "fallback",
    )  # fmt: skip
    return account(
        Turn(
            round=number,
            role=role,
            step=kind,
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=float(cost),
            fallback=fallback,
        )
        for number, role, kind, model, prompt, completion, cost, fallback in rows
    )


def _budget_decision(consultation: Consultation) -> dict[str, Any]:
    """The last round-end budget check that found the budget short ({} if none did)."""
    payload = (
        ConsultationEvent.objects.filter(
            consultation=consultation, kind=EventKind.CONSENSUS, payload__has_key="budget"
        )
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    return dict((payload or {}).get("budget") or {})


def consultation_run(*, consultation_id: int) -> str:
    """Run (or resume) a consultation to its end. Safe to call twice: a finished run is left
    alone, and completed steps are read back rather than redone."""
    consultation = lease_claim(consultation_id=consultation_id)
    if consultation is None:
        return "skipped"
    try:
        # The facts frozen with the snapshot when it was submitted, never computed again: the
        # plan, its pages, report and exports all show the same ones.
        frozen = consultation.snapshot.frozen
        retriever = DbRetriever(facts=frozen.facts)
        _deliberate_through_dropped_connections(consultation, retriever, frozen)
    except Cancelled:
        _finish(consultation_id, ConsultationStatus.CANCELLED)
        return "cancelled"
    except LeaseLost:
        logger.warning("consultation %s: another worker took the run over", consultation_id)
        return "skipped"
    except LLMNotConfigured as exc:
        _finish(consultation_id, ConsultationStatus.FAILED, error=str(exc))
        return "failed"
    except (OperationalError, InterfaceError):
        logger.error("consultation %s failed: the database connection was lost", consultation_id)
        connections.close_all()  # the dead connection must not be the one that says so
        _finish(consultation_id, ConsultationStatus.FAILED, error=DB_LOST)
        return "failed"
    except Exception as exc:  # noqa: BLE001 - any failure ends the run as failed, said so
        # The error's type only, in the record and in the log: messages (and the values in a
        # traceback) may quote clinical data.
        logger.error("consultation %s failed (%s)", consultation_id, type(exc).__name__)
        _finish(consultation_id, ConsultationStatus.FAILED, error=type(exc).__name__)
        return "failed"
    return "completed"


def _deliberate_through_dropped_connections(
    consultation: Consultation, retriever: DbRetriever, frozen: FrozenFacts
) -> Any:
    """Deliberate; when the database connection drops, reconnect and resume from the saved
    steps a few times before giving up (the pauses stay inside the lease, so it stays ours)."""
    for delay in (*DB_RETRY_DELAYS, None):
        try:
            return _deliberate(consultation, retriever, frozen)
        except (OperationalError, InterfaceError):
            connections.close_all()
            if delay is None:
                raise
            logger.warning(
                "consultation %s: database connection lost; resuming in %.0f s",
                consultation.pk,
                delay,
            )
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _deliberate(consultation: Consultation, retriever: DbRetriever, frozen: FrozenFacts) -> Any:
    """Everything after the claim, so that any failure (a half-configured LLM endpoint
    included) finishes the run as failed instead of leaving it "running"."""
    case = consultation.snapshot.data
    provider: GuidelineProvider | LLMProvider = GuidelineProvider()
    llm = None
    if consultation.engine == EngineChoice.LLM:
        try:
            settings = llm_settings()
        except ValueError as exc:  # names the variable, never case data
            raise LLMNotConfigured(f"The LLM endpoint is misconfigured: {exc}") from exc
        if settings is None:
            raise LLMNotConfigured(NO_LLM)
        from consult.llm import Budget, LLMClient

        budget = Budget(tokens=settings.token_budget, cost_usd=settings.cost_budget_usd)
        # A resumed run goes on with what the run before it spent, not a fresh allowance.
        budget.tokens_used = consultation.tokens_prompt + consultation.tokens_completion
        budget.cost_used = float(consultation.cost_usd)
        llm = LLMClient(settings, budget)
        provider = LLMProvider(llm, addenda=consultation.config.get("prompt_addenda") or {})
    store = DbStepStore(consultation.pk)
    Consultation.objects.filter(pk=consultation.pk).update(engine_label=provider.name)
    deliberation = Deliberation(
        case=case,
        facts=frozen.facts,
        staging=frozen.staging,
        retriever=retriever,
        store=store,
        provider=provider,
        experience=DbExperience(staging=frozen.staging),
        config=engine_config(consultation.config),
        labels=fact_labels(),
    )

    async def run() -> Any:
        try:
            plan = await deliberation.run()
            payload = plan.model_dump(mode="json")
            versions = list(retriever.used_version_ids)

            def end(locked: Consultation) -> None:
                _end(locked, ConsultationStatus.COMPLETED, plan=payload, kb_versions=versions)
                # Which past cases informed the plan: the memory's bookkeeping, in the same
                # transaction as the plan.
                experience_uses_record(consultation_ref=locked.pk, used=recalled(payload))

            # The plan is saved with (and never before) the last steps of the journal behind
            # it, in the same transaction: the run's end adds no transaction of its own.
            await store.finish(end)
            return plan
        finally:
            await store.settle()  # whatever happened, finished steps are written for a resume
            if llm is not None:
                await llm.aclose()
            # The step store's queries ran on asgiref's worker thread: close its connection.
            await sync_to_async(connections.close_all)()

    return run_coroutine(run)


def engine_config(config: Mapping[str, Any]) -> EngineConfig:
    """The engine's settings from a consultation's recorded config (which also holds what the
    engine does not read: the weight version's label, the prompt addenda)."""
    names = {f.name for f in fields(EngineConfig)}
    return EngineConfig(**{k: v for k, v in config.items() if k in names})


def consultations_recover(*, queued: bool = True) -> list[int]:
    """Requeue runs whose worker died or whose lease lapsed (when a worker starts, and every
    minute while workers run); with ``queued``, also runs queued for over two minutes (their
    message may have been lost with the broker). A duplicate message is harmless: the claim
    skips a run that is already taken or finished."""
    from consult.tasks import consultation_run as task

    now = timezone.now()
    stale = []
    for consultation in Consultation.objects.filter(status=ConsultationStatus.RUNNING):
        if lease_lapsed(consultation):
            stale.append(consultation.pk)
            task.delay(consultation.pk)
    if not queued:
        return stale
    for pk in Consultation.objects.filter(
        status=ConsultationStatus.QUEUED, created_at__lt=now - timedelta(minutes=2)
    ).values_list("pk", flat=True):
        stale.append(pk)
        task.delay(pk)
    return stale


__all__ = [
    "ConsultationError",
    "LLMNotConfigured",
    "consultation_cancel",
    "consultation_run",
    "consultation_start",
    "consultations_recover",
    "llm_available",
]
