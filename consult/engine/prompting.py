"""Prompts are versioned files in ``prompts/``; a consultation records the versions it used."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from clinical.vocab import CORE_ROLES

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


# An admin-approved refinement (knowledge/memory's prompt versions) follows the file's text
# under this heading: the file stays the default, and the addendum is visibly separate.
ADDENDUM_HEADING = "## Lessons from reviewed cases (approved by an administrator)"


def with_addendum(text: str, addendum: str = "") -> str:
    return f"{text}\n\n{ADDENDUM_HEADING}\n\n{addendum.strip()}" if addendum.strip() else text


def system_prompt(name: str, role: str, addenda: Mapping[str, str] | None = None) -> str:
    """The system prompt of a turn: the common part and the named prompt, each with its
    approved addendum when a database version is in force."""
    addenda = addenda or {}
    common = with_addendum(load("common"), addenda.get("common", ""))
    # "ROLE:" lets logs, tests and stub servers tell the turns apart without parsing prose.
    return f"ROLE: {role}\n\n{common}\n\n{with_addendum(load(name), addenda.get(name, ''))}"


def versions(database: Mapping[str, str] | None = None) -> dict[str, str]:
    """Prompt name -> "v2:<sha256 prefix>", recorded on every consultation; a prompt with a
    database version in force gets its label too ("v2:<sha>+m1:<sha>")."""
    database = database or {}
    return {
        name: f"{version(name)}:{hashlib.sha256(load(name).encode()).hexdigest()[:12]}"
        + (f"+{database[name]}" if name in database else "")
        for name in ALL_PROMPTS
    }
