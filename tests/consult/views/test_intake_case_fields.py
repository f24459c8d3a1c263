"""The additive case fields and a distant index lesion, end to end through the intake pages:
import -> dossier page -> section forms -> snapshot -> export."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from consult.models import DossierSnapshot, DossierStatus, LesionDossier
from consult.services.dossiers import case_import
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db


def _case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLIC_CASES / name).read_text(encoding="utf-8"))
    data.pop("expected", None)
    return data


def lung_case_with_new_fields() -> dict[str, Any]:
    data = _case("pub-lung-03.json")
    data["case_id"] = "lung-new-fields"
    data["patient"].update(
        age_years=76,
        sex="female",
        breastfeeding=False,
        frailty="vulnerable",
        g8_score=12,
        height_cm=162,
        gestational_age_weeks=None,
        prior_irae_organ="colon",
        prior_irae_grade=3,
        prior_irae_agent="ipilimumab + nivolumab",
        prior_irae_date="2025-03-10",
    )
    data["labs"]["hiv"] = "positive"
    data["diagnosis"]["date"] = "2025-11-20"
    data["biomarkers"].update(
        dpd_status="partial_deficiency", dpd_test="genotype", ugt1a1_status=None
    )
    data["organ_function"].update(
        autoimmune_disease="psoriasis, topical treatment only",
        autoimmune_activity="inactive",
        immunosuppression="high_dose_steroids",
        qtc_ms=472,
        heart_rate_bpm=88,
        endoscopy_date=None,
        endoscopy_varices_size=None,
        endoscopy_red_signs=None,
        endoscopy_varices_treated=None,
        recent_bleeding_site="pulmonary",
        recent_bleeding_date="2026-01-05",
    )
    return data


@pytest.fixture
def dossier(clinician: Any, team: Any) -> LesionDossier:
    raw = json.dumps(lung_case_with_new_fields()).encode()
    result = case_import(actor=clinician, team=team, raw=raw, filename="lung-new-fields.json")
    assert result.dossier is not None, result.errors
    return result.dossier


def _page(client: Any, dossier: LesionDossier) -> str:
    content: bytes = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content
    return content.decode()


def _section(page: str, key: str) -> str:
    start = page.index(f'id="section-{key}"')
    return page[start : page.index("</section>", start)]


def test_imported_new_fields_show_on_the_dossier_and_reach_the_snapshot(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    page = _page(client, dossier)
    patient = _section(page, "patient")
    for text in ("Breastfeeding", "Frailty", "vulnerable", "G8 geriatric screening score", "12"):
        assert text in patient, text
    assert "HIV" in _section(page, "labs")
    organ = _section(page, "organ_function")
    assert "QTc (ms)" in organ
    assert "472 ms" in organ
    assert "Heart rate (beats/min)" in organ
    assert "88 beats/min" in organ
    assert "inactive or stable" in organ
    # the facts safety gates need (issue 21): shown with their clinical words
    assert "Prior immune-related adverse event: organ" in patient
    assert "bowel (colitis)" in patient
    assert "DPD status (DPYD)" in _section(page, "biomarkers")
    assert "partial deficiency (activity score 1-1.5)" in _section(page, "biomarkers")
    assert "Last significant bleeding: site" in organ
    assert "haemoptysis" in organ
    assert "corticosteroids of 10 mg/day prednisone equivalent or more" in organ
    # when the dossier is submitted, the frozen snapshot carries the values
    client.post(reverse("consult:dossier-submit", args=[dossier.pk]))
    dossier.refresh_from_db()
    assert dossier.status == DossierStatus.SUBMITTED
    snapshot = DossierSnapshot.objects.get(dossier=dossier, number=1)
    assert snapshot.data["patient"]["breastfeeding"] is False
    assert snapshot.data["patient"]["g8_score"] == 12
    assert snapshot.data["labs"]["hiv"] == "positive"
    assert snapshot.data["diagnosis"]["date"] == "2025-11-20"
    assert snapshot.data["organ_function"]["immunosuppression"] == "high_dose_steroids"
    assert snapshot.data["organ_function"]["qtc_ms"] == 472
    # and the export gives back exactly what was imported
    exported = json.loads(client.get(reverse("consult:dossier-export", args=[dossier.pk])).content)
    assert exported == lung_case_with_new_fields() | {"format": "mdtboard.case/1"}


def test_an_old_file_shows_the_new_fields_as_not_available(
    client: Any, clinician: Any, team: Any
) -> None:
    path = PUBLIC_CASES / "pub-breast-01.json"
    result = case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)
    assert result.dossier is not None
    assert result.dossier.data["organ_function"]["qtc_ms"] is None
    client.force_login(clinician)
    organ = _section(_page(client, result.dossier), "organ_function")
    qtc = organ[organ.index("QTc (ms)") :]
    assert qtc.index("not available") < qtc.index("</div>")


def test_patient_form_offers_and_saves_the_new_fields(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    form = client.get(url).content.decode()
    for name in ("patient__breastfeeding", "patient__frailty", "patient__g8_score"):
        assert f'name="{name}"' in form, name
    assert ">frail</option>" in form
    post = {
        "patient__age_years": "76",
        "patient__sex": "female",
        "patient__breastfeeding": "true",
        "patient__frailty": "frail",
        "patient__g8_score": "9",
        "then": "summary",
    }
    assert client.post(url, post).status_code == 302
    dossier.refresh_from_db()
    assert dossier.data["patient"]["breastfeeding"] is True
    assert dossier.data["patient"]["frailty"] == "frail"
    assert dossier.data["patient"]["g8_score"] == 9
    # leaving a field empty records "not available", never a guess
    assert client.post(url, post | {"patient__g8_score": ""}).status_code == 302
    dossier.refresh_from_db()
    assert dossier.data["patient"]["g8_score"] is None


def test_organ_function_form_saves_cardiac_and_immune_fields(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "organ_function"])
    form = client.get(url).content.decode()
    assert "QTc (ms)" in form
    assert "Heart rate (beats/min)" in form
    assert "Autoimmune disease activity" in form
    assert "Immunosuppression" in form
    post = {
        "organ_function__autoimmune_disease": "none",
        "organ_function__autoimmune_activity": "none",
        "organ_function__immunosuppression": "low_dose_steroids",
        "organ_function__qtc_ms": "501",
        "organ_function__heart_rate_bpm": "57",
    }
    assert client.post(url, post).status_code == 302
    dossier.refresh_from_db()
    assert dossier.data["organ_function"]["qtc_ms"] == 501
    assert dossier.data["organ_function"]["heart_rate_bpm"] == 57
    assert dossier.data["organ_function"]["immunosuppression"] == "low_dose_steroids"
    assert dossier.data["organ_function"]["autoimmune_activity"] == "none"


@pytest.mark.parametrize(
    ("section", "name", "typed", "phrase"),
    [
        ("organ_function", "qtc_ms", "900", "QTc 900 ms is outside the plausible range"),
        ("organ_function", "qtc_ms", "abc", "QTc (ms) must be a whole number"),
        ("organ_function", "qtc_ms", "452.5", "QTc (ms) must be a whole number; found 452.5"),
        ("organ_function", "heart_rate_bpm", "0", "Heart rate 0 beats/min is outside"),
        ("patient", "g8_score", "20", "G8 geriatric screening score 20 is outside"),
        ("patient", "g8_score", "abc", "G8 geriatric screening score must be a whole number"),
    ],
)
def test_bad_values_are_refused_beside_the_field(
    client: Any,
    dossier: LesionDossier,
    clinician: Any,
    section: str,
    name: str,
    typed: str,
    phrase: str,
) -> None:
    client.force_login(clinician)
    saved = json.loads(json.dumps(dossier.data))
    field = f"{section}__{name}"
    # while typing, the inline check answers for this field
    check = reverse("consult:dossier-check-field", args=[dossier.pk, section])
    inline = client.post(check, {"_field": field, field: typed}).content.decode()
    assert phrase in inline
    # saving is refused with the same message beside the field, and nothing changes
    response = client.post(
        reverse("consult:dossier-edit", args=[dossier.pk, section]), {field: typed}
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert phrase in page
    errors = page[page.index(f'id="errors-{field}"') :]
    assert errors.index(phrase) < errors.index("</div>")
    dossier.refresh_from_db()
    assert dossier.data == saved


def test_breastfeeding_male_is_refused_with_the_reason(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    post = {"patient__sex": "male", "patient__breastfeeding": "true"}
    check = reverse("consult:dossier-check-field", args=[dossier.pk, "patient"])
    inline = client.post(check, {"_field": "patient__breastfeeding", **post}).content.decode()
    assert "Breastfeeding is true but sex is male" in inline
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    response = client.post(url, post)
    assert response.status_code == 422
    assert "Breastfeeding is true but sex is male" in response.content.decode()
    dossier.refresh_from_db()
    assert dossier.data["patient"]["sex"] == "female"


def test_contradictions_that_may_be_right_are_shown_as_please_check(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "organ_function"])
    post = {
        "organ_function__autoimmune_disease": "rheumatoid arthritis on methotrexate",
        "organ_function__autoimmune_activity": "none",
        "organ_function__qtc_ms": "585",
    }
    # saved (warnings never block), then listed on the dossier page for checking
    assert client.post(url, post).status_code == 302
    page = _page(client, dossier)
    assert "Please check:" in page
    assert "organ_function.autoimmune_activity" in page
    assert "rheumatoid arthritis on methotrexate" in page
    assert "QTc 585 ms is unusual" in page


def test_hcc_distant_recurrence_imports_through_the_upload_page(
    client: Any, clinician: Any, team: Any
) -> None:
    # given an HCC resected in 2024, now a solitary adrenal metastasis and a clear liver
    data = _case("pub-hcc-01.json")
    data["case_id"] = "hcc-adrenal-recurrence"
    data["diagnosis"].update(
        setting="recurrent",
        prior_therapies=[
            {
                "line": 1,
                "regimen": "laparoscopic resection of segment VI",
                "end_date": "2024-03-12",
                "best_response": "CR",
                "months_to_relapse": 22,
            }
        ],
    )
    data["index_lesion"].update(site="right adrenal gland", size_mm=34, count=1)
    data["staging"].update(n="N0", m="M1", tnm_edition=8, nodules_count=0, largest_nodule_mm=None)
    data["staging"]["extrahepatic_spread"] = True
    upload = SimpleUploadedFile("hcc-adrenal-recurrence.json", json.dumps(data).encode())
    client.force_login(clinician)
    response = client.post(reverse("consult:dossier-import"), {"team": team.pk, "files": [upload]})
    assert response.status_code == 200, response.content.decode()
    dossier = LesionDossier.objects.get(case_id="hcc-adrenal-recurrence")
    assert dossier.data["index_lesion"]["site"] == "right adrenal gland"
    client.post(reverse("consult:dossier-submit", args=[dossier.pk]))
    dossier.refresh_from_db()
    assert dossier.status == DossierStatus.SUBMITTED


def test_gestational_age_and_height_through_the_patient_form_and_the_dossier_page(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    form = client.get(url).content.decode()
    for name in ("patient__gestational_age_weeks", "patient__height_cm"):
        assert f'name="{name}"' in form, name
    post = {
        "patient__age_years": "34",
        "patient__sex": "female",
        "patient__pregnant": "true",
        "patient__gestational_age_weeks": "19",
        "patient__height_cm": "168",
        "then": "summary",
    }
    assert client.post(url, post).status_code == 302
    dossier.refresh_from_db()
    assert dossier.data["patient"]["gestational_age_weeks"] == 19
    assert dossier.data["patient"]["height_cm"] == 168
    patient = _section(_page(client, dossier), "patient")
    assert "Gestational age (weeks)" in patient
    assert "19 weeks" in patient
    assert "168 cm" in patient
    exported = json.loads(client.get(reverse("consult:dossier-export", args=[dossier.pk])).content)
    assert exported["patient"]["gestational_age_weeks"] == 19


def test_gestational_age_without_pregnancy_is_refused_beside_the_field(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    post = {
        "patient__sex": "female",
        "patient__pregnant": "false",
        "patient__gestational_age_weeks": "10",
    }
    response = client.post(url, post)
    assert response.status_code == 422
    page = response.content.decode()
    errors = page[page.index('id="errors-patient__gestational_age_weeks"') :]
    message = "A gestational age (10 weeks) is recorded but Pregnant is false"
    assert errors.index(message) < errors.index("</div>")
    dossier.refresh_from_db()
    assert dossier.data["patient"]["gestational_age_weeks"] is None


def test_prior_therapy_kind_intent_dates_and_toxicity_through_the_diagnosis_form(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "diagnosis"])
    form = client.get(url).content.decode()
    for name in ("kind", "intent", "start_date", "toxicity_organ", "toxicity_grade"):
        assert f'name="prior-0-{name}"' in form, name
    # given a lobectomy (line 0) and a first palliative line stopped for pneumonitis
    post = {
        "diagnosis__histology": "adenocarcinoma",
        "prior-count": "2",
        "prior-0-line": "0",
        "prior-0-kind": "operation",
        "prior-0-intent": "curative",
        "prior-0-regimen": "right upper lobectomy",
        "prior-0-start_date": "2023-02-01",
        "prior-0-end_date": "2023-02-01",
        "prior-1-line": "1",
        "prior-1-kind": "systemic",
        "prior-1-intent": "palliative",
        "prior-1-regimen": "pembrolizumab",
        "prior-1-start_date": "2024-05-01",
        "prior-1-end_date": "2024-09-12",
        "prior-1-stop_reason": "toxicity",
        "prior-1-toxicity_organ": "lung",
        "prior-1-toxicity_grade": "3",
        "then": "summary",
    }
    # when it is saved
    assert client.post(url, post).status_code == 302
    # then it is stored, shown in words and exported as entered
    dossier.refresh_from_db()
    entries = dossier.data["diagnosis"]["prior_therapies"]
    assert entries[0]["line"] == 0
    assert entries[0]["kind"] == "operation"
    assert entries[1]["toxicity"] == {"organ": "lung", "grade": 3}
    diagnosis = _section(_page(client, dossier), "diagnosis")
    assert "Kind of treatment: operation" in " ".join(diagnosis.split())
    assert "lung, CTCAE grade 3" in diagnosis
    assert "stopped for toxicity" in diagnosis
    exported = json.loads(client.get(reverse("consult:dossier-export", args=[dossier.pk])).content)
    assert exported["diagnosis"]["prior_therapies"][1]["stop_reason"] == "toxicity"


def test_prior_therapy_ending_before_it_started_is_refused_and_nothing_is_saved(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "diagnosis"])
    before = dossier.data["diagnosis"]["prior_therapies"]
    post = {
        "prior-count": "1",
        "prior-0-line": "1",
        "prior-0-regimen": "carboplatin and pemetrexed",
        "prior-0-start_date": "2025-03-01",
        "prior-0-end_date": "2025-01-01",
    }
    response = client.post(url, post)
    assert response.status_code == 422
    assert "End date 2025-01-01 is before the start date 2025-03-01" in response.content.decode()
    dossier.refresh_from_db()
    assert dossier.data["diagnosis"]["prior_therapies"] == before
