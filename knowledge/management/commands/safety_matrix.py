"""``manage.py safety_matrix [--check] [--output PATH]``: write docs/safety-matrix.md, the
drug-safety matrix (clinical/safety_matrix.yaml) against the seed knowledge base; ``--check``
writes nothing and fails when the document is stale or the matrix does not hold against the
seed (a seed drug without a row, a row without a rule, a rule that does not name its drug)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clinical.safety_matrix import coverage, render_markdown
from knowledge.management.commands.load_kb_seed import SEED_DIR
from knowledge.services import bundle_parse

DOC = Path(settings.BASE_DIR) / "docs" / "safety-matrix.md"


def seed_bundle(seed_dir: Path = SEED_DIR) -> Any:
    raw = b"\n---\n".join(p.read_bytes() for p in sorted(seed_dir.glob("*.yaml")))
    bundle, errors = bundle_parse(raw, filename="seed.yaml")
    if bundle is None:
        raise CommandError(
            "seed knowledge base is invalid:\n"
            + "\n".join(f"  {e.where}: {e.message}" for e in errors)
        )
    return bundle


class Command(BaseCommand):
    help = "Write docs/safety-matrix.md from clinical/safety_matrix.yaml and the seed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, default=DOC)
        parser.add_argument("--check", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        bundle = seed_bundle()
        result = coverage(bundle)
        for line in result.summary():
            self.stdout.write(line)
        text = render_markdown(bundle) + "\n"
        output: Path = options["output"]
        if options["check"]:
            current = output.read_text(encoding="utf-8") if output.exists() else ""
            if current != text:
                raise CommandError(f"{output} is stale: run manage.py safety_matrix")
        else:
            output.write_text(text, encoding="utf-8")
            self.stdout.write(f"wrote {output}")
        if result.missing_drugs or result.problems:
            raise CommandError("the drug-safety matrix does not cover the seed")
