"""Issue 25: a comparator records how it was made; the team's decision on the system's plan is
not an independent comparator, so a study leaves it out unless asked and warns about pairs
that read alike; Bang's blinding index leaves identical pairs out and says how many; the
blinding check runs from the command line and on the study page."""

from __future__ import annotations

import io
import uuid
from datetime import date
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from consult.rating.analytics import study_analytics
from consult.rating.services import (
    StudyInvalid,
    StudySpec,
    assignment_open,
    comparator_from_mdt_decision,
    rating_submit,
    study_create,
)
from consult.review import services as review
from tests.consult.rating.support import answers, with_comparator
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _accepted_as_comparator(clinician: Any, consultation: Any) -> Any:
    """The team accepts the board's plan unchanged and makes its decision the comparator."""
    review.review_decide(
        actor=clinician,
        consultation=consultation,
        decision="accept",
        reason="",
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )
    review.meeting_record(
        actor=clinician,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[review.Attendee("Dr A", "Hepatology")],
        final_decision="As proposed",
        dissent="",
        responsible_id=clinician.pk,
    )
    return comparator_from_mdt_decision(actor=clinician, consultation=consultation)


def _spec(consultations: list[Any], raters: list[Any], **more: Any) -> StudySpec:
    return StudySpec(
        name=more.pop("name", "Independent"),
        consultation_ids=[c.pk for c in consultations],
        rater_ids=[r.pk for r in raters],
        raters_per_packet=len(raters),
        seed=7,
        **more,
    )


def test_a_study_leaves_out_the_teams_decision_on_the_systems_plan_unless_asked(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    # given one case with an independent comparator and one whose only comparator is the
    # team's acceptance of the system's plan
    independent = completed(clinician, team, "pub-hcc-01.json")
    with_comparator(clinician, independent)
    accepted = completed(clinician, team, "pub-lung-02.json")
    derived = _accepted_as_comparator(clinician, accepted)
    assert (derived.independent, derived.derived_decision) == (False, "accept")
    # when a study takes both, it is refused with the reason
    with pytest.raises(StudyInvalid, match="not an independent plan"):
        study_create(actor=admin_user, spec=_spec([independent, accepted], [rater]))
    # the administrator's form says which cases and why, and how alike the pair reads
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("rating:study-create")).content.decode()
    assert 'id="dependent-comparators"' in page
    assert "pub-lung-02: the team&#x27;s decision on the system&#x27;s plan (accepted it)" in page
    assert 'id="alike-pairs"' in page  # the accepted plan reads as the system's: identical
    # asked to include it, the study is made, and the identical pair is marked
    study = study_create(
        actor=admin_user,
        spec=_spec([independent, accepted], [rater], include_dependent=True, name="With"),
    )
    similarity = {p.consultation_id: p.similarity for p in study.packets.all()}
    assert similarity[accepted.pk] == 1.0
    assert similarity[independent.pk] < 0.85
    # a dossier with an independent comparator too is paired with that one, never the decision
    with_comparator(clinician, accepted)
    study = study_create(actor=admin_user, spec=_spec([accepted], [rater], name="Own plan"))
    assert study.packets.get().comparator.independent


def test_bangs_index_leaves_out_identical_pairs_and_says_how_many(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    independent = completed(clinician, team, "pub-hcc-01.json")
    with_comparator(clinician, independent)
    accepted = completed(clinician, team, "pub-lung-02.json")
    _accepted_as_comparator(clinician, accepted)
    study = study_create(
        actor=admin_user,
        spec=_spec([independent, accepted], [rater], include_dependent=True),
    )
    for assignment in study.assignments.all():
        assignment_open(actor=rater, assignment=assignment)
        rating_submit(actor=rater, assignment=assignment, data=answers(4, 4, guess="A"))
    analytics = study_analytics(study=study, with_charts=False)
    assert (analytics.identical_packets, analytics.identical_ratings) == (1, 1)
    assert analytics.blinding is not None
    assert analytics.blinding.n == 1  # the identical pair's guess is not counted
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("rating:study-analytics", args=[study.pk])).content.decode()
    assert "1 packet showed the same plan twice" in page


def test_the_blinding_check_prints_its_auc_last_and_shows_on_the_study_page(
    clinician: Any, team: Any, admin_user: Any, rater: Any
) -> None:
    cases = [
        completed(clinician, team, name)
        for name in ("pub-hcc-01.json", "pub-lung-02.json", "pub-breast-02.json")
    ]
    for consultation in cases:
        with_comparator(clinician, consultation)
    study = study_create(actor=admin_user, spec=_spec(cases, [rater], name="Check"))
    out = io.StringIO()
    call_command("rating_blinding_check", "--study", "Check", stdout=out)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("AUC ")
    assert "(95% CI " in last
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("rating:study-detail", args=[study.pk])).content.decode()
    assert last in page
