"""The review pages as each persona meets them: the team reviews, others cannot."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.urls import reverse

from consult.review.models import ClinicianReview, PlanVersion
from tests.fixtures.consultations import completed
from tests.fixtures.htmx import HTMX

pytestmark = pytest.mark.django_db


def _decide(client: Any, consultation: Any, **data: Any) -> Any:
    form = {"decision": "accept", "reason": "", "key": str(uuid.uuid4()), "base": "1", **data}
    return client.post(reverse("review:decide", args=[consultation.pk]), form)


def _amend_form(client: Any, consultation: Any) -> dict[str, str]:
    """The amend form as the page draws it, every field with its drawn value."""
    page = client.get(reverse("review:amend", args=[consultation.pk])).content.decode()
    data = dict(re.findall(r'<input type="[a-z]+" name="([^"]+)" value="([^"]*)"', page))
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>\n?([^<]*)</textarea>', page):
        data[name] = text
    for name, block in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', block)
        data[name] = chosen.group(1) if chosen else ""
    return data


def test_a_rater_or_a_clinician_of_another_team_cannot_review(
    client: Any, clinician: Any, team: Any, rater: Any, outsider: Any
) -> None:
    consultation = completed(clinician, team)
    for user, status in ((rater, 403), (outsider, 404)):
        client.force_login(user)
        assert _decide(client, consultation).status_code == status
        amend = client.post(reverse("review:amend", args=[consultation.pk]), {})
        assert amend.status_code == status
        assert client.get(reverse("review:case-record", args=[consultation.pk])).status_code == (
            status
        )
    assert not ClinicianReview.objects.exists()
    assert not PlanVersion.objects.exists()


def test_a_clinician_of_the_team_accepts_and_the_page_says_so(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    response = _decide(client, consultation, reason="Agreed at the meeting")
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "accepted, awaiting the meeting" in page
    assert "Agreed at the meeting" in page
    # the decision is recorded: no second decision form, a reopening instead
    assert reverse("review:decide", args=[consultation.pk]) not in page
    assert reverse("review:reopen", args=[consultation.pk]) in page


def test_amending_through_the_form_keeps_what_was_not_edited(
    client: Any, clinician: Any, team: Any
) -> None:
    # given the amend form of a plan, as drawn
    consultation = completed(clinician, team)
    client.force_login(clinician)
    data = _amend_form(client, consultation)
    assert data["c-0-description"].startswith("Liver resection")
    # when the clinician moves the first alternative to ruled out and gives the reason
    alternatives = [k for k, v in data.items() if k.endswith("-role") and v == "alternative"]
    data[alternatives[-1]] = "rejected"
    data["reason"] = "Tumour board: SBRT not available locally"
    response = client.post(reverse("review:amend", args=[consultation.pk]), data)
    # then version 2 rules it out with the reason, and the rest is as it was
    assert response.status_code == 302, response.content.decode()[:2000]
    version = PlanVersion.objects.get()
    old = consultation.plan.payload["recommendation"]["components"]
    new = version.payload["recommendation"]["components"]
    assert len(new) == len(old) - 1
    assert [c["description"] for c in new] == [c["description"] for c in old][:-1]
    assert new[0]["evidence"] == old[0]["evidence"]
    assert version.payload["rejected_options"][-1]["option"] == old[-1]["description"]
    assert "SBRT not available" in version.payload["rejected_options"][-1]["reason"]
    # and nothing was edited, so no item is marked unchecked
    assert all(g["gate"] != "amendment_not_rechecked" for g in version.payload["safety"]["gates"])


def test_amend_without_a_reason_is_refused_where_the_clinician_sees_it(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    data = _amend_form(client, consultation)
    response = client.post(reverse("review:amend", args=[consultation.pk]), data)
    assert response.status_code == 422
    assert "Give the reason" in response.content.decode()
    assert not PlanVersion.objects.exists()


def test_plan_page_reads_as_a_recommendation_with_clinical_labels(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    page = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    # the question, then the pathway, then alternatives, ruled out, gates, monitoring
    order = [
        page.index(f'id="{s}"')
        for s in ("question", "pathway", "alternatives", "rejected", "gates", "monitoring")
    ]
    assert order == sorted(order)
    # the gate says its result in words, and what to fill in links to the dossier field
    assert "Not checked" in page
    assert f"/dossiers/{consultation.dossier_id}/edit/patient/#id_patient__frailty" in page
    # monitoring phases in time order, with response criteria by their names
    phases = [
        page.index(p)
        for p in ("Acute (0–3 months)", "Intermediate (3–12 months)", "Long term (over 12 months)")
    ]
    assert phases == sorted(phases)
    assert "mRECIST" in page
    # and no internal names
    for raw in ("acute_0_3m", "albi_grade", "derived.frailty", "organ_function."):
        assert raw not in page, raw


def test_dossier_list_is_the_worklist_of_the_next_meeting(
    client: Any, clinician: Any, team: Any
) -> None:
    awaiting = completed(clinician, team, "pub-hcc-01.json")
    decided = completed(clinician, team, "pub-lung-01.json")
    client.force_login(clinician)
    _decide(client, decided)
    page = client.get(reverse("consult:dossier-list")).content.decode()
    rows = {m[0]: m[1] for m in re.findall(r">(pub-[a-z]+-\d+)</a>(.*?)</tr>", page, re.S)}
    assert "awaiting review" in rows[awaiting.dossier.case_id]
    assert "accepted, awaiting the meeting" in rows[decided.dossier.case_id]


def test_pressing_make_pdf_twice_queues_one_report(
    client: Any,
    clinician: Any,
    team: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from consult.review import services
    from consult.review.models import PlanReport

    queued: list[int] = []
    monkeypatch.setattr(services, "_enqueue_report", queued.append)
    consultation = completed(clinician, team)
    client.force_login(clinician)
    url = reverse("review:report-request", args=[consultation.pk])
    with django_capture_on_commit_callbacks(execute=True):
        first = client.post(url, {"paper": "a4"}, headers=HTMX)
        second = client.post(url, {"paper": "a4"}, headers=HTMX)
    report = PlanReport.objects.get()
    assert queued == [report.pk]
    for response in (first, second):
        assert response.content.decode().count(f'id="report-{report.pk}"') == 1
        assert "Queued: 0 %" in response.content.decode()


def _record_meeting(consultation: Any, clinician: Any) -> None:
    from datetime import date

    from consult.review.services import Attendee, meeting_record

    meeting_record(
        actor=clinician,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[Attendee("Dr A", "Hepatology")],
        final_decision="Resection as proposed",
        dissent="",
        responsible_id=clinician.pk,
    )


def test_the_mdt_decision_becomes_the_comparator_from_the_review_page(
    client: Any, clinician: Any, team: Any, rater: Any, outsider: Any
) -> None:
    from consult.rating.models import ComparatorPlan

    # given a decision and a meeting record
    consultation = completed(clinician, team)
    client.force_login(clinician)
    _decide(client, consultation)
    plan_url = reverse("consult:plan-detail", args=[consultation.pk])
    fragment_url = reverse("rating:decision-comparator", args=[consultation.pk])
    assert fragment_url not in client.get(plan_url).content.decode()
    _record_meeting(consultation, clinician)
    # the plan page loads the comparator section from the rating app
    assert fragment_url in client.get(plan_url).content.decode()
    fragment = client.get(fragment_url, headers=HTMX).content.decode()
    assert "Use the MDT decision as the comparator plan" in fragment
    assert "not an independent comparator" in fragment
    assert "a rater would see the same plan twice" in fragment
    # a rater or another team's clinician cannot do it
    for user, status in ((rater, 403), (outsider, 404)):
        client.force_login(user)
        assert client.post(fragment_url).status_code == status
    assert not ComparatorPlan.objects.exists()
    # when the team's clinician presses the button, twice
    client.force_login(clinician)
    response = client.post(fragment_url)
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    comparator = ComparatorPlan.objects.get()
    assert "is now comparator plan version 1" in page
    fragment = client.get(fragment_url, headers=HTMX).content.decode()
    assert reverse("rating:comparator-detail", args=[comparator.pk]) in fragment
    assert "the team&#x27;s decision on the system&#x27;s plan (accepted it)" in fragment
    again = client.get(client.post(fragment_url)["Location"]).content.decode()
    assert "already the comparator plan (version 1)" in again
    assert ComparatorPlan.objects.count() == 1


def test_a_rejected_plan_points_to_the_comparator_page(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    _decide(client, consultation, decision="reject", reason="Wrong stage", reason_kind="clinical")
    _record_meeting(consultation, clinician)
    fragment = client.get(
        reverse("rating:decision-comparator", args=[consultation.pk]), headers=HTMX
    ).content.decode()
    assert "Use the MDT decision as the comparator plan" not in fragment
    assert reverse("rating:comparator-edit", args=[consultation.dossier_id]) in fragment
