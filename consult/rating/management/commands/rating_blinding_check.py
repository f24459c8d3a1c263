"""``manage.py rating_blinding_check --study NAME``: can length and wording alone tell the
system's plans from the comparators in a study's packets? Prints the surface features of each
arm, then, as its last line, the classifier's leave-one-packet-out AUC with its 95% CI
(consult/rating/blinding_check.py); 0.5 is chance."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.rating.analytics import study_blinding_check
from consult.rating.blinding import packet_texts
from consult.rating.blinding_check import FEATURES, plan_features
from consult.rating.models import Study


class Command(BaseCommand):
    help = "Blinding check of a rating study: a classifier on length and wording (AUC, 95% CI)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="the study's name")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(name=options["study"]).first()
        if study is None:
            raise CommandError(f"No study named {options['study']!r}.")
        packets = list(study.packets.select_related("plan", "comparator").order_by("sequence"))
        pairs = packet_texts([(p.plan.payload, p.comparator.payload) for p in packets])
        self.stdout.write(f"Study {study.name!r}: {len(pairs)} packets, as their raters read them.")
        if pairs:
            system = [plan_features(s) for s, _ in pairs]
            comparator = [plan_features(c) for _, c in pairs]
            self.stdout.write(f"{'feature':<26}{'system':>10}{'comparator':>12}")
            for i, name in enumerate(FEATURES):
                self.stdout.write(
                    f"{name:<26}{fmean(f[i] for f in system):>10.3f}"
                    f"{fmean(f[i] for f in comparator):>12.3f}"
                )
        check = study_blinding_check(study=study)
        if check is None:
            raise CommandError("Too few packets to measure (at least two are needed).")
        self.stdout.write(check.line())
