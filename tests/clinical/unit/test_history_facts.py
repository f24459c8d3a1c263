"""The prior therapies with their outcome (progressed on, stopped for intolerance), read from
the structured history and from the notes with negation; the breast tumour genomics that
choose the line after a CDK4/6 inhibitor; the breast operation already done."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.calculators.breast_genomics import (
    esr1_mutation,
    pi3k_pathway_altered,
    pik3ca_mutation,
)
from clinical.calculators.breast_local import breast_surgery_done
from clinical.calculators.history import (
    intolerant_of,
    prior_regimens_with_history,
    progressed_on,
    treatment_line_with_history,
)


def case(
    therapies: list[dict[str, Any]] | None = None, notes: str | None = None, setting: str = ""
) -> dict[str, Any]:
    return {
        "cancer_type": "breast",
        "diagnosis": {"prior_therapies": therapies, "setting": setting or None},
        "notes": notes,
    }


def test_history_recorded_progression_and_intolerance() -> None:
    # given a structured history: one line progressed, one stopped for toxicity
    therapies = [
        {"line": 1, "regimen": "Letrozole + palbociclib", "stop_reason": "progression"},
        {"line": 2, "regimen": "capecitabine", "stop_reason": "intolerance"},
    ]
    # then each outcome lists its regimen
    assert progressed_on(case(therapies)).value == ["letrozole + palbociclib"]
    assert intolerant_of(case(therapies)).value == ["capecitabine"]


def test_history_a_course_of_phases_stopped_for_toxicity_stopped_in_its_last_phase() -> None:
    # given chemoradiation then consolidation immunotherapy, stopped for toxicity
    regimen = (
        "concurrent carboplatin-paclitaxel chemoradiation 60 Gy, then durvalumab consolidation"
    )
    therapies = [{"line": 0, "regimen": regimen, "stop_reason": "toxicity"}]
    # then the drug not tolerated is the consolidation, not the chemotherapy given in full
    assert intolerant_of(case(therapies)).value == ["durvalumab consolidation"]
    # and a stop for progression still fails the whole course
    progressed = [{"line": 1, "regimen": regimen, "stop_reason": "progression"}]
    assert progressed_on(case(progressed)).value == [regimen.lower()]


def test_history_best_response_pd_is_progression() -> None:
    therapies = [{"line": 1, "regimen": "R-CHOP x6", "best_response": "PD"}]
    assert progressed_on(case(therapies)).value == ["r-chop x6"]


def test_history_latest_line_of_a_progressive_case_progressed_unless_said_otherwise() -> None:
    therapies = [
        {"line": 1, "regimen": "atezolizumab + bevacizumab", "best_response": "PR"},
    ]
    assert progressed_on(case(therapies, setting="progressive")).value == [
        "atezolizumab + bevacizumab"
    ]
    # a recurrence long after a completed line is not progression on it
    assert progressed_on(case(therapies, setting="recurrent")).value == []
    completed = [{**therapies[0], "stop_reason": "completed"}]
    assert progressed_on(case(completed, setting="progressive")).value == []


@pytest.mark.parametrize(
    ("notes", "progressed", "intolerant"),
    [
        (
            "Progressed on first-line letrozole-palbociclib after 22 months.",
            ["letrozole-palbociclib"],
            [],
        ),
        (
            "Sorafenib stopped after 7 weeks for grade 3 hand-foot skin reaction.",
            [],
            ["sorafenib"],
        ),
        ("Intolerant of capecitabine (grade 3 diarrhoea).", [], ["capecitabine"]),
        (
            "Osimertinib-resistant disease; did not tolerate lenvatinib.",
            ["osimertinib"],
            ["lenvatinib"],
        ),
        # negated or harmless mentions state nothing
        ("No progression on anastrozole so far.", [], []),
        ("Relapsed after R-CHOP in 2024.", [], []),  # a relapse after a completed line
        (
            "Progression after 9 months of atezolizumab-bevacizumab.",
            ["atezolizumab-bevacizumab"],
            [],
        ),
        ("Sorafenib stopped after 6 cycles without toxicity.", [], []),
    ],
)
def test_history_read_from_the_notes(
    notes: str, progressed: list[str], intolerant: list[str]
) -> None:
    assert progressed_on(case([], notes)).value == progressed
    assert intolerant_of(case([], notes)).value == intolerant


def test_history_not_recorded_is_unknown() -> None:
    result = progressed_on({"cancer_type": "hcc", "diagnosis": {}})
    assert result.value is None
    assert result.inputs_missing == ["diagnosis.prior_therapies"]


def test_history_regimens_stated_only_in_the_notes_count_as_lines() -> None:
    # given an empty structured history and a note that states a first line
    notes = "Metastatic since 2023: progressed on first-line letrozole plus ribociclib."
    # then the case is planned as a second line, with that regimen as prior
    assert treatment_line_with_history(case([], notes)).value == 2
    assert prior_regimens_with_history(case([], notes)).value == ["letrozole plus ribociclib"]
    # and a structured history is not second-guessed by the notes
    listed = [{"line": 1, "regimen": "letrozole"}]
    assert treatment_line_with_history(case(listed, notes)).value == 2
    assert prior_regimens_with_history(case(listed, notes)).value == ["letrozole"]


@pytest.mark.parametrize(
    ("notes", "esr1", "pik3ca", "pathway"),
    [
        ("PIK3CA and ESR1 wild-type on ctDNA.", False, False, False),
        (
            "ctDNA: ESR1 Y537S mutation detected; PIK3CA, AKT1 and PTEN wild-type.",
            True,
            False,
            False,
        ),
        ("PIK3CA H1047R mutation on tissue; ESR1 pending.", None, True, True),
        ("PIK3CA mutated and ESR1 wild-type.", False, True, True),
        ("No ESR1 mutation. PTEN loss on NGS.", False, None, True),
        ("AKT1 E17K mutated.", None, None, True),
        ("No molecular results yet.", None, None, None),
    ],
)
def test_breast_genomics_read_with_negation(
    notes: str, esr1: bool | None, pik3ca: bool | None, pathway: bool | None
) -> None:
    facts = case(notes=notes)
    assert esr1_mutation(facts).value is esr1
    assert pik3ca_mutation(facts).value is pik3ca
    assert pi3k_pathway_altered(facts).value is pathway


@pytest.mark.parametrize(
    ("therapies", "notes", "done"),
    [
        (
            [{"regimen": "TCHP x6, then breast-conserving surgery and axillary dissection"}],
            None,
            "breast_conserving",
        ),
        (
            [],
            "Right lumpectomy and sentinel node biopsy on 2026-10-02: pT1c pN0.",
            "breast_conserving",
        ),
        ([], "Wide local excision, then completion mastectomy for positive margins.", "mastectomy"),
        ([], "Partial mastectomy with clear margins.", "breast_conserving"),
        # plans, refusals and negations are not operations done
        ([], "Lumpectomy planned next week.", "none_recorded"),
        ([], "She declines mastectomy.", "none_recorded"),
        ([], "No surgery yet.", "none_recorded"),
        (None, None, "none_recorded"),
    ],
)
def test_breast_surgery_done_read_from_history_and_notes(
    therapies: list[dict[str, Any]] | None, notes: str | None, done: str
) -> None:
    assert breast_surgery_done(case(therapies, notes)).value == done
