"""The LLM endpoint is parsed once per environment, not on every page that asks."""

from __future__ import annotations

import pytest

from consult import llm


def test_llm_settings_are_parsed_once_and_again_when_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_MODEL", "model-a")
    parses = []
    real = llm.LLMSettings.from_env.__func__  # type: ignore[attr-defined]

    def counting(cls: type[llm.LLMSettings], env: dict[str, str]) -> llm.LLMSettings | None:
        parses.append(env["OPENAI_MODEL"])
        return real(cls, env)

    monkeypatch.setattr(llm.LLMSettings, "from_env", classmethod(counting))
    llm._parsed.cache_clear()
    # when several pages ask
    first = llm.llm_settings()
    assert llm.llm_settings() is first
    assert llm.llm_settings() is first
    # then the environment was parsed once
    assert parses == ["model-a"]
    # and a changed environment is parsed afresh
    monkeypatch.setenv("OPENAI_MODEL", "model-b")
    second = llm.llm_settings()
    assert second is not None
    assert second.model == "model-b"
    assert parses == ["model-a", "model-b"]
    llm._parsed.cache_clear()


def test_a_misconfigured_llm_endpoint_is_reported_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    monkeypatch.setenv("OPENAI_MODEL", "model-a")
    for _ in range(2):
        with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
            llm.llm_settings()
