"""``manage.py load_kb_seed``: load the shipped demonstration knowledge base (idempotent).

``make run`` runs it at every start, so it only adds seed units that do not exist yet, brings
units no curator has touched to the new seed and retires those the seed no longer ships: a unit
a curator has worked on belongs to the curators, and the seed never overwrites, revives or
buries their versions. An operator's seed upgrade never weakens a published safety rule alone:
a seed version that would is left in review, and a safety unit the seed no longer ships has its
retirement asked for; both wait for a curator or an administrator to approve them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from knowledge.models import UnitVersion, VersionStatus
from knowledge.services import (
    bundle_import,
    bundle_parse,
    seed_units_retire_removed,
    versions_embed,
)

SEED_DIR = Path(__file__).resolve().parents[2] / "seed"


class Command(BaseCommand):
    help = (
        "Load the seed knowledge base (knowledge/seed/*.yaml): publish the seed units (and "
        "add the sources) that do not exist yet, then embed every published version that has "
        "no embedding yet. Units and sources already present are left as the curators keep "
        "them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", type=Path, default=SEED_DIR)

    def handle(self, *args: Any, **options: Any) -> None:
        files = sorted(options["dir"].glob("*.yaml"))
        if not files:
            raise CommandError(f"no seed files in {options['dir']}")
        raw = b"\n---\n".join(path.read_bytes() for path in files)
        bundle, errors = bundle_parse(raw, filename="seed.yaml")
        if bundle is None:
            raise CommandError(
                "seed knowledge base is invalid:\n"
                + "\n".join(f"  {e.where}: {e.message}" for e in errors)
            )
        result = bundle_import(
            actor=None,
            bundle=bundle,
            publish=True,
            reason="demonstration seed shipped with the application",
        )
        removal = seed_units_retire_removed(
            keys=[u.key for u in bundle.units],
            reason="no longer in the demonstration seed (renamed or withdrawn)",
        )
        missing = list(
            UnitVersion.objects.filter(
                status=VersionStatus.PUBLISHED, embedding__isnull=True
            ).values_list("pk", flat=True)
        )
        embedded = versions_embed(version_ids=missing) if missing else 0
        new = result.published - result.upgraded
        upgraded = (
            f"; {result.upgraded} uncurated seed units brought to the new seed"
            if result.upgraded
            else ""
        )
        gone = (
            f"; {len(removal.retired)} uncurated units the seed no longer ships retired "
            f"({', '.join(removal.retired)})"
            if removal.retired
            else ""
        )
        self.stdout.write(
            f"Knowledge base: {len(bundle.units)} seed units ({new} new, published "
            f"now; {result.unchanged} already present, left as they are{upgraded}{gone}), "
            f"{embedded} embedded."
        )
        if result.weakening:
            self.stdout.write(
                f"{len(result.weakening)} seed changes weaken a published safety rule and wait "
                "in the review queue for a curator or an administrator to approve them: "
                + ", ".join(result.weakening)
            )
        if removal.awaiting:
            self.stdout.write(
                f"{len(removal.awaiting)} safety units the seed no longer ships stay published "
                "until a curator or an administrator approves their retirement: "
                + ", ".join(removal.awaiting)
            )
