"""Prompts are versioned files in ``prompts/``; a consultation records the versions it used."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from consult.engine.vocab import CORE_ROLES

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
ROLE_PROMPTS = CORE_ROLES
ALL_PROMPTS = (*ROLE_PROMPTS, "specialist", "reviewer", "coordinator", "voter", "common")


@cache
def version(name: str) -> str:
    """The newest version of a prompt ("v2" beside "v1"): earlier files stay, so a recorded
    version can always be read again."""
    numbers = [
        int(p.name.split(".")[-2].removeprefix("v")) for p in PROMPT_DIR.glob(f"{name}.v*.md")
    ]
    if not numbers:
        raise FileNotFoundError(f"no prompt file for {name!r} in {PROMPT_DIR}")
    return f"v{max(numbers)}"


@cache
def load(name: str) -> str:
    return (PROMPT_DIR / f"{name}.{version(name)}.md").read_text(encoding="utf-8")


def system_prompt(name: str, role: str) -> str:
    # "ROLE:" lets logs, tests and stub servers tell the turns apart without parsing prose.
    return f"ROLE: {role}\n\n{load('common')}\n\n{load(name)}"


def versions() -> dict[str, str]:
    """Prompt name -> "v2:<sha256 prefix>", recorded on every consultation."""
    return {
        name: f"{version(name)}:{hashlib.sha256(load(name).encode()).hexdigest()[:12]}"
        for name in ALL_PROMPTS
    }
