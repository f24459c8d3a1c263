"""Where tests find the repository and the shared evaluation cases (``../shared`` beside it)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PUBLIC_CASES = REPO.parent / "shared" / "cases" / "public"


def public_case_files() -> list[Path]:
    files = sorted(PUBLIC_CASES.glob("*.json"))
    # A missing folder is a broken checkout, not a reason to skip: fail loudly.
    if not files:
        raise FileNotFoundError(
            f"no public cases at {PUBLIC_CASES}; shared/ must sit beside the repo"
        )
    return files
