"""A clinician reads a plan on a phone, then reviews it as a team would: amends it, records
the meeting, signs off and downloads the PDF rendered by the worker."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from consult.rating.models import ComparatorPlan
from consult.review.models import MdtMeeting, PlanVersion, SignOff
from tests.fixtures.browser import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_plan_page_reads_on_a_phone_without_sideways_scrolling(
    daphne_server: str, browser: Any, finished: Any, clinician: Any, screenshot_dir: Path
) -> None:
    # given a clinician on a phone-sized screen (iPhone 12-15 width)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        login(page, daphne_server, clinician.email)
        # when they open the plan of a finished consultation
        page.goto(f"{daphne_server}/consultations/{finished.pk}/plan/")
        page.wait_for_selector("#pathway li.item")
        # then nothing is wider than the screen
        width = page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        )
        assert width <= 390, f"the page lays out {width} px wide on a 390 px screen"
        # and the question comes first, the gates say their result in words
        assert page.locator("main h2").first.inner_text() == "Question"
        # (passed gates wait in a closed "checked and passed" list: their text, not their layout)
        statuses = [" ".join(t.split()) for t in page.locator(".gate-status").all_text_contents()]
        assert statuses
        assert all(s.split(" ", 1)[1] in ("Failed", "Not checked", "Passed") for s in statuses)
        # and each item's evidence opens the guideline version it cites
        evidence = page.locator("#pathway .evidence a").first
        assert "/kb/evidence/" in evidence.get_attribute("href")
        page.screenshot(path=str(screenshot_dir / "plan-phone.png"), full_page=True)
    finally:
        context.close()


def test_clinician_amends_records_the_meeting_signs_off_and_downloads_the_pdf(
    daphne_server: str,
    celery_worker_proc: Any,
    page: Any,
    finished: Any,
    clinician: Any,
    screenshot_dir: Path,
) -> None:
    from pypdf import PdfReader

    login(page, daphne_server, clinician.email)
    page.goto(f"{daphne_server}/consultations/{finished.pk}/plan/")
    original = finished.plan.content_hash
    # when the clinician amends the first pathway item's dose, with the team's reason
    page.get_by_role("link", name="Amend the plan").click()
    page.wait_for_selector("h1:has-text('Amend plan version 1')")
    first = page.locator("#component-1")
    first.get_by_label("Dose adjustments (one per line)").fill("durvalumab 1120 mg (weight-based)")
    page.get_by_label("Reason for the amendment").fill("MDT: weight-based dosing at 45 kg")
    page.get_by_role("button", name="Save as version 2").click()
    # then version 2 is the current plan, with the change shown against version 1
    page.wait_for_selector("h1:has-text('Plan version 2')")
    assert "durvalumab 1120 mg" in page.locator("#diff .diff__line--added").all_inner_texts()[0]
    version = PlanVersion.objects.get(consultation=finished)
    assert version.number == 2
    assert version.based_on == 1
    finished.plan.refresh_from_db()
    assert finished.plan.content_hash == original  # version 1 is kept as it was
    # when they record the meeting, naming themselves responsible (adding attendee rows as
    # people join, and removing one added by mistake)
    page.get_by_role("link", name="Record the meeting").click()
    page.get_by_label("Meeting date").fill("2026-11-20")
    page.get_by_label("Attendee 1 name").fill("Dr A. Surgeon")
    page.get_by_label("Attendee 1 specialty").fill("Hepatobiliary surgery")
    page.get_by_role("button", name="Add an attendee").click()
    page.get_by_label("Attendee 2 name").fill("Dr B. Oncologist")
    page.get_by_label("Attendee 2 specialty").fill("Medical oncology")
    page.get_by_role("button", name="Add an attendee").click()
    page.get_by_label("Attendee 3 name").fill("Dr C. Not Present")
    page.get_by_role("button", name="Remove attendee 3").click()
    assert not page.get_by_label("Attendee 3 name").is_visible()
    page.get_by_label("Final decision").fill("Durvalumab-tremelimumab, weight-based dosing")
    page.get_by_label("Dissent (who disagreed, and why)").fill("None")
    page.get_by_role("button", name="Save the meeting").click()
    page.wait_for_selector("text=Meeting recorded.")
    assert [a["name"] for a in MdtMeeting.objects.get(consultation=finished).attendees] == [
        "Dr A. Surgeon",
        "Dr B. Oncologist",
    ]
    # and sign off as the responsible clinician, once the confirmation names the version
    page.get_by_role("link", name="Sign off version 2 as responsible clinician").click()
    page.wait_for_selector("h1:has-text('Sign off plan version 2?')")
    page.get_by_label("I have read plan version 2 and sign it off").check()
    page.get_by_role("button", name="Sign off version 2").click()
    page.wait_for_selector("#signed-off")
    assert SignOff.objects.get(consultation=finished).plan_number == 2
    # when they ask for the PDF, the worker renders it while the page shows progress
    page.get_by_label("Paper").select_option("letter")
    page.get_by_role("button", name="Make PDF report").click()
    link = page.get_by_role("link", name="Download PDF")
    link.wait_for(timeout=60_000)
    page.screenshot(path=str(screenshot_dir / "plan-reviewed.png"), full_page=True)
    with page.expect_download() as download:
        link.click()
    data = Path(download.value.path()).read_bytes()
    # then the PDF is the signed-off version 2, its plan attached
    assert data.startswith(b"%PDF")
    reader = PdfReader(io.BytesIO(data))
    attached = json.loads(reader.attachments["plan.json"][0])
    assert attached == version.payload
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert "Signed off" in text
    assert "durvalumab 1120 mg" in text
    width = reader.pages[0].mediabox.width
    assert round(float(width)) == 612  # US Letter, 8.5 in
    # and the signed-off decision becomes the comparator of rating studies in one step (the
    # rating app draws that part of the page), recorded as not independent
    page.get_by_role("button", name="Use the MDT decision as the comparator plan").click()
    page.wait_for_selector("text=is now comparator plan version 1")
    comparator = ComparatorPlan.objects.get(dossier=finished.dossier)
    assert comparator.source == "mdt_decision"
    assert not comparator.independent
    meeting = MdtMeeting.objects.get(consultation=finished)
    assert comparator.payload["recommendation"]["summary"] == meeting.final_decision
    decided = [c["description"] for c in version.payload["recommendation"]["components"]]
    assert [c["description"] for c in comparator.payload["recommendation"]["components"]] == (
        decided
    )
