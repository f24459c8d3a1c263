"""The step store: the engine's StepStore over the database. One AgentMessage per completed
step, its events numbered and saved in the same transaction (with the records derived from
them: evidence tree, rounds, conflicts), broadcast after commit; written behind the engine
by one writer, under the run's lease."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, assert_never

from asgiref.sync import sync_to_async
from django.db import transaction
from django.db.models import F

from clinical.vocab import EventKind
from consult import broadcasts
from consult.engine.protocols import EngineEvent, Step, StepResult
from consult.journal import lease
from consult.journal.lease import LeaseLost
from consult.journal.numbering import event_groups_append
from consult.models import AgentMessage, Conflict, Consultation, EvidenceNode, Round

logger = logging.getLogger(__name__)

DELTA_BATCH_S = 0.05
CANCEL_CHECK_S = 0.5


def _derived_rows(consultation: Consultation, events: list[EngineEvent]) -> None:
    """The queryable records behind the events: evidence tree, rounds, conflicts."""
    nodes: list[EvidenceNode] = []
    conflicts: list[Conflict] = []
    for event in events:
        match event.kind:
            case EventKind.EVIDENCE_NODE:
                nodes.append(
                    EvidenceNode(
                        consultation=consultation,
                        node_id=event.payload["id"],
                        parent_node_id=event.payload.get("parent", ""),
                        kind=event.payload["kind"],
                        text=event.payload["text"][:5000],
                        refs=event.payload.get("refs", []),
                        author_role=event.payload.get("author", event.role),
                        round=event.round,
                        status=event.payload.get("status", "proposed"),
                    )
                )
            case EventKind.RESIDUAL:
                Round.objects.update_or_create(
                    consultation=consultation,
                    number=event.round,
                    defaults={"residual": event.payload},
                )
            case EventKind.CONSENSUS:
                Round.objects.update_or_create(
                    consultation=consultation,
                    number=event.round,
                    defaults={
                        "agreement": event.payload["agreement"],
                        "stopped": event.payload["stop"],
                    },
                )
            case EventKind.CONFLICT:
                conflicts.append(
                    Conflict(
                        consultation=consultation,
                        round=event.round,
                        between=event.payload["between"],
                        kind=event.payload["kind"],
                        score=event.payload["score"],
                        resolution=event.payload["resolution"],
                    )
                )
            case (
                EventKind.STATUS
                | EventKind.CANCELLED
                | EventKind.INTAKE
                | EventKind.TRIAGE
                | EventKind.RETRIEVAL
                | EventKind.MESSAGE
                | EventKind.GROUNDING
                | EventKind.CRITIQUE
                | EventKind.DRAFT
                | EventKind.VOTE
                | EventKind.GATE
                | EventKind.REVIEW
                | EventKind.PLAN
            ):
                pass  # the event is the whole record (its step's message holds the rest)
            case _:
                assert_never(event.kind)
    EvidenceNode.objects.bulk_create(nodes, ignore_conflicts=True)
    Conflict.objects.bulk_create(conflicts)


def _message(consultation: Consultation, step: Step, result: StepResult) -> AgentMessage:
    usage = result.usage
    report = result.result.get("report") or {}
    return AgentMessage(
        consultation=consultation,
        step_key=step.key,
        round=step.round,
        role=step.role,
        kind=step.kind,
        payload=result.result,
        confidence=report.get("confidence"),
        evidence_refs=sorted(
            {ref for claim in report.get("claims", []) for ref in claim.get("evidence", [])}
        ),
        tokens_prompt=usage.prompt_tokens if usage else 0,
        tokens_completion=usage.completion_tokens if usage else 0,
        latency_ms=usage.latency_ms if usage else 0,
        cost_usd=Decimal(str(round(usage.cost_usd, 4))) if usage else Decimal(0),
        model_name=usage.model if usage else "",
        fallback=result.fallback[:300],
    )


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
        self.owner = lease.worker_id()
        self._buffers: dict[tuple[str, int], list[str]] = {}
        self._flushed: dict[tuple[str, int], float] = {}
        self._journal: dict[str, dict[str, Any]] | None = None
        self._cancel_requested = False
        self._queue: list[tuple[Step, StepResult]] = []
        self._writer: asyncio.Task[None] | None = None
        self._failure: Exception | None = None
        self._cancel_checked = 0.0  # time.monotonic() of the freshest reading of the flag
        self._cancel_check: asyncio.Task[None] | None = None
        # The run's end, written with the last steps (finish); _finishing while it is written.
        self._final: Callable[[Consultation], None] | None = None
        self._finishing: Callable[[Consultation], None] | None = None

    def _read_journal(self) -> tuple[dict[str, dict[str, Any]], bool]:
        steps = dict(
            AgentMessage.objects.filter(consultation_id=self.consultation_id).values_list(
                "step_key", "payload"
            )
        )
        return steps, self._heartbeat()

    def _commit(self, steps: list[tuple[Step, StepResult]]) -> bool:
        """Save the steps (except any an earlier attempt saved); return the cancel flag."""
        with transaction.atomic():
            consultation = Consultation.objects.select_for_update().get(pk=self.consultation_id)
            if consultation.lease_owner != self.owner:
                raise LeaseLost
            saved = set(
                AgentMessage.objects.filter(
                    consultation=consultation, step_key__in=[step.key for step, _ in steps]
                ).values_list("step_key", flat=True)
            )
            new = [(step, result) for step, result in steps if step.key not in saved]
            if new:
                self._save(consultation, new)
            if self._finishing is not None:
                self._finishing(consultation)
            return consultation.cancel_requested

    @staticmethod
    def _save(consultation: Consultation, new: list[tuple[Step, StepResult]]) -> None:
        messages = AgentMessage.objects.bulk_create(
            [_message(consultation, step, result) for step, result in new]
        )
        event_groups_append(
            consultation=consultation,
            groups=[
                (result.events, message) for (_, result), message in zip(new, messages, strict=True)
            ],
            save_seq=False,
        )
        _derived_rows(consultation, [event for _, result in new for event in result.events])
        Consultation.objects.filter(pk=consultation.pk).update(
            last_seq=consultation.last_seq,
            lease_until=lease.lease_until(),
            tokens_prompt=F("tokens_prompt") + sum(m.tokens_prompt for m in messages),
            tokens_completion=F("tokens_completion") + sum(m.tokens_completion for m in messages),
            cost_usd=F("cost_usd") + sum((m.cost_usd for m in messages), Decimal(0)),
        )

    async def _journaled(self) -> dict[str, dict[str, Any]]:
        if self._journal is None:
            started = time.monotonic()
            self._journal, self._cancel_requested = await sync_to_async(self._read_journal)()
            self._cancel_checked = started
        return self._journal

    async def load(self, step: Step) -> dict[str, Any] | None:
        return (await self._journaled()).get(step.key)

    async def commit(self, step: Step, result: StepResult) -> None:
        # Whatever the member streamed and is still buffered goes out before its turn's events.
        for buffered in [k for k in self._buffers if k[0] == step.role]:
            await self._flush(buffered)
        journal = await self._journaled()
        if self._failure is not None:
            raise self._failure
        journal[step.key] = result.result
        self._queue.append((step, result))
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

    async def finish(self, final: Callable[[Consultation], None]) -> None:
        """Write every queued step and then ``final`` (given the locked consultation row, the
        run's end: its plan, status and audit record) in one transaction, and wait for it:
        ending the run costs no transaction of its own after the journal's last one. Raises
        the first write failure."""
        if self._failure is not None:
            raise self._failure
        self._final = final
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        await self.drain()

    async def _write(self) -> None:
        while (self._queue or self._final is not None) and self._failure is None:
            batch, self._queue = self._queue, []
            self._finishing, self._final = self._final, None
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
            finally:
                self._finishing = None
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
        if stale and not self._cancel_requested and self._writing():
            # A write is in flight: it reads the flag under the row lock (and renews the lease)
            # as it commits, and a check queued behind it on the same database thread would
            # only wait for it: the next step would start that much later.
            return self._cancel_requested
        if stale and not self._cancel_requested:
            if self._cancel_check is None:
                self._cancel_check = asyncio.create_task(self._check_cancel())
            await self._cancel_check
        return self._cancel_requested

    def _writing(self) -> bool:
        return self._writer is not None and not self._writer.done()

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
        return lease.lease_renew(consultation_id=self.consultation_id, owner=self.owner)
