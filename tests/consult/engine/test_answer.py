"""The answer first: at most three sentences that answer the board's question in its own
terms (what is and is not advised and why, the recommended option with its precondition,
what would change it)."""

from __future__ import annotations

import copy
from typing import Any

from consult.engine.answer import MAX_SENTENCES, asked_options, plan_answer

LABELS = {"patient.ecog": "ECOG performance status", "labs.hbsag": "HBsAg"}


def _plan(**changes: Any) -> dict[str, Any]:
    """A BCLC C liver plan: durvalumab-tremelimumab with variceal prophylaxis, lenvatinib as
    the alternative, the local options ruled out by the stage."""
    plan: dict[str, Any] = {
        "format": "mdtboard.plan/1",
        "staging": {"bclc": "C", "child_pugh_class": "A"},
        "recommendation": {
            "summary": "A long paragraph the page no longer leads with.",
            "intent": "palliative",
            "question": "",
            "confirm_first": [],
            "components": [
                {
                    "role": "primary",
                    "order": 1,
                    "modality": "systemic",
                    "description": "Tremelimumab 300 mg once plus durvalumab 1500 mg every 4 weeks",
                    "agents": ["durvalumab", "tremelimumab"],
                    "rationale": [
                        "Line of therapy: 1 ✓",
                        "BCLC stage: C ✓",
                        "Child–Pugh class: A ✓",
                    ],
                },
                {
                    "role": "primary",
                    "order": 2,
                    "modality": "supportive",
                    "adjunct": True,
                    "description": "Variceal-bleeding prophylaxis: carvedilol",
                    "agents": ["carvedilol"],
                },
                {
                    "role": "alternative",
                    "rank": 1,
                    "modality": "systemic",
                    "when": "if checkpoint inhibitors are contraindicated (graft) or declined",
                    "description": "Lenvatinib 12 mg daily",
                    "agents": ["lenvatinib"],
                },
            ],
        },
        "rejected_options": [
            {"option": "Liver resection", "reason": "not indicated now: BCLC stage C (needs A)"},
            {"option": "Thermal ablation", "reason": "not indicated now: BCLC stage C (needs 0)"},
            {"option": "Chemoembolisation (TACE)", "reason": "not indicated now: BCLC stage C"},
        ],
        "needs_data": ["labs.hbsag (for common.int.hbv)"],
        "abstain": False,
    }
    plan.update(changes)
    return plan


def test_answer_names_the_options_asked_and_why_they_are_not_advised() -> None:
    # given a question that names the options the board weighs
    question = "Resection, ablation, TACE or transplant?"
    # when the plan (systemic therapy at BCLC C) answers it
    answer = plan_answer(_plan(), question=question, labels=LABELS)
    # then the answer first says, in the question's words, what is not advised and why
    first = answer.sentences[0]
    assert first.startswith("Resection, ablation and TACE are not advised now: BCLC stage C")
    assert "transplant is not part of this plan" in first
    # then what is recommended, with the facts that made it apply (not the line of therapy)
    assert answer.sentences[1].startswith("Recommended (palliative; BCLC stage C; Child–Pugh")
    assert "durvalumab 1500 mg" in answer.sentences[1]
    # then what would change it
    assert answer.sentences[2].startswith("If checkpoint inhibitors are contraindicated")
    assert "lenvatinib 12 mg daily instead" in answer.sentences[2]
    assert len(answer.sentences) <= MAX_SENTENCES
    assert [v.status for v in answer.verdicts] == [
        "not_advised",
        "not_advised",
        "not_advised",
        "not_in_plan",
    ]


def test_an_asked_option_the_plan_recommends_leads_the_answer() -> None:
    # given a plan whose pathway is TACE, asked about among other options
    plan = _plan()
    plan["recommendation"]["components"][0].update(
        modality="locoregional",
        description="Selective transarterial chemoembolisation (TACE), repeated on demand",
        agents=[],
    )
    answer = plan_answer(plan, question="TACE or systemic therapy?")
    # then the answer says so in the question's word first
    assert answer.sentences[0].startswith("TACE is advised (palliative; BCLC stage C")
    # and the other option asked is placed: lenvatinib is a systemic alternative
    assert answer.sentences[1].startswith("Systemic is an alternative if checkpoint")


def test_a_drug_named_in_the_question_is_matched_by_name() -> None:
    answer = plan_answer(_plan(), question="Is lenvatinib better than durvalumab here?")
    assert [(v.asked, v.status) for v in answer.verdicts] == [
        ("lenvatinib", "alternative"),
        ("durvalumab", "advised"),
    ]
    assert answer.sentences[0].startswith("Durvalumab is advised")


def test_a_treatment_the_question_takes_as_done_is_not_an_option() -> None:
    options = asked_options("Which adjuvant therapy after surgery: chemotherapy or radiotherapy?")
    assert [o.words for o in options] == ["chemotherapy", "radiotherapy"]


def test_a_generic_question_gets_the_recommendation_first() -> None:
    answer = plan_answer(_plan(), question="What is the recommended MDT management?")
    assert answer.sentences[0].startswith("Recommended (palliative; BCLC stage C")
    assert answer.sentences[1] == (
        "Not advised: liver resection, thermal ablation and chemoembolisation (BCLC stage C)."
    )
    assert answer.verdicts == ()


def test_the_precondition_of_the_recommended_option_is_said_with_it() -> None:
    plan = _plan()
    plan["recommendation"]["confirm_first"] = [
        "Confirm before starting durvalumab, tremelimumab: Autoimmune disease activity, not "
        "recorded (Checkpoint inhibitors with active autoimmune disease (common.ci.x))",
        "Confirm before starting osimertinib: QTc (ms), not recorded (QT rule)",
    ]
    answer = plan_answer(plan)
    # the check that concerns the recommended drugs, not one about a drug it does not give
    assert answer.sentences[0].endswith("after recording autoimmune disease activity.")
    assert "QTc" not in answer.text


def test_a_decisive_fact_is_what_would_change_it() -> None:
    plan = _plan(
        decisive_facts=[
            {
                "fact": "patient.ecog",
                "recorded": 1,
                "varied_to": 0,
                "primary_would_be": "Liver resection",
                "advice": "confirm whether the ECOG 1 is cancer-related",
            }
        ]
    )
    answer = plan_answer(plan, question="Resection or systemic therapy?", labels=LABELS)
    assert answer.sentences[-1] == (
        "If ECOG performance status were 0 rather than 1, liver resection would be "
        "recommended — see Decisive facts."
    )


def test_an_abstaining_plan_says_so_first_with_the_data_it_needs() -> None:
    plan = _plan(abstain=True)
    plan["recommendation"]["components"] = []
    answer = plan_answer(plan, labels=LABELS)
    assert answer.sentences[0] == "No treatment can be recommended yet."
    assert answer.sentences[1] == "Needed first: HBsAg."


def test_the_answer_never_exceeds_three_sentences() -> None:
    plan = copy.deepcopy(_plan())
    plan["decisive_facts"] = [{"fact": "patient.ecog", "varied_to": 0, "primary_would_be": "x"}]
    answer = plan_answer(plan, question="Resection, lenvatinib, carvedilol or transplant?")
    assert len(answer.sentences) == MAX_SENTENCES
