"""FHIR through the pages and commands: the review screen before anything is saved, confirm,
the stored provenance, the downloads (audited), importcase/runcase and the FHIR server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse
from fhir.resources.R4B.bundle import Bundle
from fhir.resources.R4B.careplan import CarePlan

from consult.models import FhirImport, LesionDossier, Patient
from mdtboard.audit.models import AuditEvent
from tests.fixtures.consultations import completed, signed_off

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fhir"
JENNY = FIXTURES / "Bundle-mcode-patient-bundle-jenny-m.json"


def _counts() -> tuple[int, int, int]:
    return Patient.objects.count(), LesionDossier.objects.count(), FhirImport.objects.count()


def _upload(client: Any, team: Any, raw: bytes, name: str = "jenny.json", **extra: str) -> Any:
    upload = SimpleUploadedFile(name, raw, content_type="application/json")
    data = {"team": team.pk, "files": [upload], **extra}
    return client.post(reverse("consult:dossier-import"), data)


def _hidden(page: str, name: str) -> str:
    marker = f'name="{name}" value="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


def test_a_bundle_is_shown_for_review_and_nothing_is_saved_yet(
    client: Any, clinician: Any, team: Any
) -> None:
    client.force_login(clinician)
    before = _counts()
    # when the clinician uploads HL7's Jenny M bundle, with the question dated 2018-06-01
    response = _upload(client, team, JENNY.read_bytes(), as_of="2018-06-01")
    # then the review screen lists the values with where they came from, and saves nothing
    assert response.status_code == 200
    page = response.content.decode()
    assert _counts() == before
    assert "Review the record before saving" in page
    assert 'id="fhir-value-patient-age-years"' in page
    ecog_row = page[page.index('id="fhir-value-patient-ecog"') :]
    ecog_row = ecog_row[: ecog_row.index("</tr>")]
    assert "Observation/ecog-performance-status-jenny-m" in ecog_row
    assert "http://loinc.org" in ecog_row
    assert "89247-1" in ecog_row
    assert "2018-04-12" in ecog_row
    not_imported = page[page.index('id="fhir-not-imported"') :]
    assert "Practitioner/us-core-practitioner-owen-oncologist" in not_imported
    assert "direct identifier" in not_imported
    # what the board will still need for this breast case
    assert 'id="fhir-needs"' in page
    assert "biomarkers.er_pct" in page
    # the name and record number never reach the page
    assert "Jenny" not in page
    assert "MRN1234" not in page


def test_confirm_saves_the_dossier_with_its_provenance(
    client: Any, clinician: Any, team: Any
) -> None:
    client.force_login(clinician)
    page = _upload(client, team, JENNY.read_bytes(), as_of="2018-06-01").content.decode()
    token = _hidden(page, "token")
    response = client.post(
        reverse("consult:fhir-import-confirm"),
        {"team": team.pk, "pseudonym": "BR-JM-01", "question": "Adjuvant plan?", "token": token},
    )
    dossier = LesionDossier.objects.get(patient__pseudonym="BR-JM-01")
    assert response.status_code == 302
    assert response["Location"] == reverse("consult:dossier-detail", args=[dossier.pk])
    assert dossier.cancer_type == "breast"
    assert dossier.data["patient"]["age_years"] == 53
    assert dossier.data["question"] == "Adjuvant plan?"
    record = dossier.fhir_import
    assert record.as_of == date(2018, 6, 1)
    fields = {v["field"]: v["source"]["resource"] for v in record.provenance["values"]}
    assert fields["staging.t"] == "Observation/tnm-clinical-primary-tumor-category-jenny-m"
    event = AuditEvent.objects.get(action="dossier.import_fhir", object_id=str(dossier.pk))
    assert "Jenny" not in json.dumps(event.payload)
    # the dossier page shows where the values came from
    detail = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()
    assert 'id="fhir-provenance"' in detail
    assert "Observation/ecog-performance-status-jenny-m" in detail


def test_a_changed_review_is_refused_and_nothing_is_saved(
    client: Any, clinician: Any, team: Any
) -> None:
    client.force_login(clinician)
    page = _upload(client, team, JENNY.read_bytes()).content.decode()
    token = _hidden(page, "token")
    before = _counts()
    response = client.post(
        reverse("consult:fhir-import-confirm"),
        {"team": team.pk, "pseudonym": "X-1", "question": "", "token": token[:-4] + "AAAA"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("consult:dossier-import")
    assert _counts() == before


def test_a_bad_bundle_shows_its_fhir_path_and_saves_nothing(
    client: Any, clinician: Any, team: Any
) -> None:
    client.force_login(clinician)
    data = json.loads(JENNY.read_text())
    data["entry"][25]["resource"]["valueQuantity"]["value"] = "heavy"
    before = _counts()
    response = _upload(client, team, json.dumps(data).encode())
    assert response.status_code == 422
    page = response.content.decode()
    assert "Bundle.entry[25].resource.valueQuantity.value" in page
    assert "Nothing was imported" in page
    assert _counts() == before


def test_a_bundle_with_other_files_is_refused(client: Any, clinician: Any, team: Any) -> None:
    client.force_login(clinician)
    case = SimpleUploadedFile("a.json", b'{"format": "mdtboard.case/1"}')
    bundle = SimpleUploadedFile("b.json", JENNY.read_bytes())
    response = client.post(
        reverse("consult:dossier-import"), {"team": team.pk, "files": [case, bundle]}
    )
    assert "import it on its own" in response.content.decode()
    assert LesionDossier.objects.count() == 0


def test_fhir_export_of_a_dossier_is_a_valid_bundle_and_audited(
    client: Any, clinician: Any, outsider: Any, team: Any
) -> None:
    from tests.fixtures.consultations import imported

    dossier = imported(clinician, team, "pub-lymph-02.json")
    client.force_login(clinician)
    response = client.get(reverse("consult:dossier-export-fhir", args=[dossier.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/fhir+json")
    Bundle.model_validate(json.loads(response.content))
    assert AuditEvent.objects.filter(
        action="dossier.export", object_id=str(dossier.pk), payload__format="fhir"
    ).exists()
    client.force_login(outsider)
    assert client.get(reverse("consult:dossier-export-fhir", args=[dossier.pk])).status_code == 404


def test_the_signed_plan_downloads_as_a_valid_careplan(
    client: Any, clinician: Any, colleague: Any, team: Any
) -> None:
    consultation = completed(clinician, team)
    client.force_login(clinician)
    url = reverse("consult:plan-careplan", args=[consultation.pk])
    # before sign-off: back to the plan page with the reason
    assert client.get(url)["Location"] == reverse("consult:plan-detail", args=[consultation.pk])
    signed_off(clinician, consultation, decision_text="Resection of segment VI")
    response = client.get(url)
    assert response.status_code == 200
    careplan = CarePlan.model_validate(json.loads(response.content))
    assert careplan.activity
    assert any("MDT decision: Resection of segment VI" in n.text for n in careplan.note)
    assert AuditEvent.objects.filter(action="plan.export", payload__format="fhir-careplan").exists()


def test_importcase_reads_a_bundle_and_prints_what_was_not_imported(
    clinician: Any, team: Any
) -> None:
    out = StringIO()
    call_command(
        "importcase",
        str(FIXTURES / "hcc-child-pugh.json"),
        "--team",
        team.slug,
        "--user",
        clinician.email,
        "--as-of",
        "2026-01-15",
        stdout=out,
    )
    text = out.getvalue()
    assert "imported" in text
    assert "not imported: Bundle.entry[" in text
    dossier = LesionDossier.objects.get()
    assert dossier.cancer_type == "hcc"
    assert dossier.data["organ_function"]["ascites"] == "mild"
    assert dossier.fhir_import.source == "command"


# --------------------------------------------------------------------------- FHIR server


class _Server(BaseHTTPRequestHandler):
    """Patient/hcc-patient-1/$everything in two pages, for the bearer token "secret"."""

    record: dict[str, Any] = json.loads((FIXTURES / "hcc-child-pugh.json").read_text())

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer secret":
            self._send(401, {"resourceType": "OperationOutcome"})
            return
        entries = self.record["entry"]
        half = len(entries) // 2
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/fhir/Patient/hcc-patient-1/$everything":
            page = {
                "resourceType": "Bundle",
                "type": "searchset",
                "entry": entries[:half],
                "link": [{"relation": "next", "url": f"{host}/fhir/page2"}],
            }
            self._send(200, page)
        elif self.path == "/fhir/page2":
            self._send(
                200, {"resourceType": "Bundle", "type": "searchset", "entry": entries[half:]}
            )
        else:
            self._send(404, {"resourceType": "OperationOutcome"})

    def _send(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/fhir+json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fhir_server(settings: Any) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/fhir"
    settings.FHIR_SERVER_URL = url
    settings.FHIR_SERVER_TOKEN = "secret"
    yield url
    server.shutdown()
    server.server_close()


def test_a_record_fetched_from_the_fhir_server_is_reviewed_then_saved(
    client: Any, clinician: Any, team: Any, fhir_server: str
) -> None:
    client.force_login(clinician)
    url = reverse("consult:fhir-server-import")
    response = client.post(
        url, {"team": team.pk, "patient_id": "hcc-patient-1", "as_of": "2026-01-15"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert LesionDossier.objects.count() == 0
    assert 'id="fhir-value-labs-bilirubin-mg-dl"' in page
    assert 'id="fhir-value-organ-function-ascites"' in page  # from the second page
    token = _hidden(page, "token")
    client.post(
        reverse("consult:fhir-import-confirm"),
        {"team": team.pk, "pseudonym": "HCC-FHIR-1", "question": "", "token": token},
    )
    dossier = LesionDossier.objects.get(patient__pseudonym="HCC-FHIR-1")
    assert dossier.data["labs"]["albumin_g_dl"] == 3.2


def test_an_unknown_patient_or_a_wrong_token_is_said_on_the_form(
    client: Any, clinician: Any, team: Any, fhir_server: str, settings: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:fhir-server-import")
    page = client.post(url, {"team": team.pk, "patient_id": "nobody"}).content.decode()
    assert "has no patient" in page
    settings.FHIR_SERVER_TOKEN = "wrong"
    page = client.post(url, {"team": team.pk, "patient_id": "hcc-patient-1"}).content.decode()
    assert "refused the request" in page
    assert LesionDossier.objects.count() == 0
