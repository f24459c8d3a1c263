"""``make bench``: measure and print figures as JSON lines {"name", "value", "unit", "target"}.

Runs against the real services in a database of its own (``mdtboard_bench``, dropped and
recreated each run), so it neither touches the development data nor depends on it. Figures
are printed, never asserted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.test")
os.environ["MDTBOARD_DB_NAME"] = "mdtboard_bench"
if not os.environ.get("DATABASE_URL"):
    from mdtboard import embedded

    repo = Path(__file__).resolve().parent.parent
    embedded.drop_database(Path(os.environ.get("MDTBOARD_VAR_DIR", repo / "var")), "mdtboard_bench")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from benchmarks import board, engine, intake, retrieval  # noqa: E402


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    quick = "--quick" in sys.argv
    intake.run()
    retrieval.run_quality()
    engine.run(quick=quick)
    board.run()
    retrieval.run_latency(large=not quick)


if __name__ == "__main__":
    main()
