"""Issue 25: both plans of a packet pass through one normaliser (the same items at the same
level of detail, machine phrasing as clinical words), and a classifier on length and wording
measures whether the arms can still be told apart."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from consult.rating.blinding import (
    blind_packet,
    blind_plan_text,
    clinical_sentence,
    pair_similarity,
)
from consult.rating.blinding_check import blinding_check, plan_features


def _plan(**parts: Any) -> dict[str, Any]:
    return {
        "format": "mdtboard.plan/1",
        "recommendation": {
            "intent": parts.get("intent"),
            "components": parts.get("components", []),
        },
        "rejected_options": parts.get("ruled_out", []),
        "safety": parts.get("safety", {}),
        "monitoring": parts.get("monitoring", []),
        "needs_data": parts.get("needs", []),
    }


SYSTEM = _plan(
    intent="palliative",
    components=[
        {
            "role": "primary",
            "order": 1,
            "modality": "systemic",
            "description": "Lenvatinib 12 mg daily (8 mg if under 60 kg) -> reassess at 8 weeks",
            "agents": ["lenvatinib"],
            "conditions": ["Before starting: blood pressure >= 140/90 treated"],
        },
        {
            "role": "alternative",
            "rank": 1,
            "modality": "systemic",
            "description": "Sorafenib 400 mg twice daily",
            "when": "if lenvatinib is not tolerated",
        },
        {
            "role": "alternative",
            "rank": 2,
            "modality": "supportive",
            "description": "Best supportive care",
            "when": "if performance status falls to 3",
        },
    ],
    ruled_out=[
        {"option": "Liver transplantation", "reason": "not indicated now: BCLC stage C (needs A)"},
        {"option": "Thermal ablation", "reason": "not indicated now: BCLC stage C (needs 0)"},
    ],
    safety={
        "gates": [
            {
                "gate": "qtc",
                "status": "unknown",
                "detail": "QT prolongation: cannot be checked for lenvatinib; needs "
                "organ_function.qtc_ms",
            }
        ],
        "flags": [{"severity": "major", "text": "Hypertension on lenvatinib."}],
    },
)
HUMAN = _plan(
    components=[
        {"role": "primary", "modality": "systemic", "description": "Lenvatinib"},
        {"role": "alternative", "modality": "systemic", "description": "Sorafenib", "when": "x"},
    ],
    ruled_out=[{"option": "Transplant", "reason": "stage C"}],
    safety={"notes": ["Blood pressure control first"]},
)


def test_machine_phrasing_becomes_clinical_words() -> None:
    assert clinical_sentence("CT -> MRI if AFP >= 20 ng/mL") == (
        "CT then MRI if AFP at least 20 ng/mL."
    )
    assert clinical_sentence("Before starting: echocardiography (LVEF)") == (
        "Echocardiography (LVEF)."
    )
    assert clinical_sentence("needs organ_function.qtc_ms") == "QTc."
    assert clinical_sentence("not indicated now: BCLC stage C (needs A)") == (
        "Not indicated: BCLC stage C."
    )
    # an item loses its doses and asides (shown apart when both plans give them)
    item = clinical_sentence(SYSTEM["recommendation"]["components"][0]["description"], item=True)
    assert item == "Lenvatinib then reassess at 8 weeks."


def test_a_packet_shows_the_same_items_at_the_same_level_of_detail() -> None:
    system, human = blind_packet(SYSTEM, HUMAN)
    # the same number of alternatives, options ruled out and precautions in both
    assert len(system.alternatives) == len(human.alternatives) == 1
    assert len(system.not_advised) == len(human.not_advised) == 1
    assert len(system.precautions) == len(human.precautions) == 1
    # the intent only when both state it; a precondition only when both give one
    assert system.intent == human.intent == ""
    assert all(key != "Check first" for item in system.pathway for key, _ in item.details)
    text = blind_plan_text(system, "A")
    for machine in ("->", ">=", "Before starting", "needs", "_ms", "mg"):
        assert machine not in text, machine
    # and the gates that could not run read as what the record lacks, said once, as a
    # clinician notes it ("Not recorded: QTc.")
    alone = blind_packet(SYSTEM, SYSTEM)[0]
    assert "Not recorded: QTc." in alone.precautions
    assert not any("cannot be checked" in p for p in alone.precautions)


def test_the_same_plan_twice_reads_identical() -> None:
    assert pair_similarity(SYSTEM, SYSTEM) == 1.0
    assert pair_similarity(SYSTEM, HUMAN) < 0.85


def _texts(system_words: int, human_words: int, n: int, seed: int) -> tuple[list[str], ...]:
    rng = random.Random(seed)
    vocabulary = ["resection", "ablation", "entecavir", "monitoring", "liver", "tumour", "every"]
    texts, is_system, groups = [], [], []
    for packet in range(n):
        for arm, words in ((True, system_words), (False, human_words)):
            lines = [
                " ".join(rng.choice(vocabulary) for _ in range(max(1, words + rng.randint(-2, 2))))
                for _ in range(4)
            ]
            texts.append("\n".join(lines))
            is_system.append(arm)
            groups.append(packet)
    return texts, is_system, groups


def test_the_blinding_check_tells_apart_what_differs_and_not_what_does_not() -> None:
    # longer system plans in every packet: told apart, the interval far from chance
    texts, is_system, groups = _texts(12, 4, 12, seed=1)
    apart = blinding_check(texts, [bool(x) for x in is_system], groups)
    assert apart is not None
    assert apart.auc > 0.9
    assert not apart.consistent_with_blinding
    # plans written the same way: consistent with chance
    texts, is_system, groups = _texts(8, 8, 12, seed=2)
    same = blinding_check(texts, [bool(x) for x in is_system], groups)
    assert same is not None
    assert same.consistent_with_blinding
    assert same.line().startswith("AUC 0.")
    assert "(95% CI " in same.line()


def test_the_classifier_agrees_with_scikit_learn() -> None:
    from sklearn.linear_model import LogisticRegression

    from consult.rating.blinding_check import _scores

    texts, is_system, groups = _texts(10, 7, 10, seed=3)
    x = np.array([plan_features(t) for t in texts])
    y = np.array([1.0 if s else 0.0 for s in is_system])
    ours = _scores(x, y, groups, penalty=1.0)
    theirs = np.zeros(len(y))
    for group in sorted(set(groups)):
        held = np.array(groups) == group
        mean, std = x[~held].mean(axis=0), x[~held].std(axis=0)
        std[std == 0] = 1.0
        model = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000)
        model.fit((x[~held] - mean) / std, y[~held])
        theirs[held] = model.predict_proba((x[held] - mean) / std)[:, 1]
    assert ours == pytest.approx(theirs, abs=1e-4)
