"""Free-text keyword conditions read what the text affirms, not every mention of a word."""

from __future__ import annotations

from typing import Any

import pytest

from clinical.applicability import case_facts, condition_holds
from clinical.rules import Condition
from clinical.text.negation import affirms, term_occurrences
from clinical.text.preferences import parse_preferences


@pytest.mark.parametrize(
    ("text", "term", "affirmed"),
    [
        # affirmed mentions
        ("Two seizures last week, on levetiracetam.", "seizure", True),
        ("Symptomatic brain metastases with vasogenic oedema.", "symptomatic", True),
        ("Bulky mediastinal mass.", "bulky", True),
        ("H. pylori positive on biopsy.", "h. pylori", True),
        ("Classic Hodgkin lymphoma, nodular sclerosis", "hodgkin", True),
        ("Tumour judged unresectable by two surgeons.", "unresectable", True),
        ("Pregnant, first trimester.", "first trimester", True),
        # a clause boundary ends the negation
        ("No headache, but two seizures this week.", "seizure", True),
        ("No ascites. Seizures since May.", "seizure", True),
        ("Not a transplant candidate because of active alcohol use.", "active alcohol", True),
        # pseudo-negations keep the term possible
        ("Leptomeningeal disease cannot be excluded.", "leptomeningeal", True),
        ("Infiltrative growth not ruled out.", "infiltrat", True),
        # negated before the term
        ("No seizures.", "seizure", False),
        ("Denies seizures or focal deficit.", "focal deficit", False),
        ("no ascites, varices or encephalopathy", "encephalopathy", False),
        ("Non-bulky stage II disease.", "bulky", False),
        ("non bulky", "bulky", False),
        ("diffuse large B-cell lymphoma, not Hodgkin", "hodgkin", False),
        ("Non-Hodgkin lymphoma", "hodgkin", False),
        ("Without evidence of infiltrative growth.", "infiltrat", False),
        ("Negative for Helicobacter pylori on histology.", "helicobacter", False),
        ("She is not in the first trimester.", "first trimester", False),
        ("No longer drinking alcohol; abstinent 2 years.", "drinking", False),
        # negated after the term
        ("Helicobacter pylori negative on histology and breath test.", "helicobacter", False),
        ("Seizure-free for two years.", "seizure", False),
        ("Brain metastases excluded on MRI.", "brain metastases", False),
        ("Varices: none.", "varices", False),
        ("Warfarin stopped in 2024.", "warfarin", False),
        # a word start is required: a term inside another word is not a mention
        ("Asymptomatic brain metastases.", "symptomatic", False),
        ("weekly paclitaxel", "ac", False),
    ],
)
def test_negation_affirms(text: str, term: str, affirmed: bool) -> None:
    assert affirms(text, term) is affirmed


def test_negation_one_affirmed_mention_is_enough() -> None:
    # given a negated and an affirmed mention of the same term
    text = "No seizures at diagnosis. Seizures since the second cycle."
    # when / then
    assert [negated for _, _, negated in term_occurrences(text, "seizure")] == [True, False]
    assert affirms(text, "seizure") is True


def _facts(**sections: Any) -> dict[str, Any]:
    return case_facts({"format": "mdtboard.case/1", "cancer_type": "lymphoma", **sections})


def test_negation_contains_any_condition_reads_negated_notes_as_false() -> None:
    # given a rule that fires on symptomatic disease named in the notes
    condition = Condition(fact="notes", op="contains_any", value=["seizure", "symptomatic"])
    # then "no seizures, asymptomatic" does not fire it, and a real seizure does
    assert condition_holds(condition, _facts(notes="No seizures; asymptomatic.")) is False
    assert condition_holds(condition, _facts(notes="Focal seizure on admission.")) is True
    # and missing notes stay unknown
    assert condition_holds(condition, _facts(notes=None)) is None


def test_negation_contains_any_reads_each_list_item() -> None:
    condition = Condition(fact="patient.comorbidities", op="contains_any", value=["cirrhosis"])
    facts = _facts(patient={"comorbidities": ["hypertension", "no cirrhosis on elastography"]})
    assert condition_holds(condition, facts) is False
    facts = _facts(patient={"comorbidities": ["hypertension", "compensated cirrhosis"]})
    assert condition_holds(condition, facts) is True


def test_negation_histology_non_hodgkin_is_not_hodgkin() -> None:
    condition = Condition(fact="diagnosis.histology", op="contains_any", value=["hodgkin"])
    assert condition_holds(condition, _facts(diagnosis={"histology": "non-Hodgkin"})) is False
    assert condition_holds(condition, _facts(diagnosis={"histology": "Hodgkin lymphoma"})) is True


@pytest.mark.parametrize(
    "text",
    [
        "Wants to continue the pregnancy and be treated.",
        "She is keen to keep her pregnancy.",
        "Plans to carry the pregnancy to term.",
    ],
)
def test_negation_continuing_a_pregnancy_is_no_wish_for_a_future_one(text: str) -> None:
    parsed = parse_preferences(text)
    assert parsed.wants == []
    assert parsed.declines == []


def test_negation_future_pregnancy_wish_is_still_read() -> None:
    assert "future_pregnancy" in parse_preferences("Wants another baby after treatment.").wants
