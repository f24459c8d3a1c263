"""A clinician imports a hospital record (FHIR Bundle) through the browser: the review screen
with the provenance of each value, then the saved dossier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.models import LesionDossier
from tests.fixtures.browser import login

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

HCC = Path(__file__).resolve().parents[1] / "fixtures" / "fhir" / "hcc-child-pugh.json"


def test_clinician_reviews_a_fhir_record_before_saving_it(
    daphne_server: str, page: Any, clinician: Any, screenshot_dir: Path
) -> None:
    login(page, daphne_server, clinician.email)
    # given the import page and the HCC record exported by the hospital system
    page.goto(f"{daphne_server}/dossiers/import/")
    page.get_by_label("Date of the MDT question (FHIR bundles)").fill("2026-01-15")
    page.set_input_files("#id_files", str(HCC))
    page.get_by_role("button", name="Import").click()
    # then the review screen shows each value beside its source, and nothing is saved yet
    page.wait_for_selector("h1:has-text('Review the record before saving')")
    bilirubin = page.locator("#fhir-value-labs-bilirubin-mg-dl")
    assert "25.6 umol/L converted to 1.497 mg/dL" in bilirubin.inner_text()
    assert "14631-6" in bilirubin.inner_text()
    ecog = page.locator("#fhir-value-patient-ecog").inner_text()
    assert "Also recorded (not used)" in ecog
    assert "2025-06-01" in ecog
    assert "Practitioner/dr-liver" in page.locator("#fhir-not-imported").inner_text()
    page.screenshot(path=str(screenshot_dir / "fhir-review.png"), full_page=True)
    assert not LesionDossier.objects.exists()
    # when the clinician gives the pseudonym and saves
    page.get_by_label("Pseudonym").fill("HCC-FHIR-E2E")
    page.get_by_role("button", name="Save dossier").click()
    # then the dossier page shows the Child-Pugh class derived from the imported values
    page.wait_for_selector("h2:has-text('Derived facts')")
    assert "Dossier saved from the FHIR record" in page.content()
    assert "From the FHIR record" in page.locator("#fhir-provenance").inner_text()
    dossier = LesionDossier.objects.get(patient__pseudonym="HCC-FHIR-E2E")
    assert dossier.data["organ_function"]["ascites"] == "mild"
