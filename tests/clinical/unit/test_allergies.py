"""The recorded allergies as drug classes: what a clinician writes ("Penicillin - anaphylaxis",
"NKDA", "iodine contrast") rules out the right classes, with beta-lactam cross-reactivity, and a
missing record stays "not checked"."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.allergies import allergies_unmapped, allergy_classes


def _case(allergies: Any) -> dict[str, Any]:
    return {"patient": {"allergies": allergies}}


@pytest.mark.parametrize(
    ("allergies", "classes"),
    [
        (["Penicillin - anaphylaxis (1998)"], ["beta_lactam_cross", "penicillin"]),
        (["Augmentin (rash)"], ["beta_lactam_cross", "penicillin"]),
        (["carboplatin - grade 3 infusion reaction"], ["platinum"]),
        (["Paclitaxel hypersensitivity"], ["taxane"]),
        (["iodinated contrast (urticaria)"], ["iodinated_contrast"]),
        (["Sulfa drugs"], ["sulfonamide_antibiotic"]),
        (["rituximab - anaphylaxis"], ["murine_chimeric_antibody"]),
        (["NKDA"], []),
        (["No known drug allergies"], []),
        ([], []),
        (["no penicillin allergy (tested negative 2020)"], []),
    ],
)
def test_allergy_classes_reads_the_entries_a_clinician_writes(
    allergies: list[str], classes: list[str]
) -> None:
    # given recorded allergies / when they are read / then they rule out these classes
    assert allergy_classes(_case(allergies)).value == classes


def test_allergy_classes_without_a_record_is_not_checked() -> None:
    # given no allergy record at all
    result = allergy_classes(_case(None))
    # then the value is unknown and the record is what is missing
    assert result.value is None
    assert result.inputs_missing == ["patient.allergies"]


def test_allergies_unmapped_names_what_must_be_checked_by_hand() -> None:
    # given a drug allergy the table knows and a non-drug one it does not
    case = _case(["carboplatin (anaphylaxis)", "latex", "NKDA"])
    # then only the unknown entry is left for the clinician
    assert allergies_unmapped(case).value == ["latex"]
    assert allergy_classes(case).value == ["platinum"]
