"""Readers of untrusted free text (issue 26): the worst growth from 10 KB to 100 KB over every
reader and hostile shape, and the 32 KB case file of the probe on the three pages it slowed.

The readers and shapes are the tests' (tests/text_readers.py, tests/linearity.py); the test
fails a reader whose cost grows over 30 times for 10 times the text, this prints the worst
ratio seen (linear: about 10). The probe's case file passed validation and made the dossier
page take 21 s, its consultation 217 s and the plan page 18 s; here the same shapes, 8 KB in
each of the four long free-text fields, are timed through the code those pages run.
"""

from __future__ import annotations

import json
import time
from datetime import date
from typing import Any

from benchmarks.common import REPO, emit, repository_tests_package

# The probe's shapes: a cue repeated ("resistant to "), and 10 K strings of one token.
PROBE_TOKENS = ("resistant to ", "1", "BRCA", "é", "22/", "-")
FIELD_BYTES = 8_000


def probe_case(token: str) -> dict[str, Any]:
    """A case file of about 32 KB that passes validation: the token in the question, the
    notes, the preferences and the lesion description, 8 KB each."""
    case = json.loads((REPO / "tests" / "cases" / "hcc-01.json").read_text())
    case.pop("expected", None)
    chars = FIELD_BYTES * len(token) // len(token.encode())
    text = (token * (chars // len(token) + 1))[:chars]
    case["question"] = case["notes"] = text
    case.setdefault("patient", {})["preferences"] = text
    case.setdefault("index_lesion", {})["description"] = text
    return case


def _cpu(fn: Any) -> float:
    started = time.thread_time()
    fn()
    return time.thread_time() - started


def run() -> None:
    repository_tests_package()
    from clinical.calculators import derive_all
    from consult.casefile.validate import parse_case_bytes
    from consult.presenters import case_sections
    from tests import text_readers
    from tests.linearity import HOSTILE_SHAPES, text_growth

    worst = (0.0, "", "")
    for reader in text_readers.TEXT_READERS:
        for shape, token in HOSTILE_SHAPES.items():
            ratio = text_growth(reader, token)
            worst = max(worst, (ratio, reader.__name__, shape))
    emit(
        f"text_reader_worst_growth_10k_to_100k[{worst[1]}/{worst[2]}]",
        worst[0],
        "x",
        "< 30 (linear about 10)",
    )
    seconds = {"dossier": 0.0, "consultation": 0.0, "plan": 0.0}
    for token in PROBE_TOKENS:
        case = probe_case(token)
        raw = json.dumps(case, ensure_ascii=False).encode()
        parsed = parse_case_bytes(raw, filename="probe.json", today=date(2026, 6, 1))
        if parsed.data is None or parsed.errors:
            raise RuntimeError(f"the probe case file must pass validation: {parsed.errors}")
        seconds["dossier"] = max(
            seconds["dossier"], _cpu(lambda case=case: (case_sections(case), derive_all(case)))
        )
        plan: dict[str, Any] = {}
        seconds["consultation"] = max(
            seconds["consultation"],
            _cpu(lambda case=case, plan=plan: plan.update(text_readers._plan(case))),
        )
        seconds["plan"] = max(
            seconds["plan"], _cpu(lambda plan=plan, case=case: _plan_page(plan, case))
        )
    for page, value in seconds.items():
        emit(f"probe_case_32kb_{page}_worst", value * 1000, "ms CPU", "< 1000 ms")


def _plan_page(doc: dict[str, Any], case: dict[str, Any]) -> None:
    from clinical.calculators import derive_all
    from consult.labels import clinical_text
    from consult.plan_view import plan_view
    from consult.review.presenters import plan_lines, recommendation_view

    derived = {name: result.value for name, result in derive_all(case).items()}
    plan_view(doc)
    recommendation_view(doc, case=case, dossier_id=1, derived=derived, version_ids={})
    plan_lines(doc)
    for component in (doc.get("recommendation") or {}).get("components") or []:
        clinical_text(component.get("description"))
