"""``make bench``: measure and print figures as JSON lines {"name", "value", "unit", "target"}.

Runs against the real services in a database of its own (``mdtboard_bench``, dropped and
recreated each run), so it neither touches the development data nor depends on it. Figures
are printed, never asserted.

``--quick`` runs fewer concurrent consultations and a smaller retrieval corpus;
``--only=engine,journal`` runs just those parts.

``python -m benchmarks soak [--consultations N --watchers M --seconds S]`` (``make soak``) is
the fault-injection run instead (benchmarks/soak.py), in ``mdtboard_soak``; it exits non-zero
when an event was lost, duplicated or out of order, or a consultation is stuck.
``python -m benchmarks report`` prints the PDF report figures alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SOAK = sys.argv[1:2] == ["soak"]
DATABASE = "mdtboard_soak" if SOAK else "mdtboard_bench"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.test")
os.environ["MDTBOARD_DB_NAME"] = DATABASE
if SOAK:
    # Redis databases of its own, apart from the tests' (3-5) and `make run`'s (0-2): its
    # workers take no test's task, and no test worker takes its tasks.
    os.environ.setdefault("REDIS_DB_CELERY", "6")
    os.environ.setdefault("REDIS_DB_CHANNELS", "7")
    os.environ.setdefault("REDIS_DB_CACHE", "8")
if not os.environ.get("DATABASE_URL"):
    from mdtboard import embedded

    repo = Path(__file__).resolve().parent.parent
    embedded.drop_database(Path(os.environ.get("MDTBOARD_VAR_DIR", repo / "var")), DATABASE)

from benchmarks.common import repository_tests_package  # noqa: E402
from mdtboard.bootstrap import embedded_servers  # noqa: E402

repository_tests_package()

embedded_servers()

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from benchmarks import (  # noqa: E402
    board,
    engine,
    fhir,
    intake,
    journal,
    parsers,
    report,
    retrieval,
    startup,
    textreaders,
    tokens,
)


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    if SOAK:
        from benchmarks import soak

        sys.exit(soak.main(sys.argv[2:]))
    if sys.argv[1:2] == ["report"]:  # the PDF figures alone
        report.run()
        return
    quick = "--quick" in sys.argv
    # --only engine,journal: just those parts (while working on one of them).
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "")
    parts = {
        "parsers": parsers.run,
        "textreaders": textreaders.run,
        "intake": intake.run,
        "fhir": fhir.run,
        "retrieval": retrieval.run_quality,
        "engine": lambda: engine.run(quick=quick),
        "tokens": tokens.run,
        "startup": startup.run,
        "board": board.run,
        "journal": journal.run,
        "report": report.run,
        "latency": lambda: retrieval.run_latency(large=not quick),
    }
    for name, part in parts.items():
        if not only or name in only.split(","):
            part()


if __name__ == "__main__":
    main()
