"""The experience memory learns from the team's decisions and the raters' scores: an accepted
plan becomes a CorrectKB entry, an amended or rejected one a ChainKB entry with a reflection;
each is embedded, audited, recorded once, and recalled for a similar case."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from consult import learning
from consult.review import services
from knowledge.memory.models import EntryKind, ExperienceEntry
from knowledge.memory.services import ExperienceError, experience_retire
from mdtboard.audit.models import AuditEvent
from tests.consult.review.planned import planned

pytestmark = pytest.mark.django_db


def _decide(consultation: Any, actor: Any, decision: str, reason: str = "") -> Any:
    return services.review_decide(
        actor=actor,
        consultation=consultation,
        decision=decision,
        reason=reason,
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )


def _amend_first_item(consultation: Any, actor: Any, description: str, reason: str) -> Any:
    from consult.review.selectors import review_state_get
    from consult.review.services import ComponentEdit

    components = review_state_get(consultation=consultation).current.payload["recommendation"][
        "components"
    ]
    edits = []
    for index, c in enumerate(components):
        edits.append(
            ComponentEdit(
                source=index,
                role=c["role"],
                position=c.get("order") if c["role"] == "primary" else c.get("rank"),
                modality="ablation" if index == 0 else c["modality"],
                description=description if index == 0 else c["description"],
                agents=[] if index == 0 else list(c.get("agents") or []),
                dose_adjustments=list(c.get("dose_adjustments") or []),
                when=c.get("when") or "",
            )
        )
    return services.plan_amend(
        actor=actor,
        consultation=consultation,
        edits=edits,
        reason=reason,
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )


def test_accepting_a_plan_records_a_correctkb_entry_with_its_plan_and_reasoning(
    clinician: Any, team: Any, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    # given the board's plan for a public HCC case, accepted by the team
    consultation = planned(clinician, team, "pub-hcc-01.json")
    queued: list[int] = []
    monkeypatch.setattr("consult.tasks.experience_from_review.delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        review = _decide(consultation, clinician, "accept")
    # then the worker is asked to learn from the decision once it is saved
    assert queued == [review.pk]
    # when the worker runs
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    # then CorrectKB holds the case (no pseudonym), the question, the plan and why it held
    plan = consultation.plan.payload
    first = plan["recommendation"]["components"][0]["description"]
    assert entry.kind == EntryKind.CORRECT
    assert entry.cancer_type == "hcc"
    assert "HCC-P01" not in entry.case_summary
    assert "hcc" in entry.case_summary
    assert entry.question == consultation.snapshot.data["question"]
    assert first in entry.plan
    assert plan["evidence"][0]["unit_id"] in entry.key_reasoning
    # embedded, and audited
    assert entry.embedding is not None
    assert len(entry.embedding) == 384
    assert AuditEvent.objects.filter(
        action="memory.entry.create.correct", object_id=str(entry.pk)
    ).exists()
    # and recording the same review again changes nothing
    assert learning.experience_from_review(review_id=review.pk) == entry.pk
    assert ExperienceEntry.objects.count() == 1


def test_amending_a_plan_records_a_chainkb_entry_with_the_correct_plan_and_a_reflection(
    clinician: Any, team: Any
) -> None:
    # given the board's plan, amended by the team with a safety reason
    consultation = planned(clinician, team, "pub-hcc-01.json")
    board_first = consultation.plan.payload["recommendation"]["components"][0]["description"]
    version = _amend_first_item(
        consultation,
        clinician,
        "Percutaneous radiofrequency ablation",
        "Resection unsafe: portal hypertension with platelets low",
    )
    review = version.consultation.reviews.get(decision="amend")
    # when the worker learns from it (no LLM configured: the template writes it)
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    # then ChainKB holds the amended plan as the correct one, and the board's first idea
    assert entry.kind == EntryKind.CHAIN
    assert entry.written_by == "template"
    assert "Percutaneous radiofrequency ablation" in entry.plan
    assert board_first in entry.initial_hypothesis
    assert "Resection unsafe" in entry.error_reflection
    assert board_first in entry.error_reflection  # what was taken out of the pathway
    # and the correction as data, for the evolution proposals
    assert "ablation" in entry.signals["added"]
    assert entry.signals["safety"] is True
    assert entry.signals["decision"] == "amend"


def test_rejecting_a_plan_records_a_chainkb_entry_with_the_reason(
    clinician: Any, team: Any
) -> None:
    consultation = planned(clinician, team, "pub-breast-01.json")
    review = _decide(consultation, clinician, "reject", "Fertility preservation must come first")
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    assert entry.kind == EntryKind.CHAIN
    assert entry.source == "review_reject"
    assert "Fertility preservation must come first" in entry.plan
    assert "rejected" in entry.error_reflection
    assert entry.signals["decision"] == "reject"


def test_retrieval_returns_the_similar_case_of_the_same_cancer(clinician: Any, team: Any) -> None:
    # given one accepted HCC plan and one accepted breast plan in the memory
    hcc = planned(clinician, team, "pub-hcc-01.json")
    breast = planned(clinician, team, "pub-breast-01.json")
    hcc_entry = learning.experience_from_review(review_id=_decide(hcc, clinician, "accept").pk)
    learning.experience_from_review(review_id=_decide(breast, clinician, "accept").pk)
    # when the board recalls past cases for another HCC case
    other = planned(clinician, team, "pub-hcc-02.json").snapshot.data
    past = learning.DbExperience().similar(case=other, k=5)
    # then it recalls the HCC case, never the breast one
    assert [p.entry_id for p in past] == [hcc_entry]
    assert past[0].kind == "correct"
    assert 0.6 <= past[0].similarity <= 1.0
    assert past[0].label == f"CorrectKB #{hcc_entry}"


def test_a_retired_entry_is_not_recalled_and_cannot_be_edited(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    consultation = planned(clinician, team, "pub-hcc-01.json")
    entry = ExperienceEntry.objects.get(
        pk=learning.experience_from_review(review_id=_decide(consultation, clinician, "accept").pk)
    )
    experience_retire(actor=admin_user, entry=entry, reason="Superseded by the 2025 guideline")
    assert learning.DbExperience().similar(case=consultation.snapshot.data, k=5) == []
    with pytest.raises(ExperienceError):
        experience_retire(actor=admin_user, entry=entry, reason="again")
    assert AuditEvent.objects.filter(action="memory.entry.retire", actor=admin_user).count() == 1


def _rated(clinician: Any, team: Any, admin: Any, rater: Any, system: int, other: int) -> Any:
    """A rater's scores for the board's plan (``system`` on every dimension) against the
    team's own plan (``other``)."""
    from consult.rating.services import assignment_open, rating_submit
    from tests.consult.rating.support import (
        answers,
        finished_consultation,
        study_over,
        with_comparator,
    )

    consultation = finished_consultation(clinician, team, "pub-hcc-01.json")
    with_comparator(clinician, consultation)
    study = study_over(admin, [consultation], [rater])
    assignment = study.assignments.get()
    assignment_open(actor=rater, assignment=assignment)
    a, b = (system, other) if assignment.packet.system_position == "A" else (other, system)
    return rating_submit(actor=rater, assignment=assignment, data=answers(a, b))


def test_a_plan_rated_well_feeds_correctkb(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    # given the board's plan rated 5 on every dimension
    good = _rated(clinician, team, admin_user, rater, system=5, other=3)
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_rating(rating_id=good.pk))
    assert entry.kind == EntryKind.CORRECT
    assert entry.source == "rating_good"


def test_a_plan_rated_poorly_feeds_chainkb_with_the_human_plan_as_the_correct_one(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    poor = _rated(clinician, team, admin_user, rater, system=1, other=4)
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_rating(rating_id=poor.pk))
    assert entry.kind == EntryKind.CHAIN
    assert entry.source == "rating_poor"
    assert "rated 1.0/5" in entry.error_reflection
    assert entry.signals["decision"] == "rating"


def test_a_middling_rating_teaches_nothing(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    middling = _rated(clinician, team, admin_user, rater, system=3, other=3)
    assert learning.experience_from_rating(rating_id=middling.pk) is None
    assert ExperienceEntry.objects.count() == 0


def test_recall_without_a_working_embedding_provider_recalls_nothing(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an entry in the memory, and an embeddings endpoint that fails
    from knowledge.embeddings import EmbeddingError

    consultation = planned(clinician, team, "pub-hcc-01.json")
    learning.experience_from_review(review_id=_decide(consultation, clinician, "accept").pk)

    class Down:
        name, dim = "openai:down", 384

        def embed(self, texts: Any) -> Any:
            raise EmbeddingError("embeddings endpoint failed: URLError")

    monkeypatch.setattr("knowledge.memory.selectors.get_provider", Down)
    # then the board deliberates without memory rather than failing
    assert learning.DbExperience().similar(case=consultation.snapshot.data, k=5) == []
