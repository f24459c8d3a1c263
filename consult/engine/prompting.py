"""Prompts are versioned files in ``prompts/``; a consultation records the versions it used."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
VERSION = "v1"
ROLE_PROMPTS = ("diagnostic", "treatment", "safety", "monitoring")
ALL_PROMPTS = (*ROLE_PROMPTS, "specialist", "reviewer", "coordinator", "voter", "common")


@cache
def load(name: str) -> str:
    return (PROMPT_DIR / f"{name}.{VERSION}.md").read_text(encoding="utf-8")


def system_prompt(name: str, role: str) -> str:
    # "ROLE:" lets logs, tests and stub servers tell the turns apart without parsing prose.
    return f"ROLE: {role}\n\n{load('common')}\n\n{load(name)}"


def versions() -> dict[str, str]:
    """Prompt name -> "v1:<sha256 prefix>", recorded on every consultation."""
    return {
        name: f"{VERSION}:{hashlib.sha256(load(name).encode()).hexdigest()[:12]}"
        for name in ALL_PROMPTS
    }
