"""``make bench``: measure and print figures as JSON lines {"name", "value", "unit", "target"}.

Runs against the real services in a database of its own (``mdtboard_bench``), so it neither
touches the development data nor depends on it. Figures are printed, never asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.test")
os.environ["MDTBOARD_DB_NAME"] = "mdtboard_bench"

import django

django.setup()

from django.core.management import call_command  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PUBLIC_CASES = REPO.parent / "shared" / "cases" / "public"


def emit(name: str, value: float, unit: str, target: str | None = None) -> None:
    print(json.dumps({"name": name, "value": round(value, 3), "unit": unit, "target": target}))  # noqa: T201
    sys.stdout.flush()


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18]


def main() -> None:
    call_command("migrate", interactive=False, verbosity=0)
    from consult.casefile.validate import parse_case_bytes
    from consult.services.dossiers import case_import
    from mdtboard.accounts.models import User
    from mdtboard.accounts.roles import Role
    from mdtboard.accounts.services import team_get_or_create, user_create
    from mdtboard.audit.services import audit_record, audit_verify

    team = team_get_or_create(name="Bench MDT")
    user = User.objects.filter(email="bench@bench.test").first() or user_create(
        email="bench@bench.test", role=Role.CLINICIAN, teams=[team]
    )
    files = sorted(PUBLIC_CASES.glob("*.json"))
    raws = [path.read_bytes() for path in files]

    samples = timed(lambda: [parse_case_bytes(raw, filename="b.json") for raw in raws], 20)
    per_case = [s / len(raws) for s in samples]
    emit("casefile_validate_p50", statistics.median(per_case), "ms/case")

    audit_samples = timed(lambda: audit_record(action="bench.tick", actor=user), 300)
    emit("audit_append_p50", statistics.median(audit_samples), "ms")
    emit("audit_append_p95", p95(audit_samples), "ms")

    started = time.perf_counter()
    report = audit_verify()
    emit("audit_verify_rate", report.checked / (time.perf_counter() - started), "events/s")

    import_samples = []
    for round_no in range(5):
        for path, raw in zip(files, raws, strict=True):
            doc = json.loads(raw)
            doc["case_id"] = f"{doc['case_id']}-b{round_no}-{time.time_ns()}"
            payload = json.dumps(doc).encode()
            started = time.perf_counter()
            case_import(actor=user, team=team, raw=payload, filename=path.name)
            import_samples.append((time.perf_counter() - started) * 1000)
    emit("case_import_p50", statistics.median(import_samples), "ms")
    emit("case_import_p95", p95(import_samples), "ms")


if __name__ == "__main__":
    main()
