"""Intake pages as each persona sees them: owner, colleague, outsider, rater, curator."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from consult.casefile.fields import SECTION_KEYS
from consult.models import DossierStatus, LesionDossier
from consult.services.consultations import consultation_start
from consult.services.dossiers import dossier_submit
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import imported
from tests.fixtures.htmx import HISTORY_RESTORE, HTMX
from tests.fixtures.seed import load_seed
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db


def _dossier_urls(pk: int) -> list[tuple[str, str]]:
    urls = [
        ("get", reverse("consult:dossier-detail", args=[pk])),
        ("get", reverse("consult:dossier-export", args=[pk])),
        ("post", reverse("consult:dossier-submit", args=[pk])),
    ]
    for section in SECTION_KEYS:
        urls.append(("get", reverse("consult:dossier-edit", args=[pk, section])))
        urls.append(("post", reverse("consult:dossier-edit", args=[pk, section])))
        urls.append(("post", reverse("consult:dossier-check-field", args=[pk, section])))
    return urls


def test_outsider_gets_404_on_every_dossier_url(
    client: Any, dossier: LesionDossier, outsider: Any
) -> None:
    client.force_login(outsider)
    for method, url in _dossier_urls(dossier.pk):
        assert getattr(client, method)(url).status_code == 404, url
    dossier.refresh_from_db()
    assert dossier.status == DossierStatus.DRAFT  # the POSTs changed nothing


@pytest.mark.parametrize("persona", ["rater", "curator"])
def test_raters_and_curators_cannot_open_dossiers_at_all(
    client: Any, dossier: LesionDossier, persona: str, request: Any
) -> None:
    client.force_login(request.getfixturevalue(persona))
    urls = [
        *_dossier_urls(dossier.pk),
        ("get", reverse("consult:dossier-list")),
        ("get", reverse("consult:patient-list")),
        ("get", reverse("consult:dossier-create")),
        ("get", reverse("consult:dossier-import")),
    ]
    for method, url in urls:
        assert getattr(client, method)(url).status_code == 403, url


def test_colleague_in_the_team_sees_the_dossier_and_its_derived_facts(
    client: Any, dossier: LesionDossier, colleague: Any
) -> None:
    client.force_login(colleague)
    page = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()
    assert "pub-hcc-01" in page
    # derived staging with its source, and "not available" for what the file leaves null
    assert 'id="derived-bclc"' in page
    assert "Reig M" in page
    assert "not available" in page


def test_lists_show_only_the_teams_dossiers_and_filter(
    client: Any, dossier: LesionDossier, outsider: Any, clinician: Any
) -> None:
    client.force_login(outsider)
    assert "pub-hcc-01" not in client.get(reverse("consult:dossier-list")).content.decode()
    assert "HCC-P01" not in client.get(reverse("consult:patient-list")).content.decode()
    client.force_login(clinician)
    patients = reverse("consult:patient-list")
    assert "HCC-P01" in client.get(patients, {"cancer_type": "hcc"}).content.decode()
    assert "HCC-P01" not in client.get(patients, {"cancer_type": "lymphoma"}).content.decode()
    url = reverse("consult:dossier-list")
    assert "pub-hcc-01" in client.get(url, {"cancer_type": "hcc"}).content.decode()
    assert "pub-hcc-01" not in client.get(url, {"cancer_type": "breast"}).content.decode()
    assert "pub-hcc-01" not in client.get(url, {"status": "submitted"}).content.decode()
    # htmx asks for the table only
    fragment = client.get(url, {"cancer_type": "hcc"}, headers=HTMX)
    assert fragment.content.decode().lstrip().startswith("<table")


def test_dossier_list_back_button_gets_the_whole_page(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-list")
    # when htmx restores the filtered list from history (Back, not in its cache)
    restored = client.get(url, {"cancer_type": "hcc"}, headers=HISTORY_RESTORE)
    # then it gets the whole page, layout and all, with the filtered dossiers
    page = restored.content.decode()
    assert "<html" in page
    assert 'aria-label="Main"' in page
    assert "pub-hcc-01" in page
    # while a filter change still gets the table alone
    fragment = client.get(url, {"cancer_type": "hcc"}, headers=HTMX).content.decode()
    assert fragment.lstrip().startswith("<table")
    # and a cache keeps the two apart
    assert "HX-History-Restore-Request" in restored["Vary"]


def test_board_back_button_gets_the_whole_board_and_counts_as_a_viewing(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    dossier_submit(actor=clinician, dossier=dossier)
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    client.force_login(clinician)
    url = reverse("consult:consultation-board", args=[consultation.pk])
    viewings = AuditEvent.objects.filter(action="consultation.board.view")
    # when the open board polls its status
    poll = client.get(url, headers=HTMX).content.decode()
    # then it gets the status line alone, and no new viewing is recorded
    assert poll.lstrip().startswith('<div id="board-status"')
    assert viewings.count() == 0
    # when htmx restores the board from history
    page = client.get(url, headers=HISTORY_RESTORE).content.decode()
    # then it gets the whole board, and the viewing is recorded
    assert "<html" in page
    assert 'id="board-status"' in page
    assert viewings.count() == 1


def test_section_edit_shows_the_error_next_to_the_field_and_keeps_saved_data(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "labs"])
    form = client.get(url).content.decode()
    assert "Bilirubin (mg/dL)" in form  # units explicit in labels
    # when the clinician types an impossible bilirubin
    response = client.post(url, {"labs__bilirubin_mg_dl": "250", "labs__albumin_g_dl": "4.1"})
    # then the page says why, beside the field, and nothing was saved
    assert response.status_code == 422
    assert "outside the plausible range" in response.content.decode()
    dossier.refresh_from_db()
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 0.9


def test_section_save_stores_values_and_empty_means_not_available(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "labs"])
    fields = {
        "labs__bilirubin_mg_dl": "1.4",
        "labs__albumin_g_dl": "",
        "labs__inr": "1.1",
        "labs__creatinine_mg_dl": "0.9",
        "labs__platelets_10e9_l": "160",
        "labs__hbsag": "positive",
        "labs__hbv_dna_iu_ml": "2000",
        "labs__hcv_rna": "negative",
    }
    response = client.post(url, {**fields, "then": "summary"})
    assert response.status_code == 302
    dossier.refresh_from_db()
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 1.4
    assert dossier.data["labs"]["albumin_g_dl"] is None
    # Child-Pugh now lacks albumin: the summary says which input is missing (by its label,
    # as the form names it), not a guess
    page = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()
    row = page[page.index('id="derived-child_pugh_score"') :]
    row = row[: row.index("</tr>")]
    assert "Albumin (g/dL)" in row
    assert "labs.albumin_g_dl" not in row


def test_the_dossier_shows_dose_calculations_only_for_drugs_its_cancer_is_treated_with(
    client: Any, clinician: Any, team: Any
) -> None:
    # given the published seed and two dossiers with weight and creatinine recorded
    load_seed()
    liver = imported(clinician, team, "pub-hcc-01.json")
    lung = imported(clinician, team, "pub-lung-02.json")
    client.force_login(clinician)

    def page(dossier: LesionDossier) -> str:
        return client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()

    # then a liver dossier shows no carboplatin dose (no liver guideline step gives it)
    assert 'id="derived-carboplatin_auc5_mg"' not in page(liver)
    assert 'id="derived-child_pugh_score"' in page(liver)
    # and a lung dossier, whose guideline steps do, shows it
    assert 'id="derived-carboplatin_auc5_mg"' in page(lung)


def test_a_section_saved_by_a_colleague_meanwhile_is_not_overwritten(
    client: Any, dossier: LesionDossier, clinician: Any, colleague: Any
) -> None:
    import re

    url = reverse("consult:dossier-edit", args=[dossier.pk, "labs"])
    # given the clinician opened the labs section
    client.force_login(clinician)
    base = re.search(r'name="base" value="([0-9a-f]+)"', client.get(url).content.decode())
    assert base is not None
    # and a colleague then saved a new bilirubin
    other = type(client)()
    other.force_login(colleague)
    assert other.post(url, {"labs__bilirubin_mg_dl": "2.2"}).status_code == 302
    # when the clinician saves the form they had open
    response = client.post(url, {"labs__bilirubin_mg_dl": "1.1", "base": base.group(1)})
    # then nothing is overwritten, and the page says why and keeps what they typed
    assert response.status_code == 422
    page = response.content.decode()
    assert "Someone saved this dossier after you opened this page" in page
    assert 'value="1.1"' in page
    dossier.refresh_from_db()
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 2.2
    # and a form opened afterwards saves normally
    fresh = re.search(r'name="base" value="([0-9a-f]+)"', client.get(url).content.decode())
    assert fresh is not None
    response = client.post(url, {"labs__bilirubin_mg_dl": "1.1", "base": fresh.group(1)})
    assert response.status_code == 302


def test_digits_int_cannot_read_get_a_clear_answer_not_a_crash(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    saved = dict(dossier.data["patient"])
    # a superscript digit and an over-long number in the list's patient filter
    for patient in ("\u00b2", "9" * 5000):
        assert client.get(reverse("consult:dossier-list"), {"patient": patient}).status_code == 200
    # and in an integer field of a section
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    response = client.post(url, {"patient__age_years": "9" * 5000, "patient__ecog": "\u0663"})
    assert response.status_code == 422
    page = response.content.decode()
    assert "field--error" in page
    dossier.refresh_from_db()
    assert dossier.data["patient"] == saved


def test_inline_check_returns_the_fields_error_without_saving(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-check-field", args=[dossier.pk, "patient"])
    response = client.post(url, {"_field": "patient__ecog", "patient__ecog": "5"}, headers=HTMX)
    assert response.status_code == 200
    assert "ECOG" in response.content.decode()
    ok = client.post(url, {"_field": "patient__ecog", "patient__ecog": "1"})
    assert "errorlist" not in ok.content.decode()
    dossier.refresh_from_db()
    assert dossier.data["patient"]["ecog"] == 0


def test_cross_field_error_is_shown_for_pregnant_male(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    response = client.post(url, {"patient__sex": "male", "patient__pregnant": "true"})
    assert response.status_code == 422
    assert "pregnan" in response.content.decode().lower()


def test_create_then_submit_through_the_pages(client: Any, clinician: Any, team: Any) -> None:
    client.force_login(clinician)
    response = client.post(
        reverse("consult:dossier-create"),
        {
            "team": team.pk,
            "pseudonym": "LUNG-T1",
            "cancer_type": "lung_adenocarcinoma",
            "question": "Adjuvant therapy?",
        },
    )
    dossier = LesionDossier.objects.get(patient__pseudonym="LUNG-T1")
    assert response["Location"] == reverse("consult:dossier-edit", args=[dossier.pk, "patient"])
    # lung fields are offered, liver-only fields are not
    staging = client.get(reverse("consult:dossier-edit", args=[dossier.pk, "biomarkers"]))
    assert "EGFR" in staging.content.decode()
    assert "AFP" not in staging.content.decode()
    client.post(reverse("consult:dossier-submit", args=[dossier.pk]))
    dossier.refresh_from_db()
    assert dossier.status == DossierStatus.SUBMITTED
    assert AuditEvent.objects.filter(action="dossier.submit", object_id=str(dossier.pk)).exists()


def test_upload_with_a_bad_file_imports_nothing_and_explains_why(
    client: Any, clinician: Any, team: Any
) -> None:
    # given one good file, one with an out-of-range value and one that is not text
    client.force_login(clinician)
    good = SimpleUploadedFile("pub-lung-03.json", (PUBLIC_CASES / "pub-lung-03.json").read_bytes())
    bad_doc = json.loads((PUBLIC_CASES / "pub-hcc-02.json").read_text())
    bad_doc["patient"]["ecog"] = 7
    bad = SimpleUploadedFile("bad-ecog.json", json.dumps(bad_doc).encode())
    junk = SimpleUploadedFile("junk.json", b"\xff\xfe not utf-8")
    # when they are imported together
    response = client.post(
        reverse("consult:dossier-import"), {"team": team.pk, "files": [good, bad, junk]}
    )
    # then nothing is saved, each bad file says what is wrong and the good one says why it
    # was held back
    page = response.content.decode()
    assert response.status_code == 422
    assert "Imported:" not in page
    assert "$.patient.ecog" in page
    assert "junk.json" in page
    assert "Not imported:</strong> pub-lung-03.json" in page
    assert "nothing was imported: 2 other files have errors" in page
    assert not LesionDossier.objects.exists()


def test_upload_of_good_files_imports_them_all(client: Any, clinician: Any, team: Any) -> None:
    client.force_login(clinician)
    files = [
        SimpleUploadedFile(name, (PUBLIC_CASES / name).read_bytes())
        for name in ("pub-lung-03.json", "pub-hcc-02.json")
    ]
    response = client.post(reverse("consult:dossier-import"), {"team": team.pk, "files": files})
    assert response.status_code == 200
    assert response.content.decode().count("Imported:") == 2
    assert sorted(LesionDossier.objects.values_list("case_id", flat=True)) == [
        "pub-hcc-02",
        "pub-lung-03",
    ]


def test_overlong_pseudonym_is_refused_by_validation_and_saves_nothing(
    client: Any, clinician: Any, team: Any
) -> None:
    # given a good file, then one whose pseudonym is longer than the database column (the
    # validator used to allow 200 characters, the column holds 64: a 500 after the first file
    # was already saved)
    client.force_login(clinician)
    good = SimpleUploadedFile("pub-lung-03.json", (PUBLIC_CASES / "pub-lung-03.json").read_bytes())
    long_doc = json.loads((PUBLIC_CASES / "pub-hcc-02.json").read_text())
    long_doc["patient"]["pseudonym"] = "P" * 65
    long = SimpleUploadedFile("long-pseudonym.json", json.dumps(long_doc).encode())
    # when both are imported
    response = client.post(
        reverse("consult:dossier-import"), {"team": team.pk, "files": [good, long]}
    )
    # then the pseudonym is named with its limit, and neither file is saved
    page = response.content.decode()
    assert response.status_code == 422
    assert "Pseudonym is too long (65 characters); the limit is 64." in page
    assert not LesionDossier.objects.exists()


def test_export_downloads_the_case_file(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    client.force_login(clinician)
    response = client.get(reverse("consult:dossier-export", args=[dossier.pk]))
    assert response["Content-Disposition"] == 'attachment; filename="pub-hcc-01.json"'
    assert json.loads(response.content)["format"] == "mdtboard.case/1"


def test_schema_is_published_without_login(client: Any) -> None:
    response = client.get(reverse("consult:case-schema"))
    assert response.status_code == 200
    schema = json.loads(b"".join(response.streaming_content))
    assert schema["properties"]["format"]["const"] == "mdtboard.case/1"


def test_pseudonym_and_question_are_isolated_wherever_shown(
    client: Any, dossier: LesionDossier, clinician: Any
) -> None:
    # given a patient and question stored with a right-to-left override (before validation
    # refused them), which would otherwise reverse the text around them
    dossier_submit(actor=clinician, dossier=dossier)
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    pseudonym = "\u202eHCC-1"
    question = "\u202eResect?"
    dossier.patient.pseudonym = pseudonym
    dossier.patient.save(update_fields=["pseudonym"])
    dossier.data = {**dossier.data, "question": question}
    dossier.save(update_fields=["data"])
    client.force_login(clinician)
    # when the pages that show them are opened
    pages = {
        name: client.get(url).content.decode()
        for name, url in {
            "patients": reverse("consult:patient-list"),
            "dossiers": reverse("consult:dossier-list"),
            "dossier": reverse("consult:dossier-detail", args=[dossier.pk]),
            "board": reverse("consult:consultation-board", args=[consultation.pk]),
        }.items()
    }
    # then each shows them inside <bdi>, so the override stops at the end of the text
    for name, page in pages.items():
        assert f"<bdi>{pseudonym}</bdi>" in page, name
    assert f"<bdi>{question}</bdi>" in pages["dossier"]
