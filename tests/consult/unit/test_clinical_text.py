"""Members' and the engine's prose as a clinician reads it (consult.labels.clinical_text)."""

from __future__ import annotations

import pytest

from consult.labels import clinical_text, value_words


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # a field path and the unit that asked for it
        (
            "Some options depend on data that is not available: derived.frailty "
            "(for hcc.tx.best-supportive-care-frail)",
            "Some options depend on data that is not available: Frailty",
        ),
        # a unit id at the end of a bracketed list goes; the rest of the bracket stays
        (
            "Untreated varices (major, condition, hcc.ci.bevacizumab-untreated-varices); next",
            "Untreated varices (major, condition); next",
        ),
        # a trailing citation leaves one full stop
        (
            "Kept bevacizumab on condition: endoscopy first. (hcc.gate.endoscopy-before-bev).",
            "Kept bevacizumab on condition: endoscopy first.",
        ),
        # engine keys read as words
        (
            "LVEF organ_function.lvef_pct below 50 in acute_0_3m; albi_grade 2",
            "LVEF LVEF (%) below 50 in Acute (0–3 months); ALBI grade 2",
        ),
        ("treatment←radiation_oncology", "treatment←Radiation oncology"),
        # what is not an internal name is left alone
        ("e.g. RECIST 1.1, see www.nccn.org ...", "e.g. RECIST 1.1, see www.nccn.org ..."),
        ("carboplatin AUC 6: 804 mg (Calvert, CrCl 109 mL/min)", None),
    ],
)
def test_clinical_text_rewrites_internal_names_only(raw: str, shown: str | None) -> None:
    assert clinical_text(raw) == (raw if shown is None else shown)


def test_coded_values_read_as_words() -> None:
    assert value_words("future_pregnancy") == "future pregnancy"
    assert value_words("IIIA") == "IIIA"
    assert value_words(3) == 3
