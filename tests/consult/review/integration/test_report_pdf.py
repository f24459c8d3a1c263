"""The PDF report: what it says, what it carries, and what it never does (reach the network,
run or load hostile text)."""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
import threading
from typing import Any

import pytest
from pypdf import PdfReader

from clinical.vocab import GATE_STATUS_LABELS
from consult.labels import staging_label
from consult.models import AgentMessage
from consult.review import services
from consult.review.models import PlanReport
from consult.review.pdf import LocalOnlyFetcher, pdf_render
from consult.review.presenters import gate_title
from consult.review.report import DISCLAIMER, plan_json_bytes, report_html
from tests.fixtures.browser import SCREENSHOT_DIR
from tests.fixtures.consultations import completed

pytestmark = pytest.mark.slow

HOSTILE_IMG = "<img src=http://198.51.100.23/pixel.png>"
HOSTILE_SCRIPT = "<script>alert('x')</script>"


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rendered in the test, not by a worker: nothing goes to the broker.
    monkeypatch.setattr(services, "_enqueue_report", lambda report_id: None)


def _norm(text: str) -> str:
    # Lines wrap at spaces and after hyphens ("atezolizumab-" / "bevacizumab"): compare text
    # with single spaces and no space after a hyphen.
    return " ".join(text.split()).replace("- ", "-")


def _text(data: bytes) -> str:
    reader = PdfReader(io.BytesIO(data))
    return _norm(" ".join(page.extract_text() for page in reader.pages))


def _render(
    consultation: Any, user: Any, paper: str = "a4", appendix: tuple[str, ...] = ()
) -> tuple[PlanReport, bytes]:
    report = services.report_request(
        actor=user, consultation=consultation, paper=paper, appendix=appendix
    )
    assert services.report_render(report_id=report.pk) == "done"
    report.refresh_from_db()
    return report, services.report_path(report).read_bytes()


@pytest.mark.django_db(transaction=True)
def test_pdf_of_a_public_case_has_what_a_colleague_takes_into_the_meeting(
    finished: Any, clinician: Any
) -> None:
    # given the board's plan of a public case (pub-hcc-03, run by the guideline engine)
    plan = finished.plan.payload
    # when its report is rendered with every appendix section
    report, data = _render(
        finished, clinician, appendix=("evidence", "gates", "members", "dossier")
    )
    text = _text(data)
    # then it names the staging values of the case's cancer
    for key in ("bclc", "child_pugh_class", "child_pugh_score", "albi_grade"):
        assert f"{staging_label(key)} {plan['staging'][key]}" in text, key
    # each component of the recommended pathway
    primary = [c for c in plan["recommendation"]["components"] if c["role"] == "primary"]
    assert primary
    for component in primary:
        assert _norm(component["description"]) in text
    # each gate with its result in words
    assert plan["safety"]["gates"]
    for gate in plan["safety"]["gates"]:
        label, symbol = GATE_STATUS_LABELS[gate["status"]]
        name, _ = gate_title(gate)
        assert _norm(f"{symbol} {label} {name}") in text, gate["gate"]
    # the monitoring table, phase by phase
    assert "Phase What Interval Response criteria" in text
    for item in plan["monitoring"]:
        assert _norm(item["what"]) in text
    assert "Acute (0–3 months)" in text
    assert "mRECIST" in text
    # a provenance anchor of the evidence, the plan's hash and the disclaimer
    anchor = plan["evidence"][0]["anchor"]
    assert _norm(anchor) in text
    assert finished.plan.content_hash in text.replace(" ", "")
    assert _norm(DISCLAIMER) in text
    # and the members' appendix says who concluded what
    assert "Appendix: board members' conclusions" in text
    assert "Who concluded what, round by round" in text
    # and the plan rides along as its JSON, equal to the stored plan
    attached = PdfReader(io.BytesIO(data)).attachments["plan.json"][0]
    assert json.loads(attached) == plan
    assert report.sha256
    assert report.size_bytes == len(data)


@pytest.mark.django_db
def test_page_one_renders_to_an_image_for_the_readme(clinician: Any, team: Any) -> None:
    # given the report of a public case
    consultation = completed(clinician, team, "pub-lung-01.json")
    report, _data = _render(consultation, clinician)
    # when page 1 is rasterised as a reader's viewer would
    pdftoppm = shutil.which("pdftoppm")
    assert pdftoppm, "pdftoppm (poppler-utils) is needed: `make test` installs it as root"
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOT_DIR / "report-page1"
    subprocess.run(
        [
            pdftoppm,
            "-png",
            "-r",
            "80",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
            str(services.report_path(report)),
            str(target),
        ],
        check=True,
    )
    # then it is a real page image (A4 at 80 dpi: about 662 x 935 px)
    png = (SCREENSHOT_DIR / "report-page1.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    width = int.from_bytes(png[16:20], "big")
    height = int.from_bytes(png[20:24], "big")
    assert abs(width - 661) <= 2
    assert abs(height - 935) <= 2


@pytest.mark.django_db
def test_us_letter_and_a4_are_the_clinicians_choice(clinician: Any, team: Any) -> None:
    consultation = completed(clinician, team, "pub-breast-01.json")
    for paper, points in (("a4", (595, 842)), ("letter", (612, 792))):
        _, data = _render(consultation, clinician, paper)
        box = PdfReader(io.BytesIO(data)).pages[0].mediabox
        assert (round(float(box.width)), round(float(box.height))) == points


def _hostile(plan: dict[str, Any]) -> None:
    plan["recommendation"]["summary"] = f"Proceed {HOSTILE_IMG} now {HOSTILE_SCRIPT}"
    plan["recommendation"]["components"][0]["description"] = f"Resection {HOSTILE_IMG}"
    plan["rejected_options"] = [{"option": HOSTILE_SCRIPT, "reason": HOSTILE_IMG}]


@pytest.mark.django_db
def test_hostile_text_in_a_plan_is_printed_as_text_and_nothing_is_fetched(
    clinician: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a plan and an agent's conclusion carrying markup, as an LLM might write it
    consultation = completed(clinician, team, edit=_hostile)
    AgentMessage.objects.create(
        consultation=consultation,
        step_key="r1.report.treatment",
        round=1,
        role="treatment",
        kind="report",
        payload={"report": {"conclusion": f"Go {HOSTILE_IMG}", "claims": []}},
    )
    # and every connection attempt recorded
    attempts: list[Any] = []
    real = socket.socket.connect
    renderer = threading.get_ident()

    def connect(self: socket.socket, address: Any) -> Any:
        # Only this thread renders; earlier tests' broadcast threads may still talk to Redis.
        if threading.get_ident() == renderer:
            attempts.append(address)
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    # when the report is rendered, with the members' conclusions appended
    report = services.report_request(
        actor=clinician, consultation=consultation, paper="a4", appendix=["members"]
    )
    html, plan = report_html(report=report)
    fetcher = LocalOnlyFetcher()
    data = pdf_render(html=html, attachment=plan_json_bytes(plan), title="t", fetcher=fetcher)
    # then the markup was escaped in the HTML and printed as text in the PDF
    assert HOSTILE_IMG not in html
    assert "&lt;img src=http://198.51.100.23/pixel.png&gt;" in html
    text = _text(data)
    assert f"Resection {HOSTILE_IMG}" in text
    assert HOSTILE_SCRIPT in text
    assert f"Go {HOSTILE_IMG}" in text
    # and nothing was fetched, nor any connection opened
    assert fetcher.refused == []
    assert [a for a in attempts if not isinstance(a, str)] == []


def test_the_url_fetcher_refuses_anything_but_the_apps_static_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a page that asks for remote and foreign resources (as a template bug might)
    attempts: list[Any] = []
    renderer = threading.get_ident()

    def connect(self: socket.socket, address: Any) -> None:
        if threading.get_ident() == renderer:  # not an earlier test's broadcast thread
            attempts.append(address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    html = """<html><head>
      <link rel="stylesheet" href="https://cdn.example.test/x.css">
      <link rel="stylesheet" href="css/review.css">
      </head><body>
      <img src="http://198.51.100.23/pixel.png"><img src="file:///etc/hostname">
      <img src="ftp://198.51.100.23/a.png"><p>text</p></body></html>"""
    fetcher = LocalOnlyFetcher()
    # when it is rendered
    data = pdf_render(html=html, attachment=b"{}", title="t", fetcher=fetcher)
    # then the PDF is made, every non-local resource was refused before any connection,
    # and the app's own stylesheet was read
    assert data.startswith(b"%PDF")
    assert sorted(fetcher.refused) == [
        "file:///etc/hostname",
        "ftp://198.51.100.23/a.png",
        "http://198.51.100.23/pixel.png",
        "https://cdn.example.test/x.css",
    ]
    assert attempts == []
