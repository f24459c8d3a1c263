"""The rater's side: the queue, a packet, the locked submission, and what a rater may not do."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from consult.rating.models import Assignment, Rating, Score
from mdtboard.audit.models import AuditEvent
from tests.consult.rating.support import (
    answers,
    finished_consultation,
    study_over,
    with_comparator,
)
from tests.fixtures.personas import make_user

pytestmark = pytest.mark.django_db

# A radio button that is selected.
CHECKED = re.compile(r"<input[^>]*\bchecked\b[^>]*>")


@pytest.fixture
def second_rater(db: None) -> Any:
    return make_user("rater", "rater2@hospital.test", [])


@pytest.fixture
def study(clinician: Any, team: Any, admin_user: Any, rater: Any, second_rater: Any) -> Any:
    consultations = [
        finished_consultation(clinician, team, name)
        for name in ("pub-hcc-01.json", "pub-lung-02.json")
    ]
    for consultation in consultations:
        with_comparator(clinician, consultation)
    return study_over(admin_user, consultations, [rater, second_rater])


def _mine(study: Any, user: Any) -> Assignment:
    return Assignment.objects.filter(study=study, rater=user).order_by("order").first()  # type: ignore[return-value]


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_rater_sees_a_queue_of_packets_and_rates_one(study: Any, rater: Any) -> None:
    client = _client(rater)
    # given the rater's queue
    queue = client.get(reverse("rating:queue"))
    assert queue.status_code == 200
    assignment = _mine(study, rater)
    assert reverse("rating:packet", args=[assignment.pk]) in queue.content.decode()
    # when they open the packet, then the server starts the clock and audits the opening
    page = client.get(reverse("rating:packet", args=[assignment.pk]))
    assert page.status_code == 200
    assignment.refresh_from_db()
    assert assignment.opened_at is not None
    assert AuditEvent.objects.filter(action="rating.packet_open", object_id=str(assignment.pk))
    # every dimension has a radio group per plan, each radio reachable by keyboard
    html = page.content.decode()
    assert html.count('type="radio"') == 6 * 2 * 5 + 3 + 3
    assert 'tabindex="-1"' not in html
    assert "Safety &amp; Ethics" in html
    assert "Patient-Centeredness" in html
    # when they submit a complete rating
    response = client.post(reverse("rating:packet", args=[assignment.pk]), answers(5, 2))
    # then it is saved, locked, and the queue says so
    assert response.status_code == 302
    rating = Rating.objects.get(assignment=assignment)
    assert Score.objects.filter(rating=rating).count() == 12
    assert set(
        Score.objects.filter(rating=rating, position="A").values_list("value", flat=True)
    ) == {5}
    assert AuditEvent.objects.filter(action="rating.submit", object_id=str(rating.pk)).exists()
    assert "Submitted" in client.get(reverse("rating:queue")).content.decode()


def test_a_rating_submitted_within_30_seconds_is_flagged(study: Any, rater: Any) -> None:
    client = _client(rater)
    assignment = _mine(study, rater)
    client.get(reverse("rating:packet", args=[assignment.pk]))
    client.post(reverse("rating:packet", args=[assignment.pk]), answers())
    rating = Rating.objects.get(assignment=assignment)
    assert rating.seconds < 30
    assert rating.too_fast is True


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("A-safety_ethics", "0", "0 is outside the scale"),
        ("B-completeness", "6", "6 is outside the scale"),
        ("A-efficiency", "abc", "is not a score"),
        ("B-patient_centeredness", None, "Plan B, Patient-Centeredness: choose a score"),
        ("A-evidence_utilization", "4.5", "is not a score"),
        ("preference", None, "which plan you would take"),
        ("system_guess", "C", "which plan you think the system wrote"),
    ],
)
def test_bad_input_is_refused_with_a_message_and_nothing_is_saved(
    study: Any, rater: Any, field: str, value: str | None, message: str
) -> None:
    client = _client(rater)
    assignment = _mine(study, rater)
    data = answers()
    if value is None:
        del data[field]
    else:
        data[field] = value
    # when the rater submits a form with one bad answer
    response = client.post(reverse("rating:packet", args=[assignment.pk]), data)
    # then the page comes back with the message next to the question, and nothing is saved
    assert response.status_code == 422
    html = response.content.decode()
    assert message in html
    assert "Not saved." in html
    assert f'id="field-{field}"' in html
    assert not Rating.objects.filter(assignment=assignment).exists()
    assert not Score.objects.exists()
    # and the other answers are kept on the page
    # (twelve scores, a preference and a guess, less the one that was bad)
    assert len(CHECKED.findall(html)) == 13


def test_a_rater_gets_404_for_a_packet_assigned_to_someone_else(
    study: Any, rater: Any, second_rater: Any, clinician: Any, team: Any, admin_user: Any
) -> None:
    # given a packet assigned to the second rater only
    other = finished_consultation(clinician, team, "pub-breast-02.json")
    with_comparator(clinician, other)
    solo = study_over(admin_user, [other], [second_rater], name="Solo")
    theirs = _mine(solo, second_rater)
    client = _client(rater)
    # then it looks absent to the first rater, to read or to rate
    assert client.get(reverse("rating:packet", args=[theirs.pk])).status_code == 404
    assert client.post(reverse("rating:packet", args=[theirs.pk]), answers()).status_code == 404
    assert not Rating.objects.exists()


def test_a_locked_rating_cannot_be_changed(study: Any, rater: Any) -> None:
    client = _client(rater)
    assignment = _mine(study, rater)
    url = reverse("rating:packet", args=[assignment.pk])
    client.get(url)
    client.post(url, answers(4, 4, comment="first"))
    # when the rater posts again with other scores
    response = client.post(url, answers(1, 1, comment="second"))
    # then the change is refused and the first answers stand
    assert response.status_code == 409
    assert "locked" in response.content.decode()
    rating = Rating.objects.get(assignment=assignment)
    assert rating.comment == "first"
    assert set(Score.objects.filter(rating=rating).values_list("value", flat=True)) == {4}
    # and reopening shows their own rating, read-only
    page = client.get(url).content.decode()
    assert 'id="locked"' in page
    assert "Submit rating" not in page


def test_raters_never_see_other_raters_ratings(study: Any, rater: Any, second_rater: Any) -> None:
    # given the second rater rated a packet both were given, with a comment
    theirs = _mine(study, second_rater)
    other_client = _client(second_rater)
    other_client.get(reverse("rating:packet", args=[theirs.pk]))
    other_client.post(
        reverse("rating:packet", args=[theirs.pk]), answers(comment="Plan B misses the HBV cover")
    )
    # when the first rater opens the same packet
    mine = Assignment.objects.get(study=study, rater=rater, packet=theirs.packet)
    page = _client(rater).get(reverse("rating:packet", args=[mine.pk])).content.decode()
    # then nothing of the other rating shows, and the form is theirs to fill
    assert "misses the HBV cover" not in page
    assert "Submit rating" in page
    assert not CHECKED.findall(page)


@pytest.mark.parametrize(
    "route", ["rating:study-analytics", "rating:study-detail", "rating:study-export"]
)
def test_a_rater_cannot_open_the_study_pages(study: Any, rater: Any, route: str) -> None:
    response = _client(rater).get(reverse(route, args=[study.pk]))
    assert response.status_code == 403


def test_the_packet_never_shows_the_allocation(study: Any, rater: Any) -> None:
    assignment = _mine(study, rater)
    page = _client(rater).get(reverse("rating:packet", args=[assignment.pk])).content.decode()
    for secret in (str(study.seed), study.allocation_hash, "block", "stratum", "complex"):
        assert secret not in page
