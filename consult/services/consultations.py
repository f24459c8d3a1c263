"""Consultations: start, run (wiring the pure engine to the database, the LLM and the
broadcasts), cancel, and recover runs whose worker died."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from django.db import InterfaceError, OperationalError, connections, transaction
from django.db.models import F
from django.utils import timezone

from consult import broadcasts
from consult.engine import prompting
from consult.engine.aio import run_coroutine
from consult.engine.deliberation import Cancelled, Deliberation, EngineConfig
from consult.engine.protocols import EngineEvent, StepResult
from consult.engine.providers import GuidelineProvider, LLMProvider
from consult.labels import fact_labels
from consult.models import (
    AgentMessage,
    Conflict,
    Consultation,
    ConsultationEvent,
    ConsultationStatus,
    DossierStatus,
    EngineChoice,
    EvidenceNode,
    LesionDossier,
    Plan,
    Round,
)
from consult.retrieval import DbRetriever
from knowledge.applicability import case_facts
from knowledge.calculators import derive_all, staging_summary
from mdtboard.accounts.roles import is_admin
from mdtboard.audit.hashing import payload_hash
from mdtboard.audit.services import audit_record

logger = logging.getLogger(__name__)

LEASE = timedelta(seconds=30)
# A dropped database connection (a restart, a failover, a killed backend) is retried: the run
# resumes from its saved steps on a fresh connection, after these pauses (seconds). They add up
# to well under LEASE, so no other worker's sweep takes the run over while this one waits.
DB_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0)
DB_LOST = (
    "The database connection was lost and did not come back within 15 seconds; the steps "
    "done so far are kept. Start the consultation again."
)
# A worker renews its lease with every committed step and, while members wait on the LLM,
# with the engine's cancel check (every second). A lease that lapsed is LEASE without one
# renewal: thirty of those intervals, not fewer, since a worker's first retrieval may block
# its loop for tens of seconds loading the embedding model.
LEASE_STALE_AFTER = LEASE
# A consultation nobody has picked up for this long is waiting on a worker that is not there.
QUEUED_STALE_AFTER = timedelta(seconds=60)
DELTA_BATCH_S = 0.05
CANCEL_CHECK_S = 0.5


class ConsultationError(Exception):
    pass


class LLMNotConfigured(Exception):
    """An LLM consultation, but the endpoint is not configured (any more) or misconfigured;
    the message says which, for the board."""


class LeaseLost(Exception):
    """Another worker took this run over (its lease had lapsed): this one stops, writing
    nothing more, and leaves the consultation to the new owner."""


NOT_SUBMITTED = "Submit the dossier first: a consultation deliberates on a frozen snapshot."
NO_LLM = "No LLM endpoint is configured (OPENAI_BASE_URL, OPENAI_MODEL); use the guideline engine."
ALREADY_FINISHED = "This consultation has already finished."
NOT_YOURS = "Only the clinician who started the consultation (or an administrator) can cancel it."


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def llm_settings() -> Any:
    from consult.llm import LLMSettings

    return LLMSettings.from_env()


def llm_available() -> bool:
    try:
        return llm_settings() is not None
    except ValueError:
        return False  # a half-configured endpoint is reported by the start service


@transaction.atomic
def consultation_start(
    *,
    actor: Any,
    dossier: LesionDossier,
    engine: str = EngineChoice.GUIDELINE,
    max_rounds: int = 3,
    enqueue: bool = True,
) -> Consultation:
    """Queue a deliberation on the dossier's latest submitted snapshot."""
    dossier = LesionDossier.objects.get(pk=dossier.pk)  # the status as saved, not as passed
    snapshot = dossier.snapshots.order_by("-number").first()
    if dossier.status != DossierStatus.SUBMITTED or snapshot is None:
        raise ConsultationError(NOT_SUBMITTED)
    if engine == EngineChoice.LLM and llm_settings() is None:
        raise ConsultationError(NO_LLM)
    config = EngineConfig(max_rounds=max_rounds)  # validates the limits
    consultation = Consultation.objects.create(
        snapshot=snapshot,
        dossier=dossier,
        engine=engine,
        created_by=actor,
        config={
            "max_rounds": config.max_rounds,
            "agreement": config.agreement,
            "wall_clock_s": config.wall_clock_s,
        },
        prompt_versions=prompting.versions(),
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
        },
    )
    if enqueue:
        transaction.on_commit(lambda: _enqueue(consultation.pk))
    return consultation


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
def consultation_cancel(*, actor: Any, consultation: Consultation) -> Consultation:
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
        _append_events(consultation, [EngineEvent("cancelled", {"by": actor.pk})])
    consultation.save(update_fields=fields)
    audit_record(action="consultation.cancel", actor=actor, obj=consultation)
    return consultation


# --- the step store: persistence + broadcast ---------------------------------------------------


def _append_events(
    consultation: Consultation,
    events: list[EngineEvent],
    message: AgentMessage | None = None,
    *,
    save_seq: bool = True,
) -> list[ConsultationEvent]:
    """Give events the next sequence numbers (caller holds the consultation row lock; with
    ``save_seq=False`` the caller saves ``last_seq`` in its own update)."""
    return _append_event_groups(consultation, [(events, message)], save_seq=save_seq)


def _append_event_groups(
    consultation: Consultation,
    groups: list[tuple[list[EngineEvent], AgentMessage | None]],
    *,
    save_seq: bool = True,
) -> list[ConsultationEvent]:
    rows = []
    for events, message in groups:
        for event in events:
            consultation.last_seq += 1
            rows.append(
                ConsultationEvent(
                    consultation=consultation,
                    seq=consultation.last_seq,
                    kind=event.kind,
                    role=event.role,
                    round=event.round,
                    payload=event.payload,
                    message=message,
                )
            )
    ConsultationEvent.objects.bulk_create(rows)
    if save_seq:
        Consultation.objects.filter(pk=consultation.pk).update(last_seq=consultation.last_seq)
    ids = [(consultation.pk, row.seq) for row in rows]
    transaction.on_commit(lambda: _BROADCASTER.submit(_broadcast, ids))
    return rows


def _kind_of(key: str) -> tuple[int, str, str]:
    parts = key.split(".")
    if parts[0].startswith("r") and parts[0][1:].isdigit():
        round_no = int(parts[0][1:])
        kind = parts[1]
        role = (
            parts[2]
            if len(parts) > 2
            else ("coordinator" if kind in ("synthesis", "consensus") else "")
        )
        return round_no, kind, role
    return 0, parts[0], parts[1] if len(parts) > 1 else ""


def _derived_rows(consultation: Consultation, events: list[EngineEvent]) -> None:
    """The queryable records behind the events: evidence tree, rounds, conflicts."""
    nodes = [e for e in events if e.kind == "evidence.node"]
    EvidenceNode.objects.bulk_create(
        [
            EvidenceNode(
                consultation=consultation,
                node_id=n.payload["id"],
                parent_node_id=n.payload.get("parent", ""),
                kind=n.payload["kind"],
                text=n.payload["text"][:5000],
                refs=n.payload.get("refs", []),
                author_role=n.payload.get("author", n.role),
                round=n.round,
                status=n.payload.get("status", "proposed"),
            )
            for n in nodes
        ],
        ignore_conflicts=True,
    )
    for event in events:
        if event.kind == "residual":
            Round.objects.update_or_create(
                consultation=consultation, number=event.round, defaults={"residual": event.payload}
            )
        elif event.kind == "consensus":
            Round.objects.update_or_create(
                consultation=consultation,
                number=event.round,
                defaults={
                    "agreement": event.payload["agreement"],
                    "stopped": event.payload["stop"],
                },
            )
        elif event.kind == "conflict":
            Conflict.objects.create(
                consultation=consultation,
                round=event.round,
                between=event.payload["between"],
                kind=event.payload["kind"],
                score=event.payload["score"],
                resolution=event.payload["resolution"],
            )


def _message(consultation: Consultation, key: str, step: StepResult) -> AgentMessage:
    round_no, kind, role = _kind_of(key)
    usage = step.usage
    report = step.result.get("report") or {}
    return AgentMessage(
        consultation=consultation,
        step_key=key,
        round=round_no,
        role=role,
        kind=kind,
        payload=step.result,
        confidence=report.get("confidence"),
        evidence_refs=sorted(
            {ref for claim in report.get("claims", []) for ref in claim.get("evidence", [])}
        ),
        tokens_prompt=usage.prompt_tokens if usage else 0,
        tokens_completion=usage.completion_tokens if usage else 0,
        latency_ms=usage.latency_ms if usage else 0,
        cost_usd=Decimal(str(round(usage.cost_usd, 4))) if usage else Decimal(0),
        model_name=usage.model if usage else "",
        fallback=step.fallback[:300],
    )


# One thread per process renders and sends board events, in commit order, so that neither
# the template rendering nor the channel layer sits on the deliberation's critical path.
_BROADCASTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="board-broadcast")


def _broadcast(event_keys: list[tuple[int, int]]) -> None:
    try:
        broadcasts.board_events(event_keys=event_keys)
    finally:
        connections.close_all()  # this thread's own connection: never left open


def broadcasts_drain(timeout: float = 10.0) -> None:
    """Wait until what has been queued for the board so far is sent: for short-lived
    processes (the command line) that would otherwise exit before the last events go out."""
    _BROADCASTER.submit(lambda: None).result(timeout=timeout)


class DbStepStore:
    """Implements the engine's StepStore: one AgentMessage per completed step, its events
    numbered and saved in the same transaction, broadcast after commit.

    Writes happen behind the engine, in order, on one writer: ``commit`` queues the step and
    returns, so the next LLM call does not wait for the database; steps that finish while a
    write is in flight go together in the next transaction. ``drain`` waits for every queued
    step and raises the first write failure: the run saves no plan until its journal is
    written, and a crash before that only means the unwritten steps are redone on resume.
    A failed write also fails the next commit, so the engine stops at its next step.

    The journal of completed steps is read once, on first use: only the lease holder adds to
    it, and it does so through this store. The cancel flag is read with the row lock every
    write takes; the check before a step (and the engine's cancel watcher, every second while
    members wait on the LLM) queries it only when that reading is older than CANCEL_CHECK_S,
    and that query also renews the lease: a long LLM call does not let the lease lapse. A
    write or renewal that finds another owner raises LeaseLost."""

    def __init__(self, consultation_id: int) -> None:
        self.consultation_id = consultation_id
        self.owner = _worker_id()
        self._buffers: dict[tuple[str, int], list[str]] = {}
        self._flushed: dict[tuple[str, int], float] = {}
        self._journal: dict[str, dict[str, Any]] | None = None
        self._cancel_requested = False
        self._queue: list[tuple[str, StepResult]] = []
        self._writer: asyncio.Task[None] | None = None
        self._failure: Exception | None = None
        self._cancel_checked = 0.0  # time.monotonic() of the freshest reading of the flag
        self._cancel_check: asyncio.Task[None] | None = None

    def _read_journal(self) -> tuple[dict[str, dict[str, Any]], bool]:
        steps = dict(
            AgentMessage.objects.filter(consultation_id=self.consultation_id).values_list(
                "step_key", "payload"
            )
        )
        return steps, self._heartbeat()

    def _commit(self, steps: list[tuple[str, StepResult]]) -> bool:
        """Save the steps (except any an earlier attempt saved); return the cancel flag."""
        with transaction.atomic():
            consultation = Consultation.objects.select_for_update().get(pk=self.consultation_id)
            if consultation.lease_owner != self.owner:
                raise LeaseLost
            saved = set(
                AgentMessage.objects.filter(
                    consultation=consultation, step_key__in=[key for key, _ in steps]
                ).values_list("step_key", flat=True)
            )
            new = [(key, step) for key, step in steps if key not in saved]
            if not new:
                return consultation.cancel_requested
            messages = AgentMessage.objects.bulk_create(
                [_message(consultation, key, step) for key, step in new]
            )
            _append_event_groups(
                consultation,
                [(step.events, message) for (_, step), message in zip(new, messages, strict=True)],
                save_seq=False,
            )
            _derived_rows(consultation, [event for _, step in new for event in step.events])
            Consultation.objects.filter(pk=consultation.pk).update(
                last_seq=consultation.last_seq,
                lease_until=timezone.now() + LEASE,
                tokens_prompt=F("tokens_prompt") + sum(m.tokens_prompt for m in messages),
                tokens_completion=F("tokens_completion")
                + sum(m.tokens_completion for m in messages),
                cost_usd=F("cost_usd") + sum((m.cost_usd for m in messages), Decimal(0)),
            )
            return consultation.cancel_requested

    async def _journaled(self) -> dict[str, dict[str, Any]]:
        if self._journal is None:
            started = time.monotonic()
            self._journal, self._cancel_requested = await sync_to_async(self._read_journal)()
            self._cancel_checked = started
        return self._journal

    async def load(self, key: str) -> dict[str, Any] | None:
        return (await self._journaled()).get(key)

    async def commit(self, key: str, step: StepResult) -> None:
        for buffered in [k for k in self._buffers if k[0] in key]:
            await self._flush(buffered)
        journal = await self._journaled()
        if self._failure is not None:
            raise self._failure
        journal[key] = step.result
        self._queue.append((key, step))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())

    async def settle(self) -> None:
        """Wait until the writer is idle (every queued step written, or a write failed)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.wait([self._writer])

    async def drain(self) -> None:
        """Wait for every queued step to be written; raise the first write failure."""
        await self.settle()
        if self._failure is not None:
            raise self._failure

    async def _write(self) -> None:
        while self._queue and self._failure is None:
            batch, self._queue = self._queue, []
            started = time.monotonic()
            try:
                cancel = await sync_to_async(self._commit)(batch)
            except Exception as exc:  # noqa: BLE001 - re-raised by the next commit and by drain
                logger.warning(
                    "consultation %s: writing steps failed (%s)",
                    self.consultation_id,
                    type(exc).__name__,
                )
                self._failure = exc
                return
            self._cancel_requested = self._cancel_requested or cancel
            self._cancel_checked = max(self._cancel_checked, started)

    async def delta(self, *, role: str, round: int, text: str) -> None:
        # Token fragments are batched (~50 ms) so that streaming costs the run almost nothing;
        # whatever is still buffered goes out when the turn is committed.
        key = (role, round)
        self._buffers.setdefault(key, []).append(text)
        now = time.monotonic()
        if now - self._flushed.get(key, 0.0) >= DELTA_BATCH_S:
            await self._flush(key)
            self._flushed[key] = now

    async def _flush(self, key: tuple[str, int]) -> None:
        text = "".join(self._buffers.pop(key, []))
        if text:
            await broadcasts.board_delta_async(
                consultation_id=self.consultation_id, role=key[0], round=key[1], text=text
            )

    async def cancelled(self) -> bool:
        await self._journaled()
        stale = time.monotonic() - self._cancel_checked > CANCEL_CHECK_S
        if stale and not self._cancel_requested:
            if self._cancel_check is None:
                self._cancel_check = asyncio.create_task(self._check_cancel())
            await self._cancel_check
        return self._cancel_requested

    async def _check_cancel(self) -> None:
        try:
            started = time.monotonic()
            flag = await sync_to_async(self._heartbeat)()
            self._cancel_requested = self._cancel_requested or flag
            self._cancel_checked = max(self._cancel_checked, started)
        finally:
            self._cancel_check = None

    def _heartbeat(self) -> bool:
        """Renew the lease (raising LeaseLost if it is no longer ours); return the cancel
        flag."""
        mine = Consultation.objects.filter(pk=self.consultation_id, lease_owner=self.owner)
        if not mine.update(lease_until=timezone.now() + LEASE):
            raise LeaseLost
        return bool(mine.values_list("cancel_requested", flat=True).first())


# --- running --------------------------------------------------------------------------------


def _claim(consultation_id: int) -> Consultation | None:
    """Take the run's lease, unless it finished or another live worker holds it."""
    with transaction.atomic():
        consultation = Consultation.objects.select_for_update().get(pk=consultation_id)
        now = timezone.now()
        if consultation.is_finished:
            return None
        held = (
            consultation.lease_owner
            and consultation.lease_until
            and consultation.lease_until > now
            and consultation.lease_owner != _worker_id()
            and not _owner_dead(consultation.lease_owner)
        )
        if held:
            return None
        resumed = consultation.status == ConsultationStatus.RUNNING
        consultation.status = ConsultationStatus.RUNNING
        consultation.started_at = consultation.started_at or now
        consultation.lease_owner = _worker_id()
        consultation.lease_until = now + LEASE
        consultation.save(update_fields=["status", "started_at", "lease_owner", "lease_until"])
        _append_events(
            consultation, [EngineEvent("status", {"status": "running", "resumed": resumed})]
        )
        return consultation


def _owner_dead(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another machine: only the lease's expiry can tell
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _finish(
    consultation_id: int,
    status: str,
    *,
    error: str = "",
    plan: dict[str, Any] | None = None,
    kb_versions: list[int] | None = None,
) -> None:
    with transaction.atomic():
        consultation = Consultation.objects.select_for_update().get(pk=consultation_id)
        if consultation.is_finished:
            return
        if plan is not None:
            Plan.objects.create(
                consultation=consultation, payload=plan, content_hash=payload_hash(plan)
            )
        consultation.status = status
        consultation.finished_at = timezone.now()
        consultation.error = error[:500]
        consultation.lease_owner = ""
        consultation.lease_until = None
        if kb_versions is not None:
            consultation.kb_versions = sorted(kb_versions)
        consultation.save()
        _append_events(consultation, [EngineEvent("status", {"status": status, "error": error})])
        audit_record(
            action=f"consultation.{status}",
            obj=consultation,
            payload={"plan_hash": consultation.plan.content_hash if plan else None},
        )
        case_id = LesionDossier.objects.values_list("case_id", flat=True).get(
            pk=consultation.dossier_id
        )
        notice = {
            "user_id": consultation.created_by_id,
            "level": "success" if status == "completed" else "warning",
            "text": f"Consultation on {case_id}: {status}.",
        }
        # After the board's last events, on their thread: the run is done once it is saved.
        transaction.on_commit(lambda: _BROADCASTER.submit(_notify, notice))


def _notify(notice: dict[str, Any]) -> None:
    try:
        broadcasts.user_notify(**notice)
    except Exception:  # noqa: BLE001 - the result is saved; the dashboard shows it anyway
        logger.warning("finish notice for user %s not delivered", notice["user_id"])


def consultation_run(*, consultation_id: int) -> str:
    """Run (or resume) a consultation to its end. Safe to call twice: a finished run is left
    alone, and completed steps are read back rather than redone."""
    consultation = _claim(consultation_id)
    if consultation is None:
        return "skipped"
    retriever = DbRetriever()
    try:
        plan = _deliberate_through_dropped_connections(consultation, retriever)
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
    _finish(
        consultation_id,
        ConsultationStatus.COMPLETED,
        plan=plan.model_dump(mode="json"),
        kb_versions=list(retriever.used_version_ids),
    )
    return "completed"


def _deliberate_through_dropped_connections(
    consultation: Consultation, retriever: DbRetriever
) -> Any:
    """Deliberate; when the database connection drops, reconnect and resume from the saved
    steps a few times before giving up (the pauses stay inside the lease, so it stays ours)."""
    for delay in (*DB_RETRY_DELAYS, None):
        try:
            return _deliberate(consultation, retriever)
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


def _deliberate(consultation: Consultation, retriever: DbRetriever) -> Any:
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

        llm = LLMClient(
            settings, Budget(tokens=settings.token_budget, cost_usd=settings.cost_budget_usd)
        )
        provider = LLMProvider(llm)
    store = DbStepStore(consultation.pk)
    Consultation.objects.filter(pk=consultation.pk).update(engine_label=provider.name)
    deliberation = Deliberation(
        case=case,
        facts=case_facts(case),
        staging=staging_summary(derive_all(case)),
        retriever=retriever,
        store=store,
        provider=provider,
        config=EngineConfig(**consultation.config),
        labels=fact_labels(),
    )

    async def run() -> Any:
        try:
            plan = await deliberation.run()
            await store.drain()  # no plan is saved before the journal behind it
            return plan
        finally:
            await store.settle()  # whatever happened, finished steps are written for a resume
            if llm is not None:
                await llm.aclose()
            # The step store's queries ran on asgiref's worker thread: close its connection.
            await sync_to_async(connections.close_all)()

    return run_coroutine(run)


def consultations_recover(*, queued: bool = True) -> list[int]:
    """Requeue runs whose worker died or whose lease lapsed (when a worker starts, and every
    minute while workers run); with ``queued``, also runs queued for over two minutes (their
    message may have been lost with the broker). A duplicate message is harmless: the claim
    skips a run that is already taken or finished."""
    from consult.tasks import consultation_run as task

    now = timezone.now()
    stale = []
    for consultation in Consultation.objects.filter(status=ConsultationStatus.RUNNING):
        if (
            consultation.lease_until is None
            or consultation.lease_until < now
            or _owner_dead(consultation.lease_owner)
        ):
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
