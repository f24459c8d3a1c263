"""Unit tests for the patient-preferences reader (derived.declines / derived.wants)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clinical.applicability import case_facts
from clinical.text.preferences import (
    DECLINE_TOPICS,
    WANT_TOPICS,
    declines,
    parse_preferences,
    wants,
)


def _case(preferences: Any) -> dict[str, Any]:
    return {
        "format": "mdtboard.case/1",
        "case_id": "t",
        "cancer_type": "breast",
        "patient": {"preferences": preferences},
    }


@pytest.mark.parametrize(
    ("text", "declined", "wanted"),
    [
        # plain refusals
        ("Declines surgery.", ["surgery"], []),
        ("Refuses chemotherapy.", ["chemotherapy"], []),
        ("She does not want an operation.", ["surgery"], []),
        ("Would rather avoid intravenous treatment.", ["intravenous_therapy"], []),
        ("No blood transfusions (Jehovah's Witness).", ["transfusion"], []),
        ("Jehovah's Witness.", ["transfusion"], []),
        ("Patient doesn't want chemo.", ["chemotherapy"], []),
        ("Declines surgery and chemotherapy.", ["surgery", "chemotherapy"], []),
        ("Surgery and radiotherapy declined.", ["surgery", "radiotherapy"], []),
        ("Wants surgery, not chemotherapy.", ["chemotherapy"], []),
        ("Keen on surgery but not on immunotherapy.", ["immunotherapy"], []),
        ("Refuses mastectomy but would accept lumpectomy.", ["mastectomy"], []),
        ("Prefers radiotherapy rather than surgery.", ["surgery"], []),
        ("Does not wish to be admitted to hospital.", ["hospitalisation"], []),
        ("Is against hormone therapy.", ["endocrine_therapy"], []),
        ("Would not accept a liver transplant.", ["transplant"], []),
        ("Does not want CAR-T.", ["cellular_therapy"], []),
        ("Declines CAR T-cell therapy but would accept a transplant.", ["cellular_therapy"], []),
        ("Refuses chimeric antigen receptor T-cell therapy.", ["cellular_therapy"], []),
        ("Open to CAR-T if needed.", [], []),
        ("Declines chemoradiotherapy.", ["chemotherapy", "radiotherapy"], []),
        # not declines: acceptance and double negatives
        ("Would accept surgery.", [], []),
        ("Is not opposed to surgery.", [], []),
        ("Would not refuse surgery.", [], []),
        ("Has no objection to radiotherapy.", [], []),
        ("Does not mind chemotherapy.", [], []),
        ("Not against immunotherapy.", [], []),
        ("Open to an operation if needed.", [], []),
        # wishes
        ("Wishes to preserve fertility.", [], ["fertility_preservation"]),
        ("Wants more children.", [], ["fertility_preservation", "future_pregnancy"]),
        ("Fertility is important to her.", [], ["fertility_preservation"]),
        ("Prefers oral therapy.", [], ["oral_therapy"]),
        ("Would prefer tablets.", [], ["oral_therapy"]),
        ("Wants breast-conserving surgery.", [], ["breast_conservation"]),
        ("Would like to keep her breast.", [], ["breast_conservation"]),
        ("Would rather avoid frequent hospital visits.", [], ["fewer_hospital_visits"]),
        (
            "Lives far away and wants as few hospital visits as possible.",
            [],
            ["fewer_hospital_visits"],
        ),
        # no fertility wish
        ("Does not want more children.", [], []),
        ("Family complete.", [], []),
        ("No further children planned.", [], []),
        ("No longer wants children.", [], []),
        ("Declines fertility preservation.", [], []),
        ("Her family is complete; she would like to avoid chemotherapy.", ["chemotherapy"], []),
        # mixed
        (
            "Declines mastectomy, wishes to keep her breast. Prefers oral therapy over infusions "
            "and would rather avoid frequent hospital visits.",
            ["mastectomy"],
            ["breast_conservation", "oral_therapy", "fewer_hospital_visits"],
        ),
        # negation scope stops at a conjunction or comma
        ("She has no children and wants to preserve fertility.", [], ["fertility_preservation"]),
        (
            "Has no children, would like to have children in future.",
            [],
            ["fertility_preservation", "future_pregnancy"],
        ),
        ("Prefers not to have chemotherapy.", ["chemotherapy"], []),
        ("Not keen on chemotherapy.", ["chemotherapy"], []),
        ("Is not opposed to surgery and radiotherapy.", [], []),
        ("Does not want chemotherapy or radiotherapy.", ["chemotherapy", "radiotherapy"], []),
        # a refusal in a clause of its own applies to the topic just offered
        ("Offered chemotherapy but declined.", ["chemotherapy"], []),
        ("Surgery was discussed. She refused.", ["surgery"], []),
        ("Radiotherapy offered. Lives alone, no car.", [], []),
        ("Offered surgery but did not decline.", [], []),
        # nothing stated
        ("Wants to be treated at her local hospital near family.", [], []),
        ("Lives alone; daughter helps with transport.", [], []),
    ],
)
def test_parse_preferences(text: str, declined: list[str], wanted: list[str]) -> None:
    # when
    parsed = parse_preferences(text)
    # then
    assert parsed.declines == declined, parsed.reasons
    assert parsed.wants == wanted, parsed.reasons


def test_declines_and_wants_null_preferences_are_none() -> None:
    # given no preferences recorded
    case = _case(None)
    # then both facts are unknown, and the input is named
    assert declines(case).value is None
    assert wants(case).value is None
    assert declines(case).inputs_missing == ["patient.preferences"]


def test_declines_and_wants_text_without_topics_are_empty_lists() -> None:
    # given text with nothing the vocabulary covers
    case = _case("Would like to be home for her granddaughter's wedding in June.")
    # then known and empty
    assert declines(case).value == []
    assert wants(case).value == []
    assert "no declined or wanted topic" in declines(case).detail


def test_case_facts_expose_declines_and_wants() -> None:
    # given a case with preferences
    facts = case_facts(_case("Declines chemotherapy; wants more children."))
    # then
    assert facts["derived.declines"] == ["chemotherapy"]
    assert facts["derived.wants"] == ["fertility_preservation", "future_pregnancy"]


_WORDS = st.sampled_from(
    [
        "not", "no", "declines", "wants", "surgery", "chemo", "would", "accept", "avoid",
        "children", "fertility", "breast", "keep", "her", "oral", "tablets", "hospital", "visits",
        "rather", "opposed", "to", "and", "but", "never", "blood", "transfusion", ".", ",", "IV",
        "Jehovah", "family", "complete", "mastectomy", "radiotherapy", "prefers", "doesn't",
    ]
)  # fmt: skip


@given(st.lists(_WORDS, max_size=25).map(" ".join))
def test_parser_only_returns_vocabulary_topics(text: str) -> None:
    # given any text made of cue and topic words
    parsed = parse_preferences(text)
    # then every topic is in the fixed vocabulary, once, in vocabulary order
    assert set(parsed.declines) <= set(DECLINE_TOPICS)
    assert set(parsed.wants) <= set(WANT_TOPICS)
    assert parsed.declines == [t for t in DECLINE_TOPICS if t in parsed.declines]
    assert parsed.wants == [t for t in WANT_TOPICS if t in parsed.wants]


@given(st.text(max_size=200))
def test_parser_never_crashes_on_arbitrary_text(text: str) -> None:
    parsed = parse_preferences(text)
    assert set(parsed.declines) <= set(DECLINE_TOPICS)
    assert set(parsed.wants) <= set(WANT_TOPICS)


@pytest.mark.parametrize(
    "text",
    [
        "Declines all anticancer treatment.",
        "She does not want any further treatment, only symptom control.",
        "Comfort care only.",
        "He refuses any treatment aimed at the cancer, including tablets.",
        "Wants supportive care only; no chemotherapy, no operation.",
    ],
)
def test_a_stated_refusal_of_every_anticancer_treatment_is_read(text: str) -> None:
    assert "anticancer_treatment" in parse_preferences(text).declines


@pytest.mark.parametrize(
    "text",
    [
        "Declines chemotherapy but would accept an operation.",
        "Is willing to have any treatment the team advises.",
        "Would consider all treatment options.",
        "Declines any treatment that causes hair loss.",
        "Refuses any therapy involving blood products.",
    ],
)
def test_declining_one_treatment_or_accepting_all_is_not_declining_all(text: str) -> None:
    assert "anticancer_treatment" not in parse_preferences(text).declines


@pytest.mark.parametrize(
    ("notes", "declined"),
    [
        ("After two discussions he has decided against any treatment aimed at the cancer.", True),
        ("Capacity intact. She declines all active treatment and wishes to stay at home.", True),
        ("He does not want any anticancer therapy; supportive care at home.", True),
        ("Opted not to have any further treatment after a long discussion with her family.", True),
        # the history of another disease, the team's own view, or a negated refusal
        ("Prostate cancer 2015 on active surveillance, no active treatment.", False),
        ("No further active treatment was thought possible at the referring hospital.", False),
        ("She is not refusing treatment; she wants to discuss the options.", False),
        ("Declined adjuvant chemotherapy in 2019.", False),
    ],
)
def test_the_notes_count_only_an_explicit_refusal_of_every_anticancer_treatment(
    notes: str, declined: bool
) -> None:
    # given a case whose preferences field is empty and whose notes say it
    case = {**_case(None), "notes": notes}
    value = declines(case).value
    # then the refusal of every treatment aimed at the cancer is read, and nothing else
    assert ("anticancer_treatment" in (value or [])) is declined


@pytest.mark.parametrize(
    ("notes", "topic", "declined"),
    [
        ("She is adamant she will not have chemotherapy of any kind.", "chemotherapy", True),
        ("Having thought about it, he does not want an operation of any kind.", "surgery", True),
        ("Offered radiotherapy, which she declined after discussion.", "radiotherapy", True),
        ("She declined adjuvant chemotherapy in 2019.", "chemotherapy", False),
        ("He previously refused surgery for a hernia.", "surgery", False),
        ("Chemotherapy was discussed; she has not declined it.", "chemotherapy", False),
        ("Her husband had chemotherapy for bowel cancer.", "chemotherapy", False),
    ],
)
def test_the_notes_count_a_current_explicit_refusal_of_one_treatment(
    notes: str, topic: str, declined: bool
) -> None:
    case = {**_case(None), "notes": notes}
    assert (topic in (declines(case).value or [])) is declined
