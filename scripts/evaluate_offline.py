"""Evaluate case folders against the seed knowledge base without a database (guideline engine).

    .venv/bin/python scripts/evaluate_offline.py [FOLDER_OR_FILE ...] [-v]

Defaults to ../shared/cases/public and tests/cases. Prints one line per case and the totals;
-v prints each plan's pathway, alternatives and rejected options. For the inner loop of
knowledge-base work; `make evaluate` runs the same cases through the database and the worker.
"""

# ruff: noqa: T201 - a command-line report
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> int:
    import yaml

    from consult.casefile.validate import parse_case_bytes
    from consult.evaluation import concordance_failures, plan_offline
    from knowledge.bundle import bundle_from_documents

    verbose = "-v" in argv
    targets = [Path(a) for a in argv if a != "-v"] or [
        REPO.parent / "shared" / "cases" / "public",
        REPO / "tests" / "cases",
    ]
    seed = sorted((REPO / "knowledge" / "seed").glob("*.yaml"))
    bundle = bundle_from_documents([yaml.safe_load(p.read_text()) for p in seed])
    total = good = 0
    for target in targets:
        if not target.exists():
            print(f"== {target}: no such folder\n")
            continue
        files = sorted(target.rglob("*.json")) if target.is_dir() else [target]
        folder_good = 0
        for path in files:
            total += 1
            parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
            if not parsed.ok or parsed.data is None:
                print(f"{path.stem:<24} INVALID {[str(e) for e in parsed.errors][:2]}")
                continue
            plan = plan_offline(parsed.data, bundle)
            expected = json.loads(path.read_bytes()).get("expected") or {}
            failures = concordance_failures(plan, expected)
            print(f"{path.stem:<24} {'DISCORDANT' if failures else 'concordant'}")
            for failure in failures:
                print(f"    - {failure}")
            if verbose:
                for c in plan["recommendation"]["components"]:
                    tag = c.get("role", "?") + str(c.get("order") or c.get("rank") or "")
                    when = f"  [when: {c['when']}]" if c.get("when") else ""
                    dose = (
                        f"  [dose: {'; '.join(c['dose_adjustments'])}]"
                        if c.get("dose_adjustments")
                        else ""
                    )
                    print(f"      {tag:<13} {c['description'][:90]}{when}{dose}")
                for r in plan.get("rejected_options") or []:
                    print(f"      rejected      {r['option'][:60]} -- {r['reason'][:90]}")
                print(f"      summary: {plan['recommendation']['summary'][:300]}")
            folder_good += not failures
        good += folder_good
        print(f"== {target}: {folder_good}/{len(files)} concordant\n")
    print(f"TOTAL {good}/{total} concordant")
    return 0 if good == total else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
