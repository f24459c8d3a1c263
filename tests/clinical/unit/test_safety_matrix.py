"""The drug-safety matrix (clinical/safety_matrix.yaml, docs/safety-matrix.md) against the seed
knowledge base: every drug the seed can put in a plan has its rows, every row is enforced by a
rule that names the drug and reads the row's fields, and the committed document is current."""

from __future__ import annotations

from typing import Any

from clinical.rules import Bundle
from clinical.safety_matrix import Matrix, coverage, load_matrix, render_markdown, seed_drugs
from tests.paths import REPO

DOC = REPO / "docs" / "safety-matrix.md"
FAMILIES = (
    "dpd", "ugt1a1", "ild", "bleeding", "anticoagulation", "irae", "hbv", "qt", "cyp3a4",
    "neuropathy", "renal", "hepatic", "cardiac", "tls",
)  # fmt: skip


def _with(matrix: Matrix, **changes: Any) -> Matrix:
    return Matrix.model_validate({**matrix.model_dump(), **changes})


def test_every_seed_drug_has_a_row_or_a_reason(bundle: Bundle) -> None:
    result = coverage(bundle)
    assert result.missing_drugs == []
    assert len(result.covered) + len(result.exempt) == len(seed_drugs(bundle))
    assert "capecitabine" in result.covered
    assert "trastuzumab deruxtecan" in result.covered


def test_every_row_is_enforced_by_a_rule_that_names_its_drug(bundle: Bundle) -> None:
    result = coverage(bundle)
    assert result.problems == []
    assert all(entry.rules for entry in result.entries)


def test_every_required_family_has_rows_with_rules(bundle: Bundle) -> None:
    families = {e.family for e in coverage(bundle).entries if e.rules}
    assert set(FAMILIES) <= families


def test_the_committed_document_is_current(bundle: Bundle) -> None:
    # regenerate with: manage.py safety_matrix
    assert DOC.read_text(encoding="utf-8") == render_markdown(bundle) + "\n"


def test_a_seed_drug_without_a_row_is_reported(bundle: Bundle) -> None:
    matrix = load_matrix()
    rows = [r.model_dump() for r in matrix.rows if "sacituzumab govitecan" not in r.drugs]
    result = coverage(bundle, _with(matrix, rows=rows))
    assert "sacituzumab govitecan" in result.missing_drugs


def test_a_row_without_a_rule_or_with_a_rule_for_other_drugs_is_reported(bundle: Bundle) -> None:
    matrix = load_matrix()
    row = {
        "drugs": ["capecitabine"],
        "precondition": "ugt1a1_poor",
        "requirement": "made up for the test",
        "source": "no source, a test row",
        "rules": [],
    }
    wrong_rule = {**row, "rules": ["common.gate.pemetrexed-renal"]}
    result = coverage(bundle, _with(matrix, rows=[*matrix.model_dump()["rows"], row, wrong_rule]))
    assert any("no rule" in p for p in result.problems)
    assert any("names none of the row's drugs" in p for p in result.problems)


def test_a_step_before_the_drug_needs_a_rule_that_stays_unknown(bundle: Bundle) -> None:
    # QT co-medication rules are not critical: declaring a confirmation step for them is caught
    matrix = load_matrix()
    rows = [
        {**r.model_dump(), "unknown": "step_before"} if r.precondition == "qt_drugs" else r
        for r in matrix.rows
    ]
    result = coverage(bundle, _with(matrix, rows=rows))
    assert any("qt_drugs x ribociclib" in p and "step_before" in p for p in result.problems)


def test_document_lists_each_drug_with_its_handling(bundle: Bundle) -> None:
    text = render_markdown(bundle)
    capecitabine = text.split("### capecitabine", 1)[1].split("### ", 1)[0]
    assert "DPD deficiency" in capecitabine
    assert "step before the drug" in capecitabine
    assert "common.ci.dpd-complete-deficiency" in capecitabine
    assert "`biomarkers.dpd_status`" in capecitabine
    assert "`dpd_complete`" in capecitabine
