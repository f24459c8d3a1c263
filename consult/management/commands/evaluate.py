"""``manage.py evaluate [--cases DIR] [--engine ...]``: concordance with ``expected``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.evaluation import concordance_failures
from consult.models import ConsultationStatus
from consult.services.batch import case_run
from consult.services.consultations import ConsultationError
from consult.services.dossiers import DossierError

DEFAULT_CASES = Path(settings.BASE_DIR).parent / "shared" / "cases" / "public"


class Command(BaseCommand):
    help = "Run every evaluation case and print whether each plan is concordant (FORMAT.md §3)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
        parser.add_argument("--engine", choices=["guideline", "llm"], default="guideline")

    def handle(self, *args: Any, **options: Any) -> None:
        files = sorted(options["cases"].glob("*.json"))
        if not files:
            raise CommandError(f"no case files in {options['cases']}")
        concordant = 0
        for path in files:
            raw = path.read_bytes()
            try:
                consultation = case_run(raw=raw, filename=path.name, engine=options["engine"])
            except (DossierError, ConsultationError) as exc:
                errors = getattr(exc, "errors", None)
                self.stdout.write(f"{path.stem:<16} ERROR  {errors[:1] if errors else exc}")
                continue
            # The file parsed and validated above: its expectations can be read safely.
            expected = json.loads(raw).get("expected") or {}
            if consultation.status != ConsultationStatus.COMPLETED:
                self.stdout.write(f"{path.stem:<16} FAILED {consultation.error}")
                continue
            failures = concordance_failures(consultation.plan.payload, expected)
            if failures:
                self.stdout.write(f"{path.stem:<16} DISCORDANT")
                for failure in failures:
                    self.stdout.write(f"    - {failure}")
            else:
                concordant += 1
                self.stdout.write(f"{path.stem:<16} concordant")
        self.stdout.write(f"\n{concordant}/{len(files)} concordant ({options['engine']} engine)")
        if concordant != len(files):
            raise CommandError("not every case is concordant")
