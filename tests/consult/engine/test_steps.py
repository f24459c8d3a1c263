"""Step identity: the key each step is journaled under. Runs saved before an upgrade resume
after it only if these names never change."""

from __future__ import annotations

import pytest

from clinical.vocab import COORDINATOR, StepKind
from consult.engine.protocols import Step


@pytest.mark.parametrize(
    ("step", "key"),
    [
        (Step(StepKind.INTAKE), "intake"),
        (Step(StepKind.TRIAGE), "triage"),
        (Step.retrieval("safety"), "retrieval.safety"),
        (Step.report(1, "treatment"), "r1.report.treatment"),
        (Step.review(2, "safety", "treatment"), "r2.review.safety.treatment"),
        (Step.review(1, "cardio_oncology", "treatment"), "r1.review.cardio_oncology.treatment"),
        (Step.synthesis(3), "r3.synthesis"),
        (Step.vote(1, "monitoring"), "r1.vote.monitoring"),
        (Step.consensus(2), "r2.consensus"),
        (Step(StepKind.GATE), "gate"),
        (Step(StepKind.PLAN), "plan"),
    ],
)
def test_step_keys_keep_the_format_runs_were_saved_with(step: Step, key: str) -> None:
    assert step.key == key


def test_the_coordinator_owns_synthesis_and_consensus() -> None:
    # what the journal's rows record as the step's member (AgentMessage.role)
    assert Step.synthesis(1).role == COORDINATOR
    assert Step.consensus(1).role == COORDINATOR
    review = Step.review(2, "safety", "treatment")
    assert (review.kind, review.round, review.role, review.target) == (
        StepKind.REVIEW,
        2,
        "safety",
        "treatment",
    )
