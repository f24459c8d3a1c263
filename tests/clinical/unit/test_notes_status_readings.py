"""What a letter states only in prose, read as a clinician reads it: whether varices are high-risk
and untreated (size, red signs, banding or a beta-blocker, in the finding's sentence or the next),
whether the patient carries an organ graft (not a transplant candidacy), and whether the disease
progresses in a few sites only while the current therapy controls the rest."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from clinical.calculators.course import oligoprogression
from clinical.calculators.history import progressed_on
from clinical.text.reader import read_facts

AS_OF = date(2026, 11, 27)


def _varices(text: str) -> object:
    return {f.fact: f.value for f in read_facts(text, as_of=AS_OF)}.get("organ_function.varices")


def _transplant(text: str) -> object:
    facts = {f.fact: f.value for f in read_facts(text, as_of=AS_OF)}
    return facts.get("diagnosis.transplant_history")


# --- varices ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # the treatment status in the sentence after the finding
        "Endoscopy ahead of planned chemotherapy: grade III oesophageal varices with red wale "
        "marks. Nothing was banded at that sitting.",
        "OGD last week: F2 varices. Awaiting banding.",
        "Medium-to-large oesophageal varices with cherry-red spots; no banding yet.",
        "Grade II-III varices, not yet treated.",
        "Large varices. He has not been started on a beta-blocker.",
        "Small varices with red colour signs.",
        "Grade III varices banded twice, not yet eradicated.",
        "Large varices; propranolol stopped because of hypotension.",
        "Gastroscopy: big varices. Referred for band ligation.",
        # a beta-blocker does not outweigh banding that was explicitly not done
        "Portal hypertension with large varices on carvedilol, not banded.",
    ],
)
def test_untreated_high_risk_varices_are_read(text: str) -> None:
    # given a letter that describes large or red-sign varices not (yet) treated
    # when it is read / then the varices are high-risk and untreated
    assert _varices(text) == "large_untreated"


@pytest.mark.parametrize(
    "text",
    [
        "Grade III varices. Banded to eradication in 2025.",
        "Large varices with red spots, on carvedilol 6.25 mg daily.",
        "Bled from varices in March; banded over three sessions and started on carvedilol.",
        "Medium varices, ligated last month.",
        "Variceal bleed 4 weeks ago requiring banding and transfusion.",
    ],
)
def test_treated_varices_are_read_as_treated(text: str) -> None:
    assert _varices(text) == "treated"


def test_look_alikes_of_high_risk_varices() -> None:
    # red signs denied, small varices: not high-risk
    assert _varices("Small varices without red signs.") == "small"
    assert _varices("F1 varices, no red wale marks.") == "small"
    # a plan to look for varices is not a finding
    assert _varices("Endoscopy planned to look for varices.") is None
    # a plan word after the finding still makes it a plan ("Transplant: planned")
    assert _transplant("Liver transplant: planned.") is None


# --- transplant ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "organ"),
    [
        ("He received a deceased-donor liver graft in 2019; graft function normal.", "liver"),
        ("Liver graft recipient since 2017, on tacrolimus.", "liver"),
        ("Orthotopic liver transplantation in 2018; stable graft on sirolimus.", "liver"),
        ("Living-donor kidney transplant in 2015, on tacrolimus.", "kidney"),
        ("His transplanted kidney functions well on ciclosporin.", "kidney"),
    ],
)
def test_a_graft_stated_in_the_notes_is_a_transplant(text: str, organ: str) -> None:
    assert _transplant(text) == organ


@pytest.mark.parametrize(
    "text",
    [
        "Beyond Milan; liver transplant was discussed and is not an option.",
        "He is a liver transplant candidate.",
        "Listed for liver transplantation in 2025.",
        "Not a candidate for liver transplant.",
        "Suitable for a liver graft if downstaged.",
        "On the waiting list for a kidney transplant.",
        "Liver transplant assessment is under way.",
    ],
)
def test_transplant_candidacy_is_not_a_graft(text: str) -> None:
    assert _transplant(text) is None


# --- oligoprogression ------------------------------------------------------------------------

_OSIMERTINIB = [
    {
        "line": 1,
        "kind": "systemic",
        "regimen": "osimertinib 80 mg daily",
        "start_date": "2025-02-10",
    }
]


def _progressing(notes: str) -> dict[str, Any]:
    return {
        "cancer_type": "lung_adenocarcinoma",
        "diagnosis": {"setting": "progressive", "prior_therapies": _OSIMERTINIB},
        "notes": notes,
    }


@pytest.mark.parametrize(
    "notes",
    [
        "The adrenal is the only site that is growing; everything else remains in response.",
        "Restaging: the only thing growing is the left adrenal deposit. Brain clear.",
        "Isolated progression of the right adrenal metastasis.",
        "Progression confined to one site (liver segment 6).",
        "Progression is limited to two bone lesions.",
        "The adrenal deposit is enlarging; otherwise the disease remains controlled.",
        "Only the adrenal metastasis has grown.",
        "A single left upper lobe lesion has enlarged; liver deposits unchanged, brain clear.",
        "One new liver lesion has appeared; otherwise the disease is stable.",
        "Multiple bone metastases remain stable; the sole lesion progressing is the adrenal.",
    ],
)
def test_oligoprogression_in_prose(notes: str) -> None:
    result = oligoprogression(_progressing(notes))
    assert result.value is True
    assert "stated" in result.detail


@pytest.mark.parametrize(
    "notes",
    [
        "The adrenal is not the only site growing: new liver lesions as well.",
        "Widespread progression in liver and bone.",
        "Progression at multiple sites.",
    ],
)
def test_look_alikes_of_oligoprogression(notes: str) -> None:
    assert oligoprogression(_progressing(notes)).value is not True


def test_the_line_that_continues_at_oligoprogression_is_not_failed() -> None:
    # given oligoprogression on osimertinib
    oligo = _progressing("The adrenal is the only site that is growing; the rest is stable.")
    # then osimertinib is not a drug the disease progressed on (it goes on with SABR) ...
    assert progressed_on(oligo).value == []
    # ... while widespread progression on it is
    widespread = _progressing("Widespread progression in liver and bone.")
    assert progressed_on(widespread).value == ["osimertinib 80 mg daily"]
