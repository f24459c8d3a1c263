"""A rater scores a blinded packet in the browser, partly by keyboard; the admin sees it count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.rating.models import Rating
from tests.consult.rating.support import finished_consultation, study_over, with_comparator
from tests.fixtures.browser import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_rater_rates_a_packet_and_the_admin_sees_it_counted(
    daphne_server: str,
    browser: Any,
    clinician: Any,
    team: Any,
    rater: Any,
    admin_user: Any,
    screenshot_dir: Path,
) -> None:
    # given a study of one packet, assigned to the rater
    consultation = finished_consultation(clinician, team, "pub-hcc-01.json")
    with_comparator(clinician, consultation)
    study = study_over(admin_user, [consultation], [rater])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, daphne_server, rater.email)
    # when the rater opens their queue and the packet
    page.get_by_role("link", name="Rating queue").first.click()
    page.get_by_role("link", name="Packet 1").click()
    page.wait_for_selector("h2:has-text('Plan B')")
    # and scores Efficiency of plan A from the keyboard: focus its group, arrows to 4
    page.get_by_label("Plan A, Efficiency: 1").focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.get_by_label("Plan A, Efficiency: 4").is_checked()
    # and everything else with the mouse
    dimensions = (
        "Safety & Ethics",
        "Completeness",
        "Clinical Appropriateness",
        "Evidence Utilization",
        "Patient-Centeredness",
    )
    for dimension in dimensions:
        page.get_by_label(f"Plan A, {dimension}: 4").check()
    for dimension in (*dimensions, "Efficiency"):
        page.get_by_label(f"Plan B, {dimension}: 3").check()
    page.get_by_role("group", name="Which plan would you take").get_by_label("Plan A").check()
    page.get_by_role("group", name="Which one do you think").get_by_label("Cannot tell").check()
    page.screenshot(path=str(screenshot_dir / "rating-packet.png"), full_page=True)
    page.get_by_role("button", name="Submit rating").click()
    # then the queue says it is submitted and locked
    page.wait_for_selector("text=your rating is locked")
    assert page.locator(".chip--ok", has_text="Submitted").count() == 1
    rating = Rating.objects.get(assignment__rater=rater)
    assert rating.scores.get(position="A", dimension="efficiency").value == 4
    context.close()
    # when the administrator opens the study's analytics
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, daphne_server, admin_user.email)
    page.goto(f"{daphne_server}/rating/studies/")
    page.get_by_role("link", name=study.name).click()
    page.get_by_role("link", name="Analytics").click()
    # then the rating is counted and the figures are drawn
    page.wait_for_selector("#dimension-table")
    assert "1 of 1 ratings submitted (1 packets)" in page.locator(".subtitle").inner_text()
    assert page.locator("img[src^='data:image/svg+xml']").count() == 5
    page.screenshot(path=str(screenshot_dir / "rating-analytics.png"), full_page=True)
    context.close()
