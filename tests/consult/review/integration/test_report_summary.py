"""The default PDF report is a summary a board takes into the meeting: at most four pages for
every public case (two, mostly), written by `runcase FILE --pdf OUT.pdf`; the appendix adds
only what the clinician ticks."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from pypdf import PdfReader

from consult.review import services
from tests.fixtures.consultations import completed
from tests.fixtures.seed import load_seed
from tests.paths import public_case_files

pytestmark = pytest.mark.slow

MAX_DEFAULT_PAGES = 4


def _text(reader: PdfReader) -> str:
    return " ".join(" ".join(p.extract_text().split()) for p in reader.pages).replace("- ", "-")


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "_enqueue_report", lambda report_id: None)


@pytest.mark.django_db(transaction=True)
def test_runcase_writes_a_summary_of_at_most_four_pages_for_every_public_case(
    tmp_path: Path,
) -> None:
    # given the seed knowledge base and every public case file
    load_seed()
    pages = {}
    for path in public_case_files():
        out = tmp_path / f"{path.stem}.pdf"
        # when the command line runs the case and writes its default report
        call_command(
            "runcase", str(path), "--format", "json", "--pdf", str(out), stdout=io.StringIO()
        )
        reader = PdfReader(out)
        pages[path.stem] = len(reader.pages)
        text = _text(reader)
        case = json.loads(path.read_text())
        # then it is a summary: at most four pages
        assert len(reader.pages) <= MAX_DEFAULT_PAGES, f"{path.stem}: {len(reader.pages)} pages"
        # whose first page has the patient's key facts, the question, the answer and the
        # decision, and no hash
        first = " ".join(reader.pages[0].extract_text().split())
        assert case["patient"]["pseudonym"] in first
        assert "Question" in first
        assert case["question"] in first
        assert "Decision" in first
        assert "Not decided yet" in first
        assert "SHA-256" not in first
        # and the pathway with its doses, the monitoring and a place to sign
        assert "Recommended pathway" in text
        assert "Monitoring" in text
        assert "Not signed off" in text
        # and no appendix unless asked for
        assert "Appendix" not in text
        # and the plan rides along as its JSON
        assert json.loads(reader.attachments["plan.json"][0])["case_id"] == case["case_id"]
    sys.stdout.write(f"\ndefault report pages per public case: {json.dumps(pages)}\n")


@pytest.mark.django_db(transaction=True)
def test_runcase_refuses_an_appendix_it_does_not_know(tmp_path: Path) -> None:
    load_seed()
    path = public_case_files()[0]
    with pytest.raises(CommandError, match="No such appendix section: minutes"):
        call_command(
            "runcase",
            str(path),
            "--pdf",
            str(tmp_path / "out.pdf"),
            "--appendix",
            "minutes",
            stdout=io.StringIO(),
        )
    assert not (tmp_path / "out.pdf").exists()


@pytest.mark.django_db
def test_the_appendix_adds_only_the_sections_the_clinician_ticks(clinician: Any, team: Any) -> None:
    # given a plan whose default report is a summary
    consultation = completed(clinician, team, "pub-hcc-03.json")
    plan = consultation.plan.payload

    def render(appendix: list[str]) -> PdfReader:
        report = services.report_request(
            actor=clinician, consultation=consultation, paper="a4", appendix=appendix
        )
        assert services.report_render(report_id=report.pk) == "done"
        report.refresh_from_db()
        assert report.appendix == appendix
        return PdfReader(services.report_path(report))

    summary = render([])
    text = _text(summary)
    # the summary shows the gates that failed or wait for data, and counts the rest
    failed = sum(g["status"] == "fail" for g in plan["safety"]["gates"])
    assert failed
    assert f"{failed} failed" in text
    assert "Appendix" not in text
    # when the clinician ticks the evidence and every gate
    full = render(["evidence", "gates"])
    more = _text(full)
    # then those sections follow the summary, and only those
    assert len(full.pages) > len(summary.pages)
    assert "Appendix: evidence cited" in more
    assert "Appendix: every safety gate" in more
    assert "Appendix: board members" not in more
    assert "Appendix: the dossier" not in more
    # each citation opening with its source, and every gate listed
    assert plan["evidence"][0]["anchor"].split()[0] in more
    assert more.count("✓ Passed") >= sum(g["status"] == "pass" for g in plan["safety"]["gates"])
