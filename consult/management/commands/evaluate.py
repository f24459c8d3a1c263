"""``manage.py evaluate [--cases DIR ...] [--engine ...]``: concordance with ``expected``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clinical.text.evaluation import evaluate, load_examples, report
from consult.evaluation import abstains, concordance_failures
from consult.models import ConsultationStatus
from consult.services.batch import case_run
from consult.services.consultations import ConsultationError
from consult.services.dossiers import DossierError

PUBLIC_CASES = Path(settings.BASE_DIR).parent / "shared" / "cases" / "public"
OWN_CASES = Path(settings.BASE_DIR) / "tests" / "cases"
TEXT_SETS = Path(settings.BASE_DIR) / "tests" / "clinical" / "data"


class Command(BaseCommand):
    help = (
        "Run every evaluation case (the public ones and our own by default) and print a table "
        "of whether each plan is concordant (FORMAT.md §3), with totals per folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cases", type=Path, action="append")
        parser.add_argument("--engine", choices=["guideline", "llm"], default="guideline")

    def handle(self, *args: Any, **options: Any) -> None:
        folders: list[Path] = options["cases"] or [PUBLIC_CASES, OWN_CASES]
        totals = []
        # Abstention (issue 30): on cases the knowledge base covers (no "abstain": true) a plan
        # must not abstain; on our cases marked outside it ("abstain": true) it must.
        self.abstained_covered: list[str] = []
        self.answered_uncovered: list[str] = []
        for folder in folders:
            files = sorted(folder.glob("*.json"))
            if not files:
                raise CommandError(f"no case files in {folder}")
            self.stdout.write(f"\n{folder}")
            self.stdout.write(f"{'case':<18} {'result':<11} primary pathway")
            concordant = sum(self._case(path, options["engine"]) for path in files)
            totals.append((folder, concordant, len(files)))
            self.stdout.write(f"{concordant}/{len(files)} concordant in {folder.name}")
        self.stdout.write("")
        for folder, concordant, count in totals:
            self.stdout.write(f"{folder.name:<10} {concordant:>3}/{count:<3} concordant")
        good = sum(t[1] for t in totals)
        count = sum(t[2] for t in totals)
        self.stdout.write(f"{'total':<10} {good:>3}/{count:<3} concordant ({options['engine']})")
        self.stdout.write(
            f"abstentions on covered cases: {len(self.abstained_covered)} (target 0)"
            + (f": {', '.join(self.abstained_covered)}" if self.abstained_covered else "")
        )
        self.stdout.write(
            f"non-abstentions on uncovered cases: {len(self.answered_uncovered)} (target 0)"
            + (f": {', '.join(self.answered_uncovered)}" if self.answered_uncovered else "")
        )
        self._text_reader()
        if good != count:
            raise CommandError("not every case is concordant")

    def _text_reader(self) -> None:
        """Precision and recall of the clinical text reader per fact family, on the annotated
        sentences it was built with and on the held-out ones it was never tuned on."""
        for name, label in (
            ("annotated_sentences.yaml", "annotated set"),
            ("heldout_sentences.yaml", "held-out set"),
        ):
            examples = load_examples(TEXT_SETS / name)
            self.stdout.write(f"\nClinical text reader, {label} ({len(examples)} sentences)")
            for line in report(evaluate(examples)):
                self.stdout.write(line)

    def _case(self, path: Path, engine: str) -> bool:
        raw = path.read_bytes()
        try:
            consultation = case_run(raw=raw, filename=path.name, engine=engine)
        except (DossierError, ConsultationError) as exc:
            errors = getattr(exc, "errors", None)
            self.stdout.write(f"{path.stem:<18} {'ERROR':<11} {errors[:1] if errors else exc}")
            return False
        # The file parsed and validated above: its expectations can be read safely.
        expected = json.loads(raw).get("expected") or {}
        if consultation.status != ConsultationStatus.COMPLETED:
            self.stdout.write(f"{path.stem:<18} {'FAILED':<11} {consultation.error}")
            return False
        plan = consultation.plan.payload
        pathway = ("ABSTAIN: " if abstains(plan) else "") + "; ".join(
            c["description"][:40]
            for c in plan["recommendation"]["components"]
            if c.get("role") == "primary"
        )
        failures = concordance_failures(plan, expected)
        if abstains(plan) and not expected.get("abstain"):
            self.abstained_covered.append(path.stem)
        if expected.get("abstain") and not abstains(plan):
            self.answered_uncovered.append(path.stem)
        verdict = "DISCORDANT" if failures else "concordant"
        self.stdout.write(f"{path.stem:<18} {verdict:<11} {pathway[:120] or '(none)'}")
        for failure in failures:
            self.stdout.write(f"{'':<18} - {failure}")
        return not failures
