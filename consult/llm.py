"""The LLM client: structured (JSON Schema) chat completions against any OpenAI-compatible
endpoint, with retries, a per-consultation budget and usage accounting. The only module that
imports ``openai``."""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import math
import os
import random
import re
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal, TypeVar

import pydantic
from openai import (
    APIConnectionError,
    APIError,
    APIStatusError,
    APITimeoutError,
    AsyncOpenAI,
    DefaultAsyncHttpxClient,
    OpenAIError,
)
from openai.types.chat import ChatCompletionMessageParam
from openai.types.shared_params import ResponseFormatJSONObject, ResponseFormatJSONSchema

logger = logging.getLogger(__name__)

Mode = Literal["json_schema", "json_object"]
ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)
DeltaCallback = Callable[[str], Awaitable[None]]

# Backoff between retries when the server gives no Retry-After: base * 2**n, capped, with
# jitter so that the roles of a consultation (which fail together) do not retry in lockstep.
_MAX_BACKOFF_S = 8.0
# A server that asks us to wait longer than this will not be waited for: a board turn that
# stalls for minutes is worse than the guideline fallback the engine takes on LLMUnavailable.
_MAX_RETRY_AFTER_S = 60.0
# The invalid reply quoted back in the repair request: enough for the model to see its mistake,
# bounded so that a runaway reply does not double the cost of the repair.
_REPAIR_QUOTE_CHARS = 4000
_MAX_REPORTED_ERRORS = 20
# The SDK refuses to start without a key; local servers (vLLM, llama.cpp, Ollama) need none.
_NO_KEY_PLACEHOLDER = "not-needed"

# These instructions belong to the transport (how to get JSON back), not to the clinical
# prompts, which live in consult/engine/prompts/ and reach this module as `system` / `user`.
_JSON_OBJECT_INSTRUCTIONS = (
    "\n\nReply with one JSON object and nothing else (no prose, no code fences). "
    "It must conform to this JSON Schema:\n"
)
_REPAIR_INSTRUCTIONS = (
    "\n\n---\nYour previous reply could not be used: it is not a valid JSON object for the "
    "required schema.\nValidation errors:\n{errors}\n\nYour previous reply{truncated}:\n"
    "<<<\n{reply}\n>>>\n\n"
    "Reply again with the corrected JSON object only: no prose, no code fences."
)


# One counting rule wherever a token count is not reported by a server: the client's estimate
# when a server sends no usage, the prompt-size estimate of a round before it starts, and the
# test LLM server's reported usage (tests and `make bench` alike). About four characters per
# token in English text; exact counts would need the model's own tokenizer.
CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """Tokens of ``text`` by the one rule: characters ÷ 4."""
    return len(text) // CHARS_PER_TOKEN


# --- errors -------------------------------------------------------------------------------------
class LLMError(Exception):
    """Base of everything the client raises. ``usage`` is what the failed call consumed
    (tokens of requests that did get answered, attempts), so the caller can record it."""

    usage: LLMUsage | None = None


class LLMInvalidOutput(LLMError):
    """The reply is still not valid for the schema after the one repair request."""

    def __init__(self, raw: str, errors: list[str]) -> None:
        # raw and errors are the args so that the exception pickles (Celery results);
        # __str__/__repr__ below keep the reply, which holds clinical text, out of logs.
        super().__init__(raw, errors)
        self.raw = raw
        self.errors = list(errors)

    def __str__(self) -> str:
        return (
            "reply still invalid for the schema after one repair request "
            f"({len(self.errors)} validation error(s))"
        )

    def __repr__(self) -> str:
        return f"LLMInvalidOutput({len(self.raw)} chars, {len(self.errors)} error(s))"


class LLMUnavailable(LLMError):
    """Retries exhausted, timeout, connection failure, a non-retryable HTTP error, or a stream
    that broke after deltas were shown."""


class LLMBudgetExceeded(LLMError):
    """The consultation's token or cost budget is spent."""


# --- settings and accounting ---------------------------------------------------------------------
@dataclass(frozen=True)
class LLMUsage:
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost_usd: float
    attempts: int
    mode: Mode
    repaired: bool

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    api_key: str = field(repr=False)  # never in a repr, hence never in a log or traceback
    model: str
    role_models: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    max_retries: int = 3
    token_budget: int = 200_000
    cost_budget_usd: float = 5.0
    price_prompt_per_1k: float = 0.0
    price_completion_per_1k: float = 0.0
    # First backoff delay; not read from the environment. Tests shrink it to stay fast.
    backoff_base_s: float = 0.5

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> LLMSettings | None:
        """LLM mode needs both OPENAI_BASE_URL and OPENAI_MODEL; neither → None (the guideline
        engine). Half a configuration or a malformed value is a ValueError naming the variable:
        failing at start-up beats discovering it in the middle of a consultation."""
        base_url = _env_str(env, "OPENAI_BASE_URL")
        model = _env_str(env, "OPENAI_MODEL")
        if not base_url and not model:
            return None
        # No default to api.openai.com: patient data goes to a third party only when someone
        # wrote that address down.
        if not base_url:
            raise ValueError("OPENAI_BASE_URL is required when OPENAI_MODEL is set")
        if not model:
            raise ValueError("OPENAI_MODEL is required when OPENAI_BASE_URL is set")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"OPENAI_BASE_URL must be an http(s) URL, got {base_url!r}")
        return cls(
            base_url=base_url,
            api_key=_env_str(env, "OPENAI_API_KEY"),
            model=model,
            role_models=_parse_role_models(_env_str(env, "OPENAI_ROLE_MODELS")),
            timeout_s=_env_float(env, "OPENAI_TIMEOUT_S", 60.0, allow_zero=False),
            max_retries=_env_int(env, "OPENAI_MAX_RETRIES", 3, minimum=0),
            token_budget=_env_int(env, "LLM_TOKEN_BUDGET", 200_000, minimum=1),
            cost_budget_usd=_env_float(env, "LLM_COST_BUDGET_USD", 5.0, allow_zero=False),
            price_prompt_per_1k=_env_float(env, "LLM_PRICE_PROMPT_PER_1K", 0.0, allow_zero=True),
            price_completion_per_1k=_env_float(
                env, "LLM_PRICE_COMPLETION_PER_1K", 0.0, allow_zero=True
            ),
        )


# The variables LLMSettings.from_env reads.
LLM_ENV = (
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_ROLE_MODELS",
    "OPENAI_TIMEOUT_S",
    "OPENAI_MAX_RETRIES",
    "LLM_TOKEN_BUDGET",
    "LLM_COST_BUDGET_USD",
    "LLM_PRICE_PROMPT_PER_1K",
    "LLM_PRICE_COMPLETION_PER_1K",
)


def llm_settings() -> LLMSettings | None:
    """The LLM endpoint of this process's environment, parsed once (every dossier page
    asks whether there is one); a ValueError names a misconfigured variable."""
    return _parsed(tuple(os.environ.get(name, "") for name in LLM_ENV))


@functools.lru_cache(maxsize=4)
def _parsed(values: tuple[str, ...]) -> LLMSettings | None:
    # Keyed by the values themselves: a changed environment (a test, a reconfigured worker)
    # is parsed afresh, never served stale.
    return LLMSettings.from_env(dict(zip(LLM_ENV, values, strict=True)))


def _env_str(env: Mapping[str, str], name: str) -> str:
    # An empty variable (`FOO=` in a Compose file) means unset.
    return env.get(name, "").strip()


def _env_float(env: Mapping[str, str], name: str, default: float, *, allow_zero: bool) -> float:
    raw = _env_str(env, name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = "≥ 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {raw!r}")
    return value


def _env_int(env: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = _env_str(env, name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be ≥ {minimum}, got {raw!r}")
    return value


def _parse_role_models(raw: str) -> dict[str, str]:
    """``"safety=gpt-4.1, surgeon=qwen2.5:32b"`` → ``{"safety": "gpt-4.1", ...}``."""
    role_models: dict[str, str] = {}
    for entry in raw.split(","):
        if not entry.strip():
            continue
        role, sep, model = entry.partition("=")
        role, model = role.strip(), model.strip()
        if not sep or not role or not model:
            raise ValueError(
                f"OPENAI_ROLE_MODELS entries must be role=model, got {entry.strip()!r}"
            )
        role_models[role] = model
    return role_models


class Budget:
    """A consultation's token and cost allowance, shared by its concurrently running roles.

    A check happens before each request and a charge after it, so roles already in flight when
    the budget runs out may overshoot it by their own replies; the next call is refused."""

    def __init__(self, *, tokens: int, cost_usd: float) -> None:
        if tokens <= 0 or cost_usd <= 0:
            raise ValueError("a budget needs tokens > 0 and cost_usd > 0")
        self.tokens = tokens
        self.cost_usd = cost_usd
        self.tokens_used = 0
        self.cost_used = 0.0
        # The event loop alone would make these methods atomic (they never await); the lock
        # keeps that true if a budget is ever shared with a worker thread.
        self._lock = threading.Lock()

    def tokens_left(self) -> int:
        with self._lock:
            if self.cost_used >= self.cost_usd:
                return 0
            return max(self.tokens - self.tokens_used, 0)

    def check(self) -> None:
        with self._lock:
            if self.tokens_used >= self.tokens or self.cost_used >= self.cost_usd:
                raise LLMBudgetExceeded(self._describe())

    def charge(self, usage: LLMUsage) -> None:
        with self._lock:
            self.tokens_used += usage.prompt_tokens + usage.completion_tokens
            self.cost_used += usage.cost_usd
            if self.tokens_used > self.tokens or self.cost_used > self.cost_usd:
                raise LLMBudgetExceeded(self._describe())

    def _describe(self) -> str:
        return (
            f"consultation budget spent: {self.tokens_used}/{self.tokens} tokens, "
            f"${self.cost_used:.4f}/${self.cost_usd:.4f}"
        )


@dataclass
class _Tally:
    """What one complete_structured call has consumed so far, over all its requests."""

    model: str
    started: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 0
    mode: Mode = "json_schema"

    def add(self, usage: LLMUsage) -> None:
        self.model = usage.model
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost_usd += usage.cost_usd

    def usage(self, *, repaired: bool = False) -> LLMUsage:
        return LLMUsage(
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            # Wall time of the whole call (retries, backoff and repair included): what the
            # board waited for this message.
            latency_ms=(time.monotonic() - self.started) * 1000,
            cost_usd=self.cost_usd,
            attempts=self.attempts,
            mode=self.mode,
            repaired=repaired,
        )


@dataclass(frozen=True)
class _Reply:
    content: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool


class _NoRetry(Exception):
    """A failure not worth another attempt: a stream that broke after its deltas reached the
    board (a retry would replay text the board already shows; the engine fails the turn and may
    redo it whole), or a server answering 200 with something that is not JSON."""


# --- the client ----------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """The SDK's default verified TLS context, built once per process: loading the CA
    certificates takes 20-50 ms, which every consultation's client would otherwise pay before
    its first call. An SSLContext may be shared between threads and event loops."""
    from httpx2 import create_ssl_context  # the SDK's own HTTP library

    return create_ssl_context()


class LLMClient:
    def __init__(self, settings: LLMSettings, budget: Budget, *, http_client: Any = None) -> None:
        self._settings = settings
        self._budget = budget
        self._owns_http_client = http_client is None
        if http_client is None:
            http_client = DefaultAsyncHttpxClient(verify=_tls_context())
        self._openai = AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or _NO_KEY_PLACEHOLDER,
            timeout=settings.timeout_s,
            # We retry ourselves: the SDK's loop cannot tell us how many attempts a successful
            # call took, waits ≥ 0.5 s even on `Retry-After: 0`, and we must decide per attempt
            # whether a stream already showed text on the board.
            max_retries=0,
            http_client=http_client,
        )
        # Flipped for good the first time the server rejects json_schema: a server that does
        # not support it will not start supporting it mid-consultation.
        self._json_schema_supported = True

    def model_for(self, role: str) -> str:
        return self._settings.role_models.get(role, self._settings.model)

    def budget_left(self) -> int:
        """Tokens of the consultation's budget not spent yet (0 when spent, or when its cost
        allowance is)."""
        return self._budget.tokens_left()

    async def aclose(self) -> None:
        # An http_client passed in belongs to the caller, who closes it.
        if self._owns_http_client:
            await self._openai.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def complete_structured(
        self,
        *,
        role: str,
        system: str,
        user: str,
        schema: type[ModelT],
        on_delta: DeltaCallback | None = None,
    ) -> tuple[ModelT, LLMUsage]:
        """The reply parsed into ``schema``. Streams content deltas to ``on_delta`` when given.
        An invalid reply gets one repair request; every answered request is charged to the
        budget. Raises LLMBudgetExceeded, LLMUnavailable or LLMInvalidOutput (each carrying
        ``usage``)."""
        tally = _Tally(model=self.model_for(role), started=time.monotonic())
        try:
            self._budget.check()
            raw = await self._request(
                role=role, system=system, user=user, schema=schema, on_delta=on_delta, tally=tally
            )
            parsed, errors = _parse(schema, raw)
            if parsed is not None:
                return parsed, tally.usage()

            logger.warning(
                "llm reply invalid, requesting a repair: role=%s model=%s errors=%d",
                role, tally.model, len(errors),
            )  # fmt: skip
            self._budget.check()
            # Non-streaming: the board has already shown the first reply's deltas, and the
            # engine publishes the validated result as one message anyway.
            raw = await self._request(
                role=role,
                system=system,
                user=user + _repair_note(raw, errors),
                schema=schema,
                on_delta=None,
                tally=tally,
            )
            parsed, errors = _parse(schema, raw)
            if parsed is not None:
                return parsed, tally.usage(repaired=True)
            logger.warning(
                "llm reply still invalid after repair: role=%s model=%s errors=%d",
                role, tally.model, len(errors),
            )  # fmt: skip
            raise LLMInvalidOutput(raw, errors)
        except LLMError as exc:
            if exc.usage is None:
                exc.usage = tally.usage()
            raise

    # --- one request, with retries and the json_object fallback -------------------------------
    async def _request(
        self,
        *,
        role: str,
        system: str,
        user: str,
        schema: type[pydantic.BaseModel],
        on_delta: DeltaCallback | None,
        tally: _Tally,
    ) -> str:
        model = self.model_for(role)
        retries = 0
        while True:
            mode: Mode = "json_schema" if self._json_schema_supported else "json_object"
            tally.mode = mode
            tally.attempts += 1
            started = time.monotonic()
            try:
                if on_delta is None:
                    reply = await self._complete(model, mode, system, user, schema)
                else:
                    reply = await self._stream(model, mode, system, user, schema, on_delta)
            except _NoRetry as exc:
                logger.warning(
                    "llm request failed, not retried: role=%s model=%s attempt=%d reason=%s",
                    role, model, tally.attempts, exc,
                )  # fmt: skip
                raise LLMUnavailable(f"{model}: {exc}") from exc
            except OpenAIError as exc:
                if mode == "json_schema" and _rejects_json_schema(exc):
                    self._json_schema_supported = False
                    logger.warning(
                        "llm server rejects json_schema, falling back to json_object: model=%s",
                        model,
                    )
                    continue
                retryable, retry_after, what = _classify(exc)
                logger.warning(
                    "llm request failed: role=%s model=%s mode=%s attempt=%d status=%s",
                    role, model, mode, tally.attempts, what,
                )  # fmt: skip
                if not retryable:
                    raise LLMUnavailable(f"{model}: {what} (not retryable)") from exc
                if retries >= self._settings.max_retries:
                    raise LLMUnavailable(
                        f"{model}: {what} after {tally.attempts} attempt(s)"
                    ) from exc
                if retry_after is not None and retry_after > _MAX_RETRY_AFTER_S:
                    raise LLMUnavailable(
                        f"{model}: {what}, server asks to wait {retry_after:.0f} s"
                    ) from exc
                delay = retry_after if retry_after is not None else self._backoff(retries)
                retries += 1
                await asyncio.sleep(delay)
                continue

            usage = LLMUsage(
                model=reply.model or model,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                latency_ms=(time.monotonic() - started) * 1000,
                cost_usd=self._cost(reply.prompt_tokens, reply.completion_tokens),
                attempts=1,
                mode=mode,
                repaired=False,
            )
            logger.info(
                "llm request: role=%s model=%s mode=%s attempt=%d status=ok prompt_tokens=%d "
                "completion_tokens=%d%s latency_ms=%.0f",
                role, usage.model, mode, tally.attempts, usage.prompt_tokens,
                usage.completion_tokens, " (estimated)" if reply.estimated else "",
                usage.latency_ms,
            )  # fmt: skip
            tally.add(usage)
            self._budget.charge(usage)
            return reply.content

    async def _complete(
        self, model: str, mode: Mode, system: str, user: str, schema: type[pydantic.BaseModel]
    ) -> _Reply:
        try:
            completion = await self._openai.chat.completions.create(
                model=model,
                messages=_messages(mode, system, user, schema),
                response_format=_response_format(mode, schema),
            )
        except ValueError as exc:  # a 200 whose body is not JSON: a proxy, not an LLM server
            raise _NoRetry("response body is not JSON") from exc
        content = ""
        if completion.choices:
            content = completion.choices[0].message.content or ""
        if completion.usage is not None:
            return _Reply(
                content=content,
                model=completion.model or "",
                prompt_tokens=completion.usage.prompt_tokens,
                completion_tokens=completion.usage.completion_tokens,
                estimated=False,
            )
        return _estimated(content, completion.model or "", system, user)

    async def _stream(
        self,
        model: str,
        mode: Mode,
        system: str,
        user: str,
        schema: type[pydantic.BaseModel],
        on_delta: DeltaCallback,
    ) -> _Reply:
        stream = await self._openai.chat.completions.create(
            model=model,
            messages=_messages(mode, system, user, schema),
            response_format=_response_format(mode, schema),
            stream=True,
            stream_options={"include_usage": True},
        )
        parts: list[str] = []
        served_model = ""
        prompt_tokens: int | None = None
        completion_tokens: int | None = None
        try:
            chunks = aiter(stream)
            while True:
                try:
                    chunk = await anext(chunks)
                except StopAsyncIteration:
                    break
                except OpenAIError as exc:
                    # Before the first delta nothing is on the board yet: the retry loop may
                    # try again. After it, the turn has failed (see _NoRetry).
                    if parts:
                        raise _NoRetry(
                            f"stream broke after {len(parts)} deltas: {type(exc).__name__}"
                        ) from exc
                    raise
                except ValueError as exc:  # an SSE event that is not JSON
                    raise _NoRetry("stream sent an event that is not JSON") from exc
                served_model = chunk.model or served_model
                if chunk.usage is not None:
                    prompt_tokens = chunk.usage.prompt_tokens
                    completion_tokens = chunk.usage.completion_tokens
                for choice in chunk.choices or ():
                    text = choice.delta.content if choice.delta is not None else None
                    if text:
                        parts.append(text)
                        # Outside the try above: the callback's own errors propagate as-is.
                        await on_delta(text)
        finally:
            await stream.close()
        content = "".join(parts)
        if prompt_tokens is None or completion_tokens is None:
            # Some servers ignore include_usage (or the stream was cut before its last chunk).
            return _estimated(content, served_model, system, user)
        return _Reply(
            content=content,
            model=served_model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            estimated=False,
        )

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        s = self._settings
        return (
            prompt_tokens * s.price_prompt_per_1k + completion_tokens * s.price_completion_per_1k
        ) / 1000

    def _backoff(self, retries: int) -> float:
        delay = min(self._settings.backoff_base_s * 2.0**retries, _MAX_BACKOFF_S)
        return delay * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not cryptography


# --- request building and reply parsing ---------------------------------------------------------
# Schema keywords that only annotate (the prompts say what each field means): sent with every
# call they cost tokens (a third to a half of a schema) and constrain nothing.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
# Keywords whose value maps names to schemas (not a schema itself).
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


@lru_cache(maxsize=64)
def wire_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The JSON Schema sent for ``schema``, minimal: its constraints (types, enums, bounds,
    required) without annotations, every ``$ref`` written in place (no ``$defs`` block to read
    across), an enum without its redundant ``type``, an optional field as its type alone (a
    null is still accepted: it is the field's default), the top-level title kept as the
    message's name. It is sent with every call and paid for each time; pydantic still
    validates every reply against the model itself."""
    full = schema.model_json_schema()
    defs = full.get("$defs", {})
    stripped: dict[str, Any] = _strip(_inline(full, defs))
    stripped.pop("$defs", None)
    if "title" in full:
        stripped = {"title": full["title"], **stripped}
    return stripped


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    """``node`` with each ``{"$ref": "#/$defs/X"}`` replaced by X (the engine's schemas are
    not recursive) and ``anyOf [X, null]`` by X."""
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return _inline({**rest, **kept[0]}, defs)
    return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}


def _strip(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        if key == "type" and "enum" in node:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _strip(sub) for name, sub in value.items()}
        else:
            out[key] = _strip(value)
    return out


def _response_format(
    mode: Mode, schema: type[pydantic.BaseModel]
) -> ResponseFormatJSONSchema | ResponseFormatJSONObject:
    if mode == "json_object":
        return {"type": "json_object"}
    return {
        "type": "json_schema",
        "json_schema": {
            "name": re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64],
            "schema": wire_schema(schema),
            # Not strict: strict mode demands every property in `required` and
            # `additionalProperties: false` everywhere, and rejects keywords pydantic emits
            # (`default`, some formats). Making the engine's schemas, full of optional fields with
            # defaults, fit would mean rewriting them into "everything required, nullable",
            # which changes what the model is asked for, and many OpenAI-compatible servers do
            # not implement strict at all. The schema still guides decoding; pydantic validates
            # every reply here, and one repair request covers the rest.
            "strict": False,
        },
    }


def _messages(
    mode: Mode, system: str, user: str, schema: type[pydantic.BaseModel]
) -> list[ChatCompletionMessageParam]:
    if mode == "json_object":
        # JSON mode guarantees JSON but not its shape, so the model must read the schema.
        # (OpenAI also requires the word "JSON" in the messages for this mode.)
        schema_text = json.dumps(wire_schema(schema), ensure_ascii=False, separators=(",", ":"))
        system = system + _JSON_OBJECT_INSTRUCTIONS + schema_text
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _repair_note(raw: str, errors: list[str]) -> str:
    # Appended to the original user message instead of sent as a further turn: the model needs
    # the case to fix the content, and some local chat templates reject two user turns in a row.
    quoted = raw[:_REPAIR_QUOTE_CHARS]
    return _REPAIR_INSTRUCTIONS.format(
        errors="\n".join(f"- {error}" for error in errors),
        truncated=" (truncated)" if len(raw) > _REPAIR_QUOTE_CHARS else "",
        reply=quoted,
    )


def _estimated(content: str, model: str, system: str, user: str) -> _Reply:
    # No usage from the server: about four characters per token (English text) keeps the
    # budget enforced and the cost roughly right instead of silently counting zero.
    return _Reply(
        content=content,
        model=model,
        prompt_tokens=approx_tokens(system + user),
        completion_tokens=approx_tokens(content),
        estimated=True,
    )


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)


def _unwrap(raw: str) -> str:
    """The JSON inside a reply: local models like ```json fences, and reasoning models served
    through OpenAI-compatible APIs put <think>…</think> before the answer."""
    text = _THINK.sub("", raw).strip()
    if text.startswith("{"):
        # Already bare JSON; a fence inside it would be part of a string value.
        return text
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text


def _parse(schema: type[ModelT], raw: str) -> tuple[ModelT | None, list[str]]:
    try:
        return schema.model_validate_json(_unwrap(raw)), []
    except pydantic.ValidationError as exc:
        return None, _format_errors(exc)


def _format_errors(exc: pydantic.ValidationError) -> list[str]:
    # Without the input values: these errors are quoted to the model and may be logged.
    errors = [
        f"{'.'.join(str(part) for part in error['loc']) or '<root>'}: {error['msg']}"
        for error in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    if len(errors) > _MAX_REPORTED_ERRORS:
        extra = len(errors) - _MAX_REPORTED_ERRORS
        errors = [*errors[:_MAX_REPORTED_ERRORS], f"… and {extra} more"]
    return errors


# --- error classification -----------------------------------------------------------------------
def _rejects_json_schema(exc: OpenAIError) -> bool:
    """A 400 (or a FastAPI-style 422) about response_format: the server does not support
    json_schema, or refuses this schema. Either way JSON mode plus validation will do."""
    if not isinstance(exc, APIStatusError) or exc.status_code not in (400, 422):
        return False
    if exc.param == "response_format":
        return True
    text = f"{exc.message} {exc.body}".lower()
    return "response_format" in text or "json_schema" in text


def _classify(exc: OpenAIError) -> tuple[bool, float | None, str]:
    """(retryable, server-requested delay in seconds, what to report). The report holds the
    status and the server's error type/code, never request or reply content."""
    if isinstance(exc, APITimeoutError):
        return True, None, "timeout"
    if isinstance(exc, APIConnectionError):
        return True, None, "connection error"
    if isinstance(exc, APIStatusError):
        status = exc.status_code
        what = f"HTTP {status}" + "".join(
            f" {name}={value}" for name, value in (("type", exc.type), ("code", exc.code)) if value
        )
        # Same policy as the SDK: an explicit x-should-retry wins; otherwise request timeout,
        # conflict (lock timeouts), rate limit and server errors are worth another attempt.
        should_retry = exc.response.headers.get("x-should-retry")
        if should_retry in ("true", "false"):
            retryable = should_retry == "true"
        else:
            retryable = status in (408, 409, 429) or status >= 500
        return retryable, _retry_after(exc.response.headers), what
    if isinstance(exc, APIError):
        # An error event inside an SSE stream before any delta (e.g. "overloaded").
        return True, None, "error event in stream"
    return False, None, type(exc).__name__


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: retry-after-ms (OpenAI), then Retry-After as
    seconds or an HTTP date."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        return max((when - datetime.now(UTC)).total_seconds(), 0.0)
    return None
