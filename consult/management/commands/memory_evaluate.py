"""``manage.py memory_evaluate [--seed DIR] [--cases DIR]``: the evaluation cases twice, without
the experience memory and then after seeding it with reviews of other cases (issue 16).

The seed cases are run and reviewed as the command line's clinician: a plan concordant with
its file's ``expected`` block is accepted (CorrectKB), a discordant one rejected with the
failures as the reason (ChainKB), as MDTeamGPT fills its stores from answers checked against
the truth. Figures per run: rounds to consensus, conflicts, concordance, and how many plans
past cases informed. The seeded entries stay in the memory (retire them on /memory/)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from consult.engine.coherence import plan_findings
from consult.evaluation import concordance_failures
from consult.learning import experience_from_review
from consult.management.commands.evaluate import OWN_CASES as OWN
from consult.management.commands.evaluate import PUBLIC_CASES as PUBLIC
from consult.models import ConsultationStatus
from consult.review.services import review_decide
from consult.services.batch import case_run, cli_identity
from consult.tasks import experience_from_review as review_task
from knowledge.memory.selectors import memory_figures


@dataclass
class Outcome:
    case: str
    rounds: int
    conflicts: int
    concordant: bool
    informed: int
    pathway: str


def _pathway(plan: dict[str, Any]) -> str:
    return "; ".join(
        c["description"] for c in plan["recommendation"]["components"] if c.get("role") == "primary"
    )


class Command(BaseCommand):
    help = "Evaluate the cases without memory, seed the memory from other cases, evaluate again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=Path, default=OWN)
        parser.add_argument("--cases", type=Path, default=PUBLIC)

    def _run(self, path: Path) -> tuple[Any, Outcome]:
        raw = path.read_bytes()
        consultation = case_run(raw=raw, filename=path.name, engine="guideline")
        if consultation.status != ConsultationStatus.COMPLETED:
            raise CommandError(f"{path.name}: {consultation.status} {consultation.error}")
        plan = consultation.plan.payload
        expected = json.loads(raw).get("expected") or {}
        failures = concordance_failures(plan, expected)
        return consultation, Outcome(
            case=path.stem,
            rounds=int(plan["rounds"]),
            conflicts=len(plan.get("conflicts") or []),
            concordant=not failures,
            informed=len(plan.get("informed_by") or []),
            pathway=_pathway(plan),
        )

    def _pass(self, files: list[Path], k: int) -> list[Outcome]:
        with override_settings(MEMORY_TOP_K=k):
            return [self._run(path)[1] for path in files]

    def _seed(self, files: list[Path]) -> tuple[int, int]:
        actor, _ = cli_identity()
        accepted = rejected = 0
        # The entry is written here, synchronously; no worker is needed for the seed.
        with mock.patch.object(review_task, "delay"):
            for path in files:
                consultation, _ = self._run(path)
                failures = concordance_failures(
                    consultation.plan.payload, json.loads(path.read_bytes()).get("expected") or {}
                )
                if not failures:
                    # A plan that contradicts itself is not accepted: rejected with the reason.
                    failures = [f.sentence for f in plan_findings(consultation.plan.payload)]
                review = review_decide(
                    actor=actor,
                    consultation=consultation,
                    decision="accept" if not failures else "reject",
                    reason_kind="clinical" if failures else "",
                    reason="; ".join(failures)[:1500],
                    idempotency_key=uuid.uuid4(),
                    base_version=None,
                )
                experience_from_review(review_id=review.pk)
                accepted += not failures
                rejected += bool(failures)
        return accepted, rejected

    def _summary(self, name: str, outcomes: list[Outcome]) -> dict[str, Any]:
        n = len(outcomes)
        return {
            "run": name,
            "cases": n,
            "concordant": sum(o.concordant for o in outcomes),
            "mean_rounds": round(sum(o.rounds for o in outcomes) / n, 3) if n else 0,
            "multi_round_cases": sum(o.rounds > 1 for o in outcomes),
            "conflicts": sum(o.conflicts for o in outcomes),
            "plans_informed_by_memory": sum(o.informed > 0 for o in outcomes),
            "past_cases_recalled": sum(o.informed for o in outcomes),
        }

    def handle(self, *args: Any, **options: Any) -> None:
        cases = sorted(Path(options["cases"]).glob("*.json"))
        seed = sorted(Path(options["seed"]).glob("*.json"))
        if not cases or not seed:
            raise CommandError("both --cases and --seed need case files")
        before = self._pass(cases, k=0)
        accepted, rejected = self._seed(seed)
        figures = memory_figures()
        after = self._pass(cases, k=5)
        self.stdout.write(
            f"{'case':<16} {'rounds':>9} {'conflicts':>11} {'concordant':>12} recalled"
        )
        for b, a in zip(before, after, strict=True):
            self.stdout.write(
                f"{b.case:<16} {b.rounds:>4} -> {a.rounds:<2} {b.conflicts:>5} -> {a.conflicts:<3}"
                f" {b.concordant!s:>5} -> {a.concordant!s:<5} {a.informed}"
                + ("  (pathway changed)" if a.pathway != b.pathway else "")
            )
        report = {
            "seed": {
                "cases": len(seed),
                "accepted": accepted,
                "rejected": rejected,
                "memory_active": figures.active,
                "correctkb": figures.correct,
                "chainkb": figures.chain,
            },
            "without_memory": self._summary("without memory", before),
            "with_memory": self._summary("with memory", after),
            "pathways_changed": sum(
                a.pathway != b.pathway for b, a in zip(before, after, strict=True)
            ),
        }
        self.stdout.write(json.dumps(report, indent=2))
