"""Golden outcomes of the safety gate: for every case of tests/cases and ../shared/cases/public,
the guideline engine's plan reduced to what the gate decides — each gate's rule, status and
effect, and the pathway's steps in order (modality and drugs), then the alternatives.

    .venv/bin/python scripts/gate_goldens.py          # rewrites the golden file
    .venv/bin/python scripts/gate_goldens.py --check  # exit 1, naming the cases that differ

The file: tests/consult/engine/gate_goldens.json. The public cases are read from
MDTBOARD_SHARED_DIR/cases/public (default ../shared beside the repository).

``tests/consult/engine/test_gate_goldens.py`` compares every plan with the file. A change of the
gate, of the seed or of a case changes it on purpose: rewrite the file and read its diff — it is
the review of what the change did to every plan.
"""

# ruff: noqa: T201 - a command-line report
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GOLDEN = REPO / "tests" / "consult" / "engine" / "gate_goldens.json"


def case_files() -> list[Path]:
    """tests/cases, then the shared public cases (MDTBOARD_SHARED_DIR, or ../shared)."""
    shared = Path(os.environ.get("MDTBOARD_SHARED_DIR") or REPO.parent / "shared")
    return [
        *sorted((REPO / "tests" / "cases").glob("*.json")),
        *sorted((shared / "cases" / "public").glob("*.json")),
    ]


def case_key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _step(component: Mapping[str, Any]) -> str:
    agents = ", ".join(sorted(a.casefold() for a in component.get("agents") or ()))
    return f"{component['modality']}: {agents}" if agents else str(component["modality"])


def summary(plan: Mapping[str, Any]) -> dict[str, Any]:
    """What the gate decided for one plan, in a form whose diff a reviewer reads line by line."""
    components = plan["recommendation"]["components"]
    return {
        "pathway": [_step(c) for c in components if c["role"] == "primary"],
        "alternatives": [_step(c) for c in components if c["role"] == "alternative"],
        "gates": [
            f"{g['gate']} [{g.get('unit') or '-'}]: {g['status']} / {g.get('effect') or '-'}"
            for g in plan["safety"]["gates"]
        ],
    }


def plans() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every case's plan by the guideline engine over the seed (no database)."""
    # Django-free imports, made here so that --help does not load the engine.
    import yaml

    from consult.casefile.validate import parse_case_bytes
    from consult.evaluation import plan_offline
    from knowledge.bundle import bundle_from_documents

    seed = sorted((REPO / "knowledge" / "seed").glob("*.yaml"))
    bundle = bundle_from_documents([yaml.safe_load(p.read_text()) for p in seed])
    for path in case_files():
        parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
        if not parsed.ok or parsed.data is None:
            raise SystemExit(f"{path}: invalid case file: {parsed.errors}")
        yield case_key(path), plan_offline(parsed.data, bundle)


def main(argv: list[str]) -> int:
    current = {key: summary(plan) for key, plan in plans()}
    if "--check" in argv:
        golden = json.loads(GOLDEN.read_text())
        keys = golden.keys() | current.keys()
        differ = sorted(k for k in keys if golden.get(k) != current.get(k))
        for key in differ:
            print(f"{key}: differs")
        return 1 if differ else 0
    GOLDEN.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(current)} plans written to {GOLDEN.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
