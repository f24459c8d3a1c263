"""docs/coverage.md is generated from the seed, is current, and follows the seed."""

from __future__ import annotations

import shutil
from pathlib import Path

from knowledge.management.commands.coverage_map import SEED_DIR, seed_coverage_markdown
from tests.paths import REPO

NEW_UNIT = """
format: mdtboard.kb/1
sources: []
units:
  - key: lung.tx.leptomeningeal-osimertinib-test
    source: esmo-nsclc-oncogene-2023
    kind: therapy_step
    cancer_type: lung_adenocarcinoma
    title: "Test: osimertinib for EGFR-mutant leptomeningeal disease"
    text: >-
      A unit added for the test: an option written for leptomeningeal disease of an EGFR-mutant
      adenocarcinoma, so the situation becomes covered.
    anchor: "Test anchor"
    grade: {system: ESMO, native: "test", ordinal: 3}
    context:
      all:
        - {fact: derived.situations, op: contains_any, value: [leptomeningeal]}
    action:
      type: therapy
      modality: systemic
      description: "Osimertinib 160 mg daily for leptomeningeal disease (test unit)"
      agents: [osimertinib]
      intent: palliative
"""


def test_coverage_map_committed_doc_is_current() -> None:
    committed = (REPO / "docs" / "coverage.md").read_text(encoding="utf-8")
    assert committed == seed_coverage_markdown(), "run: python manage.py coverage_map"


def test_coverage_map_a_unit_added_to_the_seed_appears(tmp_path: Path) -> None:
    # given the seed with one more therapy option, for leptomeningeal lung disease
    for path in SEED_DIR.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    before = seed_coverage_markdown(tmp_path)
    (tmp_path / "zz-test.yaml").write_text(NEW_UNIT, encoding="utf-8")
    # when the map is generated again
    after = seed_coverage_markdown(tmp_path)
    # then the unit is listed, and leptomeningeal disease has left the lung's outside list
    assert "lung.tx.leptomeningeal-osimertinib-test" not in before
    assert "lung.tx.leptomeningeal-osimertinib-test" in after
    lung = after.split("## Lung")[1].split("## Breast")[0]
    outside = lung.split("Outside the pathways")[1]
    assert "(leptomeningeal)" not in outside
    assert "(leptomeningeal)" in lung.split("Outside the pathways")[0]
