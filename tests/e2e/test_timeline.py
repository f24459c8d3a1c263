"""A clinician walks a patient's timeline with three imaging time points, on a laptop (1366 px,
one horizontal axis) and on a phone (390 px, lanes stacked, no sideways scrolling)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from consult.services.dossiers import case_import
from tests.fixtures.browser import login
from tests.paths import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def patient(clinician: Any, team: Any) -> Any:
    # lung-40 up to its third scan: baseline, SD, then unconfirmed progression on pembrolizumab
    data = json.loads((REPO / "tests/cases/lung-40.json").read_text("utf-8"))
    data.pop("expected")
    for lesion in data["lesions"]:
        lesion["measurements"] = lesion["measurements"][:3]
    result = case_import(
        actor=clinician, team=team, raw=json.dumps(data).encode(), filename="lung-40.json"
    )
    assert result.dossier is not None, result.errors
    return result.dossier.patient


def _walk(page: Any, base: str, email: str) -> None:
    login(page, base, email)
    page.goto(f"{base}/patients/")
    page.get_by_role("link", name="Timeline of LUNG-R40").click()
    page.wait_for_selector("h1:has-text('Timeline of')")


def test_timeline_on_a_laptop_reads_left_to_right(
    daphne_server: str, browser: Any, patient: Any, clinician: Any, screenshot_dir: Path
) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    try:
        # given a clinician of the patient's team, when they open the timeline
        _walk(page, daphne_server, clinician.email)
        # then the three scans sit on one axis in date order, the last one unconfirmed
        scans = page.locator(".timeline__event--imaging")
        assert scans.count() == 3
        boxes = [scans.nth(i).bounding_box() for i in range(3)]
        assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"]
        assert "Baseline" in scans.nth(0).inner_text()
        assert "iUPD" in scans.nth(2).inner_text()
        # and the treatment is a bar that starts before the second scan
        treatment = page.locator(".timeline__event--treatment").first
        assert "pembrolizumab" in treatment.inner_text()
        assert treatment.bounding_box()["x"] < boxes[1]["x"]
        # and the response table shows the arithmetic of each time point
        table = page.locator(".timeline-response")
        assert "Response by iRECIST (computed)" in table.inner_text()
        assert "confirm at the next assessment" in table.inner_text()
        # and the lab trends are drawn on the server
        assert page.locator("svg.trend").count() >= 1
        page.screenshot(path=str(screenshot_dir / "timeline-1366.png"), full_page=True)
    finally:
        context.close()


def test_timeline_on_a_phone_stacks_the_lanes(
    daphne_server: str, browser: Any, patient: Any, clinician: Any, screenshot_dir: Path
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        _walk(page, daphne_server, clinician.email)
        # then nothing is wider than the screen
        width = page.evaluate(
            "() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        )
        assert width <= 390, f"the page lays out {width} px wide on a 390 px screen"
        # and the scans are stacked one under the other, in date order
        scans = page.locator(".timeline__event--imaging")
        boxes = [scans.nth(i).bounding_box() for i in range(3)]
        assert boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
        assert abs(boxes[0]["x"] - boxes[2]["x"]) < 2
        page.screenshot(path=str(screenshot_dir / "timeline-390.png"), full_page=True)
    finally:
        context.close()
