"""consult.llm against a scripted OpenAI-compatible server over real HTTP with the real SDK."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle
import time
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from consult.llm import (
    Budget,
    LLMBudgetExceeded,
    LLMClient,
    LLMInvalidOutput,
    LLMSettings,
    LLMUnavailable,
    LLMUsage,
    approx_tokens,
    wire_schema,
)
from tests.llm_stub import StubLLM, StubReply, StubRequest, stub_llm


class Verdict(BaseModel):
    conclusion: str
    confidence: float = Field(ge=0, le=1)
    evidence: list[str] = Field(default_factory=list)


VALID = json.dumps(
    {"conclusion": "Resection is feasible.", "confidence": 0.8, "evidence": ["hcc-bclc-a"]}
)
SYSTEM = "You are the hepatobiliary surgeon of a tumor board.\nROLE: surgeon"
USER = "Case: 64-year-old, single 3 cm HCC, Child–Pugh A."


def settings_for(stub: StubLLM, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "base_url": stub.base_url,
        "api_key": "sk-test",
        "model": "stub-model",
        "role_models": {"safety": "stub-large"},
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_base_s": 0.01,
        "price_prompt_per_1k": 0.01,
        "price_completion_per_1k": 0.03,
    }
    values.update(overrides)
    return LLMSettings(**values)


def big_budget() -> Budget:
    return Budget(tokens=1_000_000, cost_usd=100.0)


async def ask(
    client: LLMClient, *, role: str = "surgeon", on_delta: Any = None, user: str = USER
) -> tuple[Verdict, LLMUsage]:
    return await client.complete_structured(
        role=role, system=SYSTEM, user=user, schema=Verdict, on_delta=on_delta
    )


# --- happy path ---------------------------------------------------------------------------------
async def test_llm_client_happy_path_json_schema() -> None:
    # given
    budget = big_budget()
    with stub_llm(StubReply(content=VALID, prompt_tokens=120, completion_tokens=30)) as stub:
        async with LLMClient(settings_for(stub), budget) as client:
            # when
            verdict, usage = await ask(client, role="safety")
    # then
    assert verdict == Verdict.model_validate_json(VALID)
    [request] = stub.requests
    assert request.model == "stub-large"  # the per-role override
    assert request.role == "surgeon"
    assert not request.stream
    assert request.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": wire_schema(Verdict), "strict": False},
    }
    assert request.system == SYSTEM  # json_schema mode leaves the prompt alone
    assert request.headers["authorization"] == "Bearer sk-test"
    assert usage.model == "stub-large"
    assert (usage.prompt_tokens, usage.completion_tokens) == (120, 30)
    assert usage.cost_usd == pytest.approx(120 * 0.01 / 1000 + 30 * 0.03 / 1000)
    assert usage.latency_ms > 0
    assert (usage.attempts, usage.mode, usage.repaired) == (1, "json_schema", False)
    assert budget.tokens_used == 150
    assert budget.cost_used == pytest.approx(usage.cost_usd)


async def test_llm_client_uses_default_model_for_roles_without_override() -> None:
    with stub_llm(StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            assert client.model_for("surgeon") == "stub-model"
            _, usage = await ask(client, role="surgeon")
    assert stub.requests[0].model == "stub-model"
    assert usage.model == "stub-model"


async def test_llm_client_works_without_api_key() -> None:
    # Local servers (vLLM, Ollama) need no key; the SDK refuses an empty one.
    with stub_llm(StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub, api_key=""), big_budget()) as client:
            verdict, _ = await ask(client)
    assert verdict.confidence == 0.8


async def test_llm_client_parses_fenced_json() -> None:
    fenced = f"Here is my assessment:\n```json\n{VALID}\n```\n"
    with stub_llm(StubReply(content=fenced)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            verdict, usage = await ask(client)
    assert verdict.conclusion == "Resection is feasible."
    assert len(stub.requests) == 1
    assert not usage.repaired


async def test_llm_client_ignores_think_block_of_reasoning_models() -> None:
    reply = f"<think>Child–Pugh A, so {{resection}} is an option.</think>\n{VALID}"
    with stub_llm(StubReply(content=reply)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            verdict, _ = await ask(client)
    assert verdict.evidence == ["hcc-bclc-a"]
    assert len(stub.requests) == 1


# --- json_object fallback ----------------------------------------------------------------------
async def test_llm_client_falls_back_to_json_object_and_remembers() -> None:
    # given a server that does not know json_schema
    def no_json_schema(request: StubRequest) -> StubReply:
        return StubReply(content=VALID, reject_json_schema=True)

    with StubLLM(no_json_schema) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            # when
            first, first_usage = await ask(client)
            second, second_usage = await ask(client)
    # then
    assert first == second == Verdict.model_validate_json(VALID)
    kinds = [r.response_format["type"] if r.response_format else None for r in stub.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]  # rejected once, remembered
    fallback = stub.requests[1]
    assert fallback.system.startswith(SYSTEM)
    # the schema is in the prompt (as sent with json_schema: its constraints, compact)
    assert json.dumps(wire_schema(Verdict), separators=(",", ":")) in fallback.system
    assert "JSON" in fallback.system
    assert (first_usage.mode, first_usage.attempts) == ("json_object", 2)
    assert (second_usage.mode, second_usage.attempts) == ("json_object", 1)


# --- repair ------------------------------------------------------------------------------------
async def test_llm_client_repairs_invalid_reply_once() -> None:
    # given a first reply that breaks the schema (confidence > 1), then a valid one
    invalid = '{"conclusion": "Resect.", "confidence": 3}'
    budget = big_budget()
    with stub_llm(
        StubReply(content=invalid, prompt_tokens=100, completion_tokens=10),
        StubReply(content=VALID, prompt_tokens=200, completion_tokens=20),
    ) as stub:
        async with LLMClient(settings_for(stub), budget) as client:
            # when
            verdict, usage = await ask(client, on_delta=_collect([]))
    # then
    assert verdict == Verdict.model_validate_json(VALID)
    assert usage.repaired
    assert len(stub.requests) == 2
    repair = stub.requests[1]
    assert not repair.stream
    assert repair.user.startswith(USER)  # the model still sees the case
    assert "confidence: Input should be less than or equal to 1" in repair.user
    assert invalid in repair.user
    assert repair.response_format is not None
    assert repair.response_format["type"] == "json_schema"
    assert (usage.prompt_tokens, usage.completion_tokens, usage.attempts) == (300, 30, 2)
    assert budget.tokens_used == 330


async def test_llm_client_repair_quotes_at_most_4000_chars() -> None:
    invalid = "not json " * 1000
    with stub_llm(StubReply(content=invalid), StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            await ask(client)
    repair = stub.requests[1].user
    assert invalid[:4000] in repair
    assert invalid[:4100] not in repair
    assert "Invalid JSON" in repair


async def test_llm_client_invalid_twice_raises_with_usage_charged() -> None:
    budget = big_budget()
    with stub_llm(
        StubReply(content="I think resection.", prompt_tokens=40, completion_tokens=5),
        StubReply(content='{"conclusion": 42}', prompt_tokens=60, completion_tokens=5),
    ) as stub:
        async with LLMClient(settings_for(stub), budget) as client:
            with pytest.raises(LLMInvalidOutput) as caught:
                await ask(client)
    assert len(stub.requests) == 2
    assert caught.value.raw == '{"conclusion": 42}'
    assert any(error.startswith("conclusion:") for error in caught.value.errors)
    assert any(error.startswith("confidence:") for error in caught.value.errors)
    # the engine records what the failed turn cost
    assert caught.value.usage is not None
    assert caught.value.usage.total_tokens == 110
    assert budget.tokens_used == 110
    # the reply (clinical text) stays out of the message, and the exception survives Celery
    assert "conclusion" not in str(caught.value)
    restored = pickle.loads(pickle.dumps(caught.value))  # noqa: S301 - our own bytes
    assert restored.errors == caught.value.errors


# --- retries -----------------------------------------------------------------------------------
async def test_llm_client_retries_rate_limit_honouring_retry_after() -> None:
    rate_limited = StubReply(
        status=429,
        headers={"Retry-After": "0"},
        error={"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"},
    )
    with stub_llm(rate_limited, rate_limited, StubReply(content=VALID)) as stub:
        # a large base backoff shows Retry-After: 0 is what the client waited for
        async with LLMClient(settings_for(stub, backoff_base_s=5.0), big_budget()) as client:
            started = time.monotonic()
            verdict, usage = await ask(client)
            elapsed = time.monotonic() - started
    assert verdict.confidence == 0.8
    assert usage.attempts >= 3
    assert len(stub.requests) == 3
    assert elapsed < 2.0


async def test_llm_client_gives_up_after_max_retries_on_server_errors() -> None:
    with StubLLM(lambda request: StubReply(status=500)) as stub:
        async with LLMClient(settings_for(stub, max_retries=2), big_budget()) as client:
            with pytest.raises(LLMUnavailable, match="HTTP 500") as caught:
                await ask(client)
    assert len(stub.requests) == 3  # one attempt and two retries
    assert caught.value.usage is not None
    assert caught.value.usage.attempts == 3


async def test_llm_client_does_not_retry_client_errors() -> None:
    unauthorized = StubReply(
        status=401, error={"message": "Incorrect API key", "type": "invalid_request_error"}
    )
    with stub_llm(unauthorized, StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            with pytest.raises(LLMUnavailable, match="HTTP 401"):
                await ask(client)
    assert len(stub.requests) == 1


async def test_llm_client_does_not_wait_for_a_long_retry_after() -> None:
    with stub_llm(StubReply(status=429, headers={"Retry-After": "3600"})) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            with pytest.raises(LLMUnavailable, match="3600"):
                await ask(client)
    assert len(stub.requests) == 1


async def test_llm_client_retries_after_timeout_then_succeeds() -> None:
    with stub_llm(StubReply(content=VALID, delay_s=1.0), StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub, timeout_s=0.3), big_budget()) as client:
            verdict, usage = await ask(client)
    assert verdict.confidence == 0.8
    assert usage.attempts == 2


async def test_llm_client_times_out_then_unavailable() -> None:
    with StubLLM(lambda request: StubReply(content=VALID, delay_s=1.0)) as stub:
        settings = settings_for(stub, timeout_s=0.3, max_retries=1)
        async with LLMClient(settings, big_budget()) as client:
            started = time.monotonic()
            with pytest.raises(LLMUnavailable, match="timeout"):
                await ask(client)
            elapsed = time.monotonic() - started
    assert len(stub.requests) == 2
    assert elapsed < 1.5  # gave up on the timeouts, did not wait for the replies


# --- streaming ---------------------------------------------------------------------------------
def _collect(into: list[str]) -> Any:
    async def on_delta(text: str) -> None:
        into.append(text)

    return on_delta


async def test_llm_client_streams_deltas_and_takes_usage_from_final_chunk() -> None:
    deltas: list[str] = []
    with stub_llm(
        StubReply(content=VALID, chunk_chars=10, prompt_tokens=77, completion_tokens=33)
    ) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            verdict, usage = await ask(client, on_delta=_collect(deltas))
    assert verdict == Verdict.model_validate_json(VALID)
    assert len(deltas) > 3
    assert "".join(deltas) == VALID
    [request] = stub.requests
    assert request.stream
    assert request.body["stream_options"] == {"include_usage": True}
    assert (usage.prompt_tokens, usage.completion_tokens) == (77, 33)


async def test_llm_client_estimates_tokens_when_stream_has_no_usage() -> None:
    with stub_llm(StubReply(content=VALID, stream_usage=False)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            _, usage = await ask(client, on_delta=_collect([]))
    assert usage.completion_tokens == len(VALID) // 4
    assert usage.prompt_tokens == (len(SYSTEM) + len(USER)) // 4


async def test_llm_client_never_retries_a_stream_that_broke_after_deltas() -> None:
    deltas: list[str] = []
    with stub_llm(
        StubReply(content=VALID, chunk_chars=10, break_after_chunks=2),
        StubReply(content=VALID),
    ) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            with pytest.raises(LLMUnavailable, match="after 2 deltas"):
                await ask(client, on_delta=_collect(deltas))
    assert deltas == [VALID[:10], VALID[10:20]]
    assert len(stub.requests) == 1


async def test_llm_client_retries_a_stream_that_failed_before_any_delta() -> None:
    deltas: list[str] = []
    with stub_llm(StubReply(status=503), StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            _, usage = await ask(client, on_delta=_collect(deltas))
    assert "".join(deltas) == VALID
    assert usage.attempts == 2


# --- budget ------------------------------------------------------------------------------------
async def test_llm_client_refuses_before_sending_when_tokens_are_spent() -> None:
    budget = Budget(tokens=100, cost_usd=1.0)
    budget.charge(
        LLMUsage(
            model="stub-model", prompt_tokens=90, completion_tokens=10, latency_ms=1.0,
            cost_usd=0.0, attempts=1, mode="json_schema", repaired=False,
        )
    )  # fmt: skip
    with stub_llm(StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), budget) as client:
            with pytest.raises(LLMBudgetExceeded):
                await ask(client)
    assert stub.requests == []


async def test_llm_client_call_crossing_the_cost_budget_raises_and_still_counts() -> None:
    budget = Budget(tokens=1_000_000, cost_usd=0.01)
    with stub_llm(StubReply(content=VALID, prompt_tokens=1000, completion_tokens=10)) as stub:
        async with LLMClient(settings_for(stub, price_prompt_per_1k=0.05), budget) as client:
            with pytest.raises(LLMBudgetExceeded):
                await ask(client)
            with pytest.raises(LLMBudgetExceeded):
                await ask(client)  # refused before sending
    assert len(stub.requests) == 1
    assert budget.tokens_used == 1010
    assert budget.cost_used == pytest.approx(0.05 + 10 * 0.03 / 1000)


async def test_llm_client_concurrent_calls_each_charge_once() -> None:
    budget = big_budget()
    roles = ["surgeon", "hepatologist", "oncologist", "radiologist", "safety"]
    # a delay makes the five requests overlap on the server
    with StubLLM(lambda request: StubReply(content=VALID), delay_s=0.05) as stub:
        async with LLMClient(settings_for(stub), budget) as client:
            results = await asyncio.gather(*(ask(client, role=role) for role in roles))
    assert len(stub.requests) == 5
    # every request the same size: each charged what the server reported for it, once
    per_call = stub.requests[0].prompt_tokens + len(VALID) // 4
    assert [usage.total_tokens for _, usage in results] == [per_call] * 5
    assert budget.tokens_used == 5 * per_call
    assert budget.cost_used == pytest.approx(sum(usage.cost_usd for _, usage in results))


def test_budget_charge_counts_usage_even_when_it_raises() -> None:
    budget = Budget(tokens=100, cost_usd=1.0)
    usage = LLMUsage(
        model="m", prompt_tokens=80, completion_tokens=40, latency_ms=1.0, cost_usd=0.1,
        attempts=1, mode="json_schema", repaired=False,
    )  # fmt: skip
    with pytest.raises(LLMBudgetExceeded):
        budget.charge(usage)
    assert budget.tokens_used == 120
    assert budget.cost_used == pytest.approx(0.1)
    with pytest.raises(LLMBudgetExceeded):
        budget.check()


# --- privacy -----------------------------------------------------------------------------------
async def test_llm_client_logs_no_prompt_or_reply_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_case = "Patient Jane Roe, MRN 99-1234-SECRET"
    secret_reply = json.dumps({"conclusion": "Roe-REPLY-SECRET", "confidence": 2})
    with stub_llm(
        StubReply(content=secret_reply), StubReply(status=500), StubReply(content=secret_reply)
    ) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            with pytest.raises(LLMInvalidOutput):
                await ask(client, user=secret_case)
    assert "llm request" in caplog.text  # it does log, just not content
    assert "SECRET" not in caplog.text
    assert "SECRET" not in repr(caplog.records)


# --- settings ------------------------------------------------------------------------------------
def test_llm_settings_from_env_none_without_configuration() -> None:
    assert LLMSettings.from_env({}) is None
    assert LLMSettings.from_env({"OPENAI_BASE_URL": "", "OPENAI_MODEL": " "}) is None
    assert LLMSettings.from_env({"OPENAI_API_KEY": "sk-x"}) is None


def test_llm_settings_from_env_parses_everything() -> None:
    settings = LLMSettings.from_env(
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1",
            "OPENAI_API_KEY": "sk-x",
            "OPENAI_MODEL": "qwen2.5:32b",
            "OPENAI_ROLE_MODELS": "safety=gpt-4.1, surgeon = llama3.1:70b ,",
            "OPENAI_TIMEOUT_S": "12.5",
            "OPENAI_MAX_RETRIES": "0",
            "LLM_TOKEN_BUDGET": "5000",
            "LLM_COST_BUDGET_USD": "0.5",
            "LLM_PRICE_PROMPT_PER_1K": "0.002",
            "LLM_PRICE_COMPLETION_PER_1K": "0.008",
        }
    )
    assert settings is not None
    assert settings.role_models == {"safety": "gpt-4.1", "surgeon": "llama3.1:70b"}
    assert (settings.model, settings.timeout_s, settings.max_retries) == ("qwen2.5:32b", 12.5, 0)
    assert (settings.token_budget, settings.cost_budget_usd) == (5000, 0.5)
    assert (settings.price_prompt_per_1k, settings.price_completion_per_1k) == (0.002, 0.008)
    assert "sk-x" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("OPENAI_TIMEOUT_S", "soon"),
        ("OPENAI_TIMEOUT_S", "0"),
        ("OPENAI_MAX_RETRIES", "2.5"),
        ("OPENAI_MAX_RETRIES", "-1"),
        ("LLM_TOKEN_BUDGET", "lots"),
        ("LLM_COST_BUDGET_USD", "nan"),
        ("LLM_PRICE_PROMPT_PER_1K", "-0.1"),
        ("OPENAI_ROLE_MODELS", "safety"),
        ("OPENAI_BASE_URL", "localhost:8000"),
    ],
)
def test_llm_settings_from_env_rejects_bad_values(name: str, value: str) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "OPENAI_MODEL": "m", name: value}
    with pytest.raises(ValueError, match=name):
        LLMSettings.from_env(env)


@pytest.mark.parametrize("missing", ["OPENAI_BASE_URL", "OPENAI_MODEL"])
def test_llm_settings_from_env_rejects_half_a_configuration(missing: str) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "OPENAI_MODEL": "m"}
    del env[missing]
    with pytest.raises(ValueError, match=missing):
        LLMSettings.from_env(env)


# --- what a request costs ------------------------------------------------------------------------
class _Described(BaseModel):
    """A docstring that becomes a description."""

    description: str = Field(description="A property that happens to be called description.")
    severity: Literal["critical", "major"] = Field(default="major", title="Severity of it")
    share: float = Field(ge=0, le=1, description="Between 0 and 1.")


def test_the_schema_sent_keeps_every_constraint_and_drops_the_annotations() -> None:
    sent = wire_schema(_Described)
    full = _Described.model_json_schema()
    # the message's name, its properties (one of them called "description"), types, enums,
    # bounds and what is required stay
    assert sent["title"] == "_Described"
    assert set(sent["properties"]) == {"description", "severity", "share"}
    assert sent["required"] == full["required"]
    assert sent["properties"]["severity"]["enum"] == ["critical", "major"]
    assert (sent["properties"]["share"]["minimum"], sent["properties"]["share"]["maximum"]) == (
        0,
        1,
    )
    # and what only annotates does not: no description, no per-field title, no default
    text = json.dumps(sent)
    assert "Between 0 and 1" not in text
    assert "happens to be called" not in text
    assert "Severity of it" not in text
    assert "default" not in text
    assert len(text) < len(json.dumps(full))


async def test_the_stub_reports_usage_from_the_request_and_the_reply() -> None:
    # given a stub that is not told what usage to report
    with stub_llm(StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            _, usage = await ask(client, role="safety")
        [request] = stub.requests
    # then it reports characters ÷ 4 of what was sent (messages and schema, compact JSON as on
    # the wire) and of its reply, the rule every test and the bench count by
    schema = json.dumps(request.response_format, ensure_ascii=False, separators=(",", ":"))
    assert schema.encode() in request.raw
    sent = SYSTEM + USER + schema
    assert usage.prompt_tokens == request.prompt_tokens == approx_tokens(sent) == len(sent) // 4
    assert usage.completion_tokens == len(VALID) // 4
    # and a prompt ten times as long costs about nine prompts more
    with stub_llm(StubReply(content=VALID)) as stub:
        async with LLMClient(settings_for(stub), big_budget()) as client:
            _, longer = await ask(client, role="safety", user=USER * 10)
    assert abs(longer.prompt_tokens - usage.prompt_tokens - len(USER) * 9 / 4) <= 1
