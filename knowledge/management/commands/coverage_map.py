"""``manage.py coverage_map [--check]``: write docs/coverage.md from the seed knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clinical.coverage import render_markdown
from knowledge.selectors import coverage_of_bundle
from knowledge.services import bundle_parse

SEED_DIR = Path(__file__).resolve().parents[2] / "seed"
DOC = Path(settings.BASE_DIR) / "docs" / "coverage.md"


def seed_coverage_markdown(seed_dir: Path = SEED_DIR) -> str:
    """docs/coverage.md for the seed files in ``seed_dir``."""
    raw = b"\n---\n".join(p.read_bytes() for p in sorted(seed_dir.glob("*.yaml")))
    bundle, errors = bundle_parse(raw, filename="seed.yaml")
    if bundle is None:
        raise CommandError(
            "seed knowledge base is invalid:\n"
            + "\n".join(f"  {e.where}: {e.message}" for e in errors)
        )
    return "\n".join(render_markdown(coverage_of_bundle(bundle))) + "\n"


class Command(BaseCommand):
    help = (
        "Write docs/coverage.md: per cancer, the histologies, sites, settings, lines and "
        "biomarker groups the seed knowledge base has a pathway for, and the situations "
        "outside it (where a plan abstains). --check fails if the committed file is stale."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", type=Path, default=SEED_DIR)
        parser.add_argument("--out", type=Path, default=DOC)
        parser.add_argument("--check", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        text = seed_coverage_markdown(options["dir"])
        out: Path = options["out"]
        if options["check"]:
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                raise CommandError(f"{out} is stale: run python manage.py coverage_map")
            self.stdout.write(f"{out} is current")
            return
        out.write_text(text, encoding="utf-8")
        self.stdout.write(f"wrote {out}")
