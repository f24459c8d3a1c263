"""Case intake figures: validation, audit appends and verification, case import."""

from __future__ import annotations

import json
import time

from benchmarks.common import PUBLIC_CASES, emit, p50, p95, timed


def run() -> None:
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
    emit("casefile_validate_p50", p50([s / len(raws) for s in samples]), "ms/case")

    audit_samples = timed(lambda: audit_record(action="bench.tick", actor=user), 300)
    emit("audit_append_p50", p50(audit_samples), "ms")
    emit("audit_append_p95", p95(audit_samples), "ms")

    started = time.perf_counter()
    report = audit_verify()
    emit("audit_verify_rate", report.checked / (time.perf_counter() - started), "events/s")

    import_samples = []
    for round_no in range(5):
        for path, raw in zip(files, raws, strict=True):
            doc = json.loads(raw)
            doc["case_id"] = f"{doc['case_id']}-b{round_no}"
            payload = json.dumps(doc).encode()
            started = time.perf_counter()
            case_import(actor=user, team=team, raw=payload, filename=path.name)
            import_samples.append((time.perf_counter() - started) * 1000)
    emit("case_import_p50", p50(import_samples), "ms")
    emit("case_import_p95", p95(import_samples), "ms")
