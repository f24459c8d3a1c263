"""Where tests find the repository and the shared evaluation cases (``../shared`` beside it,
or the folder MDTBOARD_SHARED_DIR names: a git worktree elsewhere has no shared/ beside it)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MDTBOARD_SHARED_DIR") or REPO.parent / "shared")
PUBLIC_CASES = SHARED / "cases" / "public"


def public_case_files() -> list[Path]:
    files = sorted(PUBLIC_CASES.glob("*.json"))
    # A missing folder is a broken checkout, not a reason to skip: fail loudly.
    if not files:
        raise FileNotFoundError(
            f"no public cases at {PUBLIC_CASES}; shared/ must sit beside the repo"
        )
    return files
