"""A clinician files a dossier through the browser: a validation error, a fix, a submission."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.models import DossierSnapshot, LesionDossier
from tests.fixtures.browser import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_clinician_creates_fixes_and_submits_a_dossier(
    daphne_server: str, page: Any, clinician: Any, screenshot_dir: Path
) -> None:
    login(page, daphne_server, clinician.email)
    # given a new HCC dossier started from the home page
    page.get_by_role("link", name="New dossier").first.click()
    page.get_by_label("Pseudonym").fill("HCC-E2E-1")
    page.get_by_label("Cancer type").select_option("hcc")
    page.get_by_label("MDT question").fill("Resection or ablation?")
    page.get_by_role("button", name="Create dossier").click()
    page.wait_for_selector("h1:has-text('Patient')")
    page.get_by_label("Age (years)").fill("61")
    page.get_by_label("Sex").select_option("male")
    page.get_by_label("ECOG performance status").fill("0")
    page.get_by_role("button", name="Save and continue").click()
    # when the clinician types an implausible bilirubin in the laboratory section
    page.get_by_role("link", name="Laboratory values").click()
    page.get_by_label("Bilirubin (mg/dL)").fill("250")
    # then the error appears beside the field while typing, before anything is saved
    error = page.locator("#errors-labs__bilirubin_mg_dl")
    error.get_by_text("outside the plausible range").wait_for(timeout=10_000)
    page.screenshot(path=str(screenshot_dir / "dossier-inline-error.png"), full_page=True)
    # and saving anyway is refused with the same message
    page.get_by_role("button", name="Save and view summary").click()
    page.wait_for_selector("text=Not saved")
    # when they correct it and fill the other Child-Pugh inputs
    page.get_by_label("Bilirubin (mg/dL)").fill("0.8")
    page.get_by_label("Albumin (g/dL)").fill("4.2")
    page.get_by_label("INR").fill("1.0")
    page.wait_for_function(
        "() => !document.querySelector('#errors-labs__bilirubin_mg_dl .errorlist')"
    )
    page.get_by_role("button", name="Save and view summary").click()
    # then the summary reads like a case packet with derived facts and "not available"
    page.wait_for_selector("h2:has-text('Derived facts')")
    assert "Laboratory values saved." in page.content()
    assert page.locator("#derived-child_pugh_score").inner_text().count("not available") == 1
    assert "labs.bilirubin_mg_dl" not in page.locator("#derived-albi_grade").inner_text()
    assert page.locator(".not-available").count() > 10
    # when they submit it
    page.get_by_role("button", name="Submit dossier").click()
    page.wait_for_selector("text=Submitted as snapshot 1")
    page.screenshot(path=str(screenshot_dir / "dossier-submitted.png"), full_page=True)
    # then a frozen snapshot exists
    dossier = LesionDossier.objects.get(patient__pseudonym="HCC-E2E-1")
    assert dossier.status == "submitted"
    assert DossierSnapshot.objects.filter(dossier=dossier, number=1).exists()
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 0.8
