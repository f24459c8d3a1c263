"""Prompt tokens per consultation, per public case: the real LLM client (real HTTP, the real
SDK) against the test LLM server, which reports usage by the one rule of tests and bench
(characters ÷ 4 of the request and the reply, ``consult.llm.approx_tokens``). The engine runs
in process over the seed bundle (the database retriever applies the same rules); its gate
outcomes are compared with the guideline engine's on the same case.

``python -m benchmarks.tokens`` prints the same figures without the rest of the bench, plus a
per-role and per-round table (``--detail``)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from benchmarks.common import PUBLIC_CASES, emit, repository_tests_package

TARGET_PROMPT_TOKENS = 12_000
# Prices when none are configured (LLM_PRICE_PROMPT_PER_1K, LLM_PRICE_COMPLETION_PER_1K): a
# hosted mid-size model's list price, USD per 1,000 tokens, so that the cost line means
# something; the configured prices win.
REFERENCE_PRICES = (0.0025, 0.01)


def _prices() -> tuple[float, float, str]:
    prompt = os.environ.get("LLM_PRICE_PROMPT_PER_1K", "").strip()
    completion = os.environ.get("LLM_PRICE_COMPLETION_PER_1K", "").strip()
    if prompt or completion:
        return float(prompt or 0), float(completion or 0), "configured prices"
    return (*REFERENCE_PRICES, "reference prices $2.50/$10 per M tokens")


def _gates(plan: Any) -> list[tuple[str, str]]:
    return sorted((g.gate, g.status) for g in plan.safety.gates)


def measure(case_path: Any) -> dict[str, Any]:
    """One consultation of ``case_path`` in LLM mode against the stub, and one with the
    guideline engine: tokens (total, by role, by round) and whether the gates agree."""
    from clinical.applicability import case_facts
    from clinical.calculators import derive_all, staging_summary
    from consult.bundle_retriever import BundleRetriever
    from consult.engine.accounting import Turn, account
    from consult.engine.aio import run_coroutine
    from consult.engine.deliberation import Deliberation
    from consult.engine.protocols import MemoryStore
    from consult.engine.providers import GuidelineProvider, LLMProvider
    from consult.llm import Budget, LLMClient, LLMSettings
    from tests.consult.llm_responder import clinical_responder
    from tests.fixtures.seed import seed_bundle
    from tests.llm_stub import StubLLM

    case = json.loads(case_path.read_text())
    case.pop("expected", None)
    retriever = BundleRetriever(seed_bundle())

    def engine(provider: Any, store: Any) -> Any:
        return Deliberation(
            case=case,
            facts=case_facts(case),
            staging=staging_summary(derive_all(case)),
            retriever=retriever,
            store=store,
            provider=provider,
        )

    guideline_plan = run_coroutine(lambda: engine(GuidelineProvider(), MemoryStore()).run())
    with StubLLM(clinical_responder()) as stub:
        settings = LLMSettings(base_url=stub.base_url, api_key="sk-stub", model="stub-model")
        store = MemoryStore()

        async def run() -> Any:
            async with LLMClient(settings, Budget(tokens=10**9, cost_usd=10**6)) as llm:
                return await engine(LLMProvider(llm), store).run()

        llm_plan = run_coroutine(run)
        requests = list(stub.requests)
    turns = []
    steps = {"message": "report", "critique": "review", "draft": "synthesis", "vote": "vote"}
    for event in store.events:
        kind = str(event.kind)
        if kind in steps:
            usage = event.payload.get("usage") or {}
            turns.append(
                Turn(
                    round=event.round,
                    role=event.role or "coordinator",
                    step=steps[kind],
                    model=str(usage.get("model") or ""),
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0),
                    fallback=str(event.payload.get("fallback") or ""),
                )
            )
    spent = account(turns)
    return {
        "case": case_path.stem,
        "calls": len(requests),
        "rounds": llm_plan.rounds,
        "account": spent,
        "largest_request": max((r.prompt_tokens for r in requests), default=0),
        "same_gates": _gates(llm_plan) == _gates(guideline_plan),
    }


def run() -> None:
    prompt_price, completion_price, priced = _prices()
    totals = []
    for path in sorted(PUBLIC_CASES.glob("*.json")):
        result = measure(path)
        spent = result["account"]
        prompt, completion = spent.total.prompt_tokens, spent.total.completion_tokens
        totals.append(prompt)
        name = result["case"]
        emit(
            f"llm_prompt_tokens_{name}",
            prompt,
            f"prompt tokens per consultation ({result['calls']} calls, "
            f"{result['rounds']} rounds, largest call {result['largest_request']})",
            f"<= {TARGET_PROMPT_TOKENS}",
        )
        emit(f"llm_completion_tokens_{name}", completion, "completion tokens per consultation")
        emit(
            f"llm_cost_{name}",
            (prompt * prompt_price + completion * completion_price) / 1000,
            f"USD per consultation ({priced})",
        )
        emit(
            f"llm_same_gates_{name}",
            1.0 if result["same_gates"] else 0.0,
            "1 = LLM mode gives the guideline engine's gate outcomes",
            "1",
        )
        emit(
            f"llm_guideline_turns_{name}",
            spent.guideline_turns,
            "turns the guideline engine answered",
            "0",
        )
    emit("llm_prompt_tokens_max", max(totals), "prompt tokens (largest public case)", "<= 12000")


def _detail() -> None:
    for path in sorted(PUBLIC_CASES.glob("*.json")):
        result = measure(path)
        spent = result["account"]
        line = {
            "case": result["case"],
            "prompt_tokens": spent.total.prompt_tokens,
            "calls": result["calls"],
            "same_gates": result["same_gates"],
            "by_round": {n: t.prompt_tokens for n, t in sorted(spent.by_round.items())},
            "by_role": _by(spent.by_role),
        }
        sys.stdout.write(json.dumps(line) + "\n")


def _by(tallies: Mapping[str, Any]) -> dict[str, str]:
    return {
        role: f"{t.prompt_tokens} ({t.calls} calls)"
        for role, t in sorted(tallies.items(), key=lambda kv: -kv[1].prompt_tokens)
    }


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.test")
    repository_tests_package()
    import django

    django.setup()
    if "--detail" in sys.argv:
        _detail()
    else:
        run()
