"""Issue 25 in the browser: an amendment that changes an option ruled out and the intent; a
contradictory amendment refused with its reasons; a rejected plan that a stale tab cannot
accept until the decision is reopened; a sign-off that asks first; and a dossier edited after
sign-off, which leaves the signed record as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.models import DossierSnapshot, LesionDossier
from consult.review.models import ClinicianReview, PlanVersion, ReviewStage, SignOff
from consult.review.selectors import review_state_get
from tests.fixtures.browser import login
from tests.fixtures.consultations import completed

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _plan(page: Any, base: str, consultation: Any) -> None:
    page.goto(f"{base}/consultations/{consultation.pk}/plan/")
    page.wait_for_selector("#review")


def _item(page: Any, text: str) -> Any:
    """The fieldset of the amend form whose description is ``text``."""
    for index in range(page.locator("fieldset.component").count()):
        row = page.locator("fieldset.component").nth(index)
        if row.locator("textarea[name$='-description']").input_value() == text:
            return row
    raise AssertionError(f"no item {text!r} in the amend form")


def test_an_amendment_changes_an_option_ruled_out_and_the_intent(
    daphne_server: str, page: Any, clinician: Any, team: Any, screenshot_dir: Path
) -> None:
    # given the board's palliative chemoembolisation plan (pub-hcc-02), thermal ablation ruled out
    consultation = completed(clinician, team, "pub-hcc-02.json")
    login(page, daphne_server, clinician.email)
    _plan(page, daphne_server, consultation)
    page.get_by_role("link", name="Amend the plan").click()
    page.wait_for_selector("h1:has-text('Amend plan version 1')")
    # when the clinician moves ablation into the pathway after TACE and makes the plan curative
    ablation = _item(page, "Thermal ablation")
    ablation.get_by_label("Place in the plan").select_option("primary")
    ablation.get_by_label("Order").fill("2")
    ablation.get_by_label("Modality").select_option("ablation")
    ablation.get_by_label("Description").fill("Microwave ablation of the residual nodule")
    page.get_by_label("Intent of the plan").select_option("curative")
    page.get_by_label("Reason for the amendment").fill("Two nodules: TACE, then ablation")
    page.get_by_role("button", name="Save as version 2").click()
    # then version 2 is the plan, and the page says what moved
    page.wait_for_selector("h1:has-text('Plan version 2')")
    changes = page.locator("#changes li").all_inner_texts()
    assert "Intent changed from palliative to curative." in changes
    assert any(
        "moved from the options ruled out to the recommended pathway" in c for c in changes
    ), changes
    page.screenshot(path=str(screenshot_dir / "amend-changes.png"), full_page=True)
    version = PlanVersion.objects.get(consultation=consultation)
    assert version.payload["recommendation"]["intent"] == "curative"
    assert "Thermal ablation" not in [r["option"] for r in version.payload["rejected_options"]]


def test_a_contradictory_amendment_is_refused_with_its_reasons(
    daphne_server: str, page: Any, clinician: Any, team: Any
) -> None:
    # given the board's palliative plan for BCLC C (pub-hcc-03), liver resection ruled out
    consultation = completed(clinician, team, "pub-hcc-03.json")
    login(page, daphne_server, clinician.email)
    page.goto(f"{daphne_server}/consultations/{consultation.pk}/review/amend/")
    # when the clinician writes a laparoscopic resection as step 1 and nothing else
    first = page.locator("#component-1")
    first.get_by_label("Modality").select_option("surgery")
    first.get_by_label("Description").fill("Laparoscopic resection of the segment VI lesion")
    first.get_by_label("Drugs (comma-separated)").fill("")
    page.get_by_label("Reason for the amendment").fill("Surgeon's view")
    page.get_by_role("button", name="Save as version 2").click()
    # then nothing is saved and the page says both contradictions
    errors = page.locator("#amend-errors")
    errors.wait_for()
    text = errors.inner_text()
    assert "Not saved." in text
    assert "but rules out “Liver resection”" in text
    assert "The intent is palliative" in text
    assert not PlanVersion.objects.exists()


def test_a_rejected_plan_is_not_accepted_from_a_stale_tab_until_reopened(
    daphne_server: str, browser: Any, clinician: Any, colleague: Any, team: Any
) -> None:
    consultation = completed(clinician, team, "pub-hcc-01.json")
    mine = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    theirs = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
    try:
        # given two clinicians with the plan open, each with the decision form drawn
        login(mine, daphne_server, clinician.email)
        login(theirs, daphne_server, colleague.email)
        _plan(mine, daphne_server, consultation)
        _plan(theirs, daphne_server, consultation)
        # when one rejects it, for a clinical reason
        mine.get_by_label("Reject").check()
        mine.locator(".decision-form textarea[name=reason]").fill("Portal hypertension: no")
        mine.get_by_label("Clinical").check()
        mine.get_by_role("button", name="Record decision").click()
        mine.wait_for_selector("#decision-recorded")
        # and the other accepts from the form they drew before
        theirs.get_by_label("Accept").check()
        theirs.get_by_role("button", name="Record decision").click()
        # then the accept is refused, naming the decision that stands
        theirs.wait_for_selector("text=to change it, reopen the decision with a reason")
        assert ClinicianReview.objects.count() == 1
        assert review_state_get(consultation=consultation).stage == ReviewStage.REJECTED
        # when they reopen it with the reason, they can accept
        theirs.locator("#reopen summary").click()
        theirs.get_by_label("Reason for reopening").fill("Hepatology: HVPG 8 mmHg")
        theirs.get_by_role("button", name="Reopen the decision").click()
        theirs.wait_for_selector("text=The decision is reopened")
        theirs.get_by_label("Accept").check()
        theirs.get_by_role("button", name="Record decision").click()
        theirs.wait_for_selector("#decision-recorded")
        history = theirs.locator("ol.decisions li").all_inner_texts()
        assert [h.split(" ", 1)[0] for h in history] == ["Rejected", "Reopened", "Accepted"]
    finally:
        mine.context.close()
        theirs.context.close()


def test_sign_off_asks_first_and_a_later_dossier_edit_leaves_the_signed_record(
    daphne_server: str, page: Any, clinician: Any, team: Any, screenshot_dir: Path
) -> None:
    # given an accepted plan and its meeting
    consultation = completed(clinician, team, "pub-hcc-01.json")
    login(page, daphne_server, clinician.email)
    _plan(page, daphne_server, consultation)
    page.get_by_label("Accept").check()
    page.get_by_role("button", name="Record decision").click()
    page.wait_for_selector("#decision-recorded")
    page.get_by_role("link", name="Record the meeting").click()
    page.get_by_label("Meeting date").fill("2026-11-20")
    page.get_by_label("Attendee 1 name").fill("Dr A. Surgeon")
    page.get_by_label("Attendee 1 specialty").fill("Hepatobiliary surgery")
    page.get_by_label("Final decision").fill("Resection as proposed")
    page.get_by_role("button", name="Save the meeting").click()
    page.wait_for_selector("text=Meeting recorded.")
    # when the responsible clinician presses sign off, a confirmation names the version
    page.get_by_role("link", name="Sign off version 1 as responsible clinician").click()
    page.wait_for_selector("h1:has-text('Sign off plan version 1?')")
    assert consultation.plan.content_hash[:12] in page.content()
    page.get_by_role("button", name="Sign off version 1").click()
    page.wait_for_selector("text=tick the confirmation")
    assert not SignOff.objects.exists()
    page.get_by_label("I have read plan version 1 and sign it off").check()
    page.get_by_role("button", name="Sign off version 1").click()
    page.wait_for_selector("#signed-off")
    signed = SignOff.objects.get()
    snapshot = DossierSnapshot.objects.get(dossier=consultation.dossier)
    bilirubin = snapshot.data["labs"]["bilirubin_mg_dl"]
    # when a clinician then edits the dossier (a new laboratory value)
    page.goto(f"{daphne_server}/dossiers/{consultation.dossier_id}/edit/labs/")
    page.get_by_label("Bilirubin (mg/dL)").fill("1.4")
    page.get_by_role("button", name="Save and view summary").click()
    # then the edit starts a new dossier version and says the signed record stays
    page.wait_for_selector("text=stays as it was")
    assert "Your changes start version 2, a draft" in page.content()
    assert "Dossier version 1" in page.locator("#signed-records").inner_text()
    page.screenshot(path=str(screenshot_dir / "dossier-after-sign-off.png"), full_page=True)
    dossier = LesionDossier.objects.get(pk=consultation.dossier_id)
    assert dossier.status == "draft"
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 1.4
    # and the signed record is as it was: the snapshot, the sign-off, the plan page
    snapshot.refresh_from_db()
    assert snapshot.data["labs"]["bilirubin_mg_dl"] == bilirubin
    assert SignOff.objects.get() == signed
    assert (signed.plan_number, signed.plan_hash) == (1, consultation.plan.content_hash)
    _plan(page, daphne_server, consultation)
    assert "Signed off" in page.locator("#signed-off").inner_text()
    assert review_state_get(consultation=consultation).stage == ReviewStage.SIGNED
