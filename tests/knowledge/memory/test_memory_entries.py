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
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _decide(
    consultation: Any, actor: Any, decision: str, reason: str = "", kind: str = "clinical"
) -> Any:
    return services.review_decide(
        actor=actor,
        consultation=consultation,
        decision=decision,
        reason=reason,
        reason_kind=kind if decision == "reject" else "",
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
    consultation = completed(clinician, team, "pub-hcc-01.json")
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
    consultation = completed(clinician, team, "pub-hcc-01.json")
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
    consultation = completed(clinician, team, "pub-breast-01.json")
    review = _decide(consultation, clinician, "reject", "Fertility preservation must come first")
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    assert entry.kind == EntryKind.CHAIN
    assert entry.source == "review_reject"
    assert "Fertility preservation must come first" in entry.plan
    assert "rejected" in entry.error_reflection
    assert entry.signals["decision"] == "reject"


def test_retrieval_returns_the_similar_case_of_the_same_cancer(clinician: Any, team: Any) -> None:
    # given one accepted HCC plan and one accepted breast plan in the memory
    hcc = completed(clinician, team, "pub-hcc-01.json")
    breast = completed(clinician, team, "pub-breast-01.json")
    hcc_entry = learning.experience_from_review(review_id=_decide(hcc, clinician, "accept").pk)
    learning.experience_from_review(review_id=_decide(breast, clinician, "accept").pk)
    # when the board recalls past cases for another HCC case
    other = completed(clinician, team, "pub-hcc-02.json").snapshot.data
    past = learning.DbExperience().similar(case=other, k=5)
    # then it recalls the HCC case, never the breast one
    assert [p.entry_id for p in past] == [hcc_entry]
    assert past[0].kind == "correct"
    assert 0.6 <= past[0].similarity <= 1.0
    assert past[0].label == f"CorrectKB #{hcc_entry}"


def test_a_retired_entry_is_not_recalled_and_cannot_be_edited(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    consultation = completed(clinician, team, "pub-hcc-01.json")
    entry = ExperienceEntry.objects.get(
        pk=learning.experience_from_review(review_id=_decide(consultation, clinician, "accept").pk)
    )
    experience_retire(actor=admin_user, entry=entry, reason="Superseded by the 2025 guideline")
    assert learning.DbExperience().similar(case=consultation.snapshot.data, k=5) == []
    with pytest.raises(ExperienceError):
        experience_retire(actor=admin_user, entry=entry, reason="again")
    assert AuditEvent.objects.filter(action="memory.entry.retire", actor=admin_user).count() == 1


def _rated(
    clinician: Any,
    team: Any,
    admin: Any,
    raters: list[Any],
    scores: dict[int, tuple[int, int]],
    *,
    packets: int = 2,
    seconds: dict[int, float] | None = None,
) -> list[Any]:
    """A study of ``packets`` copies of pub-hcc-01 scored by every rater: rater i gives the
    board's plan ``scores[i][0]`` and the team's own plan ``scores[i][1]`` on every dimension,
    after ``seconds[i]`` (default 300) with the packet open. Returns the ratings, rater by
    rater."""
    from datetime import timedelta

    from django.utils import timezone

    from consult.rating.models import Assignment
    from consult.rating.services import assignment_open, rating_submit
    from tests.consult.rating.support import answers, study_over, with_comparator

    cases = [completed(clinician, team, "pub-hcc-01.json", copy_of=f"r{n}") for n in range(packets)]
    for consultation in cases:
        with_comparator(clinician, consultation)
    study = study_over(admin, cases, raters)
    ratings = []
    for index, rater in enumerate(raters):
        for assignment in study.assignments.filter(rater=rater).order_by("order"):
            assignment_open(actor=rater, assignment=assignment)
            Assignment.objects.filter(pk=assignment.pk).update(
                opened_at=timezone.now() - timedelta(seconds=(seconds or {}).get(index, 300))
            )
            system, other = scores[index]
            a, b = (system, other) if assignment.packet.system_position == "A" else (other, system)
            ratings.append(rating_submit(actor=rater, assignment=assignment, data=answers(a, b)))
    return ratings


@pytest.fixture
def second_rater(db: None) -> Any:
    from tests.fixtures.personas import make_user

    return make_user("rater", "rater2@hospital.test", [])


def test_a_plan_rated_well_by_raters_who_agree_feeds_correctkb(
    clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any
) -> None:
    # given the board's plans rated 5 on every dimension by two raters who agree
    ratings = _rated(clinician, team, admin_user, [rater, second_rater], {0: (5, 3), 1: (5, 2)})
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_rating(rating_id=ratings[0].pk))
    assert entry.kind == EntryKind.CORRECT
    assert entry.source == "rating_good"
    # the pass vets the whole study: every rating taught its entry, naming case and rater
    entries = ExperienceEntry.objects.filter(source="rating_good")
    assert entries.count() == 4
    assert {e.judged_by_ref for e in entries} == {rater.pk, second_rater.pk}
    assert len({e.case_ref for e in entries}) == 2


def test_a_plan_rated_poorly_feeds_chainkb_with_the_human_plan_as_the_correct_one(
    clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any
) -> None:
    ratings = _rated(clinician, team, admin_user, [rater, second_rater], {0: (1, 4), 1: (2, 5)})
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_rating(rating_id=ratings[0].pk))
    assert entry.kind == EntryKind.CHAIN
    assert entry.source == "rating_poor"
    assert "A rater scored the board's plan poorly. Reason: rated 1.0 of 5" in (
        entry.error_reflection
    )
    assert entry.signals["decision"] == "rating"


def test_a_middling_rating_teaches_nothing(
    clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any
) -> None:
    ratings = _rated(clinician, team, admin_user, [rater, second_rater], {0: (3, 3), 1: (3, 4)})
    assert learning.experience_from_rating(rating_id=ratings[0].pk) is None


def test_a_flagged_rating_produces_no_memory_entry_until_an_administrator_clears_it(
    clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any
) -> None:
    from consult.rating.services import rating_clear

    # given two raters who agree, the first of whom rated each packet within 10 seconds
    ratings = _rated(
        clinician,
        team,
        admin_user,
        [rater, second_rater],
        {0: (5, 3), 1: (5, 3)},
        seconds={0: 10},
    )
    fast = [r for r in ratings if r.too_fast]
    assert [r.assignment.rater_id for r in fast] == [rater.pk, rater.pk]
    # when the board learns from the study, the flagged ratings teach nothing (and without
    # them the other rater's agreement cannot be measured: nothing from them either)
    assert learning.experience_from_rating(rating_id=fast[0].pk) is None
    assert not ExperienceEntry.objects.exists()
    # when an administrator clears them, the study teaches
    for rating in fast:
        rating_clear(actor=admin_user, rating=rating, note="Short packets; read in full")
    assert learning.experience_from_rating(rating_id=fast[0].pk) is not None
    assert ExperienceEntry.objects.filter(source="rating_good").count() == 4
    assert AuditEvent.objects.filter(action="rating.clear").count() == 2


def test_a_rater_whose_agreement_with_the_others_is_poor_teaches_nothing(
    clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any
) -> None:
    from tests.fixtures.personas import make_user

    contrarian = make_user("rater", "contrarian@hospital.test", [])
    # two raters agree the board's plans are good; a third scores everything the other way
    ratings = _rated(
        clinician,
        team,
        admin_user,
        [rater, second_rater, contrarian],
        {0: (5, 3), 1: (4, 2), 2: (1, 5)},
    )
    learning.experience_from_rating(rating_id=ratings[-1].pk)
    judged = set(ExperienceEntry.objects.values_list("judged_by_ref", flat=True))
    assert judged == {rater.pk, second_rater.pk}
    assert not ExperienceEntry.objects.filter(source="rating_poor").exists()


def test_an_administrative_rejection_teaches_nothing(clinician: Any, team: Any) -> None:
    said = completed(clinician, team, "pub-breast-01.json")
    review = _decide(said, clinician, "reject", "Duplicate of last week's case", "administrative")
    assert learning.experience_from_review(review_id=review.pk) is None
    # recorded before the form asked: worded only as record-keeping, it teaches nothing either
    legacy = completed(clinician, team, "pub-breast-01.json", copy_of="legacy")
    review = _decide(legacy, clinician, "reject", "Entered in error", kind="clinical")
    review.reason_kind = ""
    assert not learning.administrative_reason(review.reason, "clinical")
    assert learning.administrative_reason(review.reason, "")
    assert not learning.administrative_reason("Duplicate regimen: surgery first", "")
    assert not ExperienceEntry.objects.exists()


def test_a_reopened_decision_is_unlearnt(clinician: Any, team: Any) -> None:
    consultation = completed(clinician, team, "pub-breast-01.json")
    review = _decide(consultation, clinician, "reject", "Fertility preservation must come first")
    entry = ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))
    services.review_reopen(
        actor=clinician,
        consultation=consultation,
        reason="Fertility clinic seen the same day",
        idempotency_key=uuid.uuid4(),
    )
    learning.experience_forget_review(review_id=review.pk)
    entry.refresh_from_db()
    assert entry.status == "retired"
    assert entry.retired_reason == "Not vetted: the team reopened this decision"
    # and a worker that runs late does not learn it again
    assert learning.experience_from_review(review_id=review.pk) is None


def test_recall_without_a_working_embedding_provider_recalls_nothing(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given an entry in the memory, and an embeddings endpoint that fails
    from knowledge.embeddings import EmbeddingError

    consultation = completed(clinician, team, "pub-hcc-01.json")
    learning.experience_from_review(review_id=_decide(consultation, clinician, "accept").pk)

    class Down:
        name, dim = "openai:down", 384

        def embed(self, texts: Any) -> Any:
            raise EmbeddingError("embeddings endpoint failed: URLError")

    monkeypatch.setattr("knowledge.memory.selectors.get_provider", Down)
    # then the board deliberates without memory rather than failing
    assert learning.DbExperience().similar(case=consultation.snapshot.data, k=5) == []
