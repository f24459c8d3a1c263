"""Issue 25 (and 24's rows): the review forms as a clinician uses them without a script: the
sign-off asks first and names the version, a decision is reopened with its reason, rows are
added and removed on the meeting and amend forms, and the amend form edits the intent and the
options ruled out."""

from __future__ import annotations

import re
import uuid
from datetime import date
from typing import Any

import pytest
from django.urls import reverse

from consult.review.models import MdtMeeting, PlanVersion, ReviewStage, SignOff
from consult.review.selectors import review_state_get
from consult.review.services import Attendee, meeting_record
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.django_db


def _form(page: str) -> dict[str, str]:
    """Every field of the page's main form with its drawn value."""
    data = dict(
        re.findall(
            r'<input type="(?:text|hidden|number|date)" name="([^"]+)" value="([^"]*)"', page
        )
    )
    for name, text in re.findall(r'<textarea name="([^"]+)"[^>]*>\n?([^<]*)</textarea>', page):
        data[name] = text
    for name, block in re.findall(r'<select name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected>', block)
        data[name] = chosen.group(1) if chosen else ""
    data.pop("csrfmiddlewaretoken", None)
    return {k: v for k, v in data.items() if "__prefix__" not in k}


def _rows(page: str) -> int:
    """The attendee rows drawn in the form (not the empty row the script copies)."""
    return page.split('<template id="a-empty-row">')[0].count('class="field attendee"')


def _accept(client: Any, consultation: Any) -> None:
    client.post(
        reverse("review:decide", args=[consultation.pk]),
        {"decision": "accept", "reason": "", "key": str(uuid.uuid4()), "base": "1"},
    )


def _meeting(consultation: Any, clinician: Any) -> None:
    meeting_record(
        actor=clinician,
        consultation=consultation,
        held_on=date(2026, 11, 20),
        attendees=[Attendee("Dr A", "Hepatology")],
        final_decision="As proposed",
        dissent="",
        responsible_id=clinician.pk,
    )


def test_sign_off_asks_first_and_names_the_version(client: Any, clinician: Any, team: Any) -> None:
    # given an accepted plan with its meeting
    consultation = completed(clinician, team)
    client.force_login(clinician)
    _accept(client, consultation)
    _meeting(consultation, clinician)
    plan_page = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    url = reverse("review:sign-off", args=[consultation.pk])
    assert f'href="{url}"' in plan_page  # a link to the confirmation, not a one-click button
    # when the clinician opens it, the version, its hash and its pathway are named
    page = client.get(url).content.decode()
    assert "Sign off plan version 1?" in page
    assert consultation.plan.content_hash[:12] in page
    first = consultation.plan.payload["recommendation"]["components"][0]["description"]
    assert first in page
    # and sending it without ticking the confirmation signs nothing
    response = client.post(url, {"version": "1"})
    assert response.status_code == 422
    assert "tick the confirmation" in response.content.decode()
    assert not SignOff.objects.exists()
    # confirmed, it is signed
    response = client.post(url, {"version": "1", "confirm": "on"})
    assert response.status_code == 302
    assert SignOff.objects.get().plan_number == 1


def test_a_decision_is_reopened_with_its_reason_from_the_plan_page(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    _accept(client, consultation)
    url = reverse("review:reopen", args=[consultation.pk])
    response = client.post(url, {"key": str(uuid.uuid4()), "base": "1", "reason": ""})
    page = client.get(response["Location"]).content.decode()
    assert "Give the reason for reopening" in page
    assert review_state_get(consultation=consultation).stage == ReviewStage.ACCEPTED
    response = client.post(
        url, {"key": str(uuid.uuid4()), "base": "1", "reason": "New CT: vascular invasion"}
    )
    page = client.get(response["Location"]).content.decode()
    assert "The decision is reopened" in page
    assert "Reopened</strong> by" in page
    assert "New CT: vascular invasion" in page
    assert review_state_get(consultation=consultation).stage == ReviewStage.AWAITING


def test_the_meeting_form_adds_and_removes_attendee_rows_without_a_script(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    _accept(client, consultation)
    url = reverse("review:meeting", args=[consultation.pk])
    page = client.get(url).content.decode()
    assert _rows(page) == 1  # one row to start with
    data = _form(page) | {
        "held_on": "2026-11-20",
        "a-0-name": "Dr A. Surgeon",
        "a-0-specialty": "Hepatobiliary surgery",
        "final_decision": "Resection",
    }
    # "Add an attendee" sends the form back with one more row, saving nothing
    grown = client.post(url, data | {"add-a": "1"})
    assert grown.status_code == 200
    assert _rows(grown.content.decode()) == 2
    assert 'value="Dr A. Surgeon"' in grown.content.decode()
    assert not MdtMeeting.objects.exists()
    # three people listed, one removed: the meeting keeps two
    data |= {
        "a-TOTAL_FORMS": "3",
        "a-1-name": "Dr B. Oncologist",
        "a-1-specialty": "Medical oncology",
        "a-2-name": "Dr C. Wrongly Added",
        "a-2-specialty": "Radiology",
        "a-2-DELETE": "on",
    }
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert [a["name"] for a in MdtMeeting.objects.get().attendees] == [
        "Dr A. Surgeon",
        "Dr B. Oncologist",
    ]


def test_the_amend_form_edits_the_intent_and_the_options_ruled_out(
    client: Any, clinician: Any, team: Any
) -> None:
    # given the amend form of pub-hcc-02 (palliative chemoembolisation; ablation ruled out)
    consultation = completed(clinician, team, "pub-hcc-02.json")
    client.force_login(clinician)
    url = reverse("review:amend", args=[consultation.pk])
    page = client.get(url).content.decode()
    data = _form(page)
    assert data["intent"] == "palliative"
    ruled = {k[: -len("-description")]: v for k, v in data.items() if k.endswith("-description")}
    ablation = next(prefix for prefix, text in ruled.items() if text == "Thermal ablation")
    assert data[f"{ablation}-role"] == "rejected"
    # when the clinician moves ablation to the pathway, makes it curative, removes a ruled-out
    # option and adds an item with the "Add an item" button
    data |= {
        f"{ablation}-role": "primary",
        f"{ablation}-position": "2",
        f"{ablation}-modality": "ablation",
        "intent": "curative",
        "reason": "Two nodules: TACE then ablation",
    }
    transplant = next(prefix for prefix, text in ruled.items() if "transplant" in text.lower())
    data[f"{transplant}-DELETE"] = "on"
    grown = client.post(url, data | {"add-c": "1"})
    assert grown.status_code == 200
    total = int(data["c-TOTAL_FORMS"])
    assert f'name="c-{total}-description"' in grown.content.decode()
    response = client.post(url, data)
    # then version 2 is the curative plan, and the changes say so
    assert response.status_code == 302, response.content.decode()[:3000]
    version = PlanVersion.objects.get()
    assert version.payload["recommendation"]["intent"] == "curative"
    options = [r["option"] for r in version.payload["rejected_options"]]
    assert "Thermal ablation" not in options
    assert not any("transplant" in o.lower() for o in options)
    page = client.get(response["Location"]).content.decode()
    assert "Intent changed from palliative to curative." in page
    assert "No longer ruled out: “Liver transplantation”." in page


def test_an_amendment_that_contradicts_itself_shows_why(
    client: Any, clinician: Any, team: Any
) -> None:
    consultation = completed(clinician, team, "pub-hcc-03.json")
    client.force_login(clinician)
    url = reverse("review:amend", args=[consultation.pk])
    data = _form(client.get(url).content.decode())
    data |= {
        "c-0-modality": "surgery",
        "c-0-description": "Laparoscopic resection of the segment VI lesion",
        "c-0-agents": "",
        "reason": "Surgeon keen",
    }
    response = client.post(url, data)
    assert response.status_code == 422
    page = response.content.decode()
    assert "Not saved." in page
    assert "but rules out “Liver resection”" in page
    assert "The intent is palliative" in page
    assert not PlanVersion.objects.exists()
