"""The live tumor board in a real browser, against Daphne and a real worker."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from consult.models import Consultation, ConsultationEvent, EvidenceNode
from tests.fixtures.browser import login
from tests.fixtures.seed import load_seed
from tests.fixtures.waiting import wait_until
from tests.paths import PUBLIC_CASES

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def _import_and_submit(page: Any, base: str, case: str) -> None:
    page.goto(base + "/dossiers/import/")
    page.set_input_files("#id_files", str(PUBLIC_CASES / case))
    page.get_by_role("button", name="Import").click()
    page.wait_for_selector("text=Imported:")
    page.locator("#import-results a").first.click()
    page.get_by_role("button", name="Submit dossier").click()
    page.wait_for_selector("text=Submitted as snapshot 1")


def _dom_is_consistent(page: Any, consultation: Consultation) -> None:
    last = ConsultationEvent.objects.filter(consultation=consultation).order_by("-seq").first()
    assert page.locator("#board-seq").get_attribute("data-seq") == str(last.seq)
    duplicates = page.evaluate(
        "() => { const seen = {}; const dup = [];"
        " document.querySelectorAll('[id]').forEach(e => { if (seen[e.id]) dup.push(e.id);"
        " seen[e.id] = 1; }); return dup; }"
    )
    assert duplicates == []
    nodes = EvidenceNode.objects.filter(consultation=consultation).count()
    assert page.locator("li.node").count() == nodes


def test_clinician_watches_a_guideline_deliberation_and_opens_its_evidence(
    daphne_server: str,
    celery_worker_proc: Any,
    page: Any,
    clinician: Any,
    screenshot_dir: Path,
) -> None:
    load_seed()
    login(page, daphne_server, clinician.email)
    # given a public case imported through the browser and submitted
    _import_and_submit(page, daphne_server, "pub-hcc-03.json")
    # when the clinician starts a consultation with the guideline engine
    page.get_by_label("Engine").select_option("guideline")
    page.get_by_role("button", name="Start consultation").click()
    page.wait_for_url("**/consultations/*/")
    # then the role panels fill and the plan card appears, live
    page.wait_for_selector("#panel-treatment .state--done", timeout=60_000)
    page.wait_for_selector("#plan-card ol li", timeout=60_000)
    # and the run's end arrives: the plan and the final status are separate events, sent as
    # separate socket messages, so the status may still read "Running" when the plan card
    # shows; wait for the status, the run's last event, before checking anything against the
    # database (the worker commits before it broadcasts, so the rows are there by then)
    page.wait_for_selector("#board-status.board-status--completed", timeout=60_000)
    assert "Status: Completed" in page.locator("#board-status").inner_text()
    assert page.locator("#panel-hepatology").count() == 1  # a specialist chosen at triage
    assert page.locator("#gates .gate").count() > 0
    # (the README's picture: the top of the finished board, its plan, members and first round)
    page.screenshot(
        path=str(screenshot_dir / "board.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": 1280, "height": 4400},
    )
    consultation = Consultation.objects.latest("pk")
    _dom_is_consistent(page, consultation)
    # and reloading shows the same board, rendered from the saved events
    page.reload()
    _dom_is_consistent(page, consultation)
    # and an evidence node opens the knowledge unit version it cites
    # (the link names the guideline, not the knowledge-base id)
    link = page.locator("li.node--evidence a").first
    source = link.inner_text()
    assert not re.search(r"\b[a-z]+\.[a-z]+\.[a-z0-9-]+\b", source)
    # (as a reader would, by opening the collapsed nodes above it)
    link.evaluate(
        "a => { for (let d = a.closest('details'); d; d = d.parentElement.closest('details'))"
        " d.open = true; }"
    )
    # (the board has an h1 too: wait for the evidence page's address, not for any h1)
    link.click()
    page.wait_for_url("**/evidence/*/")
    page.wait_for_load_state()
    body = page.locator("body").inner_text()
    assert source in body
    assert "Grade" in body
    page.screenshot(path=str(screenshot_dir / "evidence-unit.png"), full_page=True)


def test_board_reconnects_after_the_server_restarts_and_shows_each_event_once(
    daphne: Any,
    celery_worker_proc: Any,
    page: Any,
    clinician: Any,
    llm_env: Any,
    screenshot_dir: Path,
) -> None:
    from tests.consult.llm_responder import clinical_responder

    load_seed()
    # given an LLM deliberation slow enough to interrupt (every call takes 0.3 s, and the
    # Coordinator's synthesis 3 s)
    answer = clinical_responder(delay_s=0.3)

    def respond(request: Any) -> Any:
        reply = answer(request)
        synthesis = (request.json_schema or {}).get("title") == "Synthesis"
        if synthesis or '"title": "Synthesis"' in request.system:
            return dataclasses.replace(reply, delay_s=3.0)
        return reply

    llm_env.switch.responder = respond
    login(page, daphne.url, clinician.email)
    _import_and_submit(page, daphne.url, "pub-lung-01.json")
    page.get_by_label("Engine").select_option("llm")
    page.get_by_role("button", name="Start consultation").click()
    page.wait_for_url("**/consultations/*/")
    page.wait_for_selector("#panel-diagnostic .state--done", timeout=60_000)
    consultation = Consultation.objects.latest("pk")
    assert consultation.status == "running"
    # the run's clock ticks in the page between the server's updates
    elapsed = "document.querySelector('#board-status .board-elapsed[data-ticking]')"
    shown = page.evaluate(f"() => {elapsed}.textContent")
    page.wait_for_function(f"t => {elapsed} && {elapsed}.textContent !== t", arg=shown)
    # when the web server goes away mid-run and comes back
    daphne.restart(down_s=1.0)
    # then the page reconnects by itself and the board completes
    page.wait_for_selector("#plan-card ol li", timeout=120_000)
    wait_until(
        lambda: Consultation.objects.get(pk=consultation.pk).status == "completed",
        timeout=30,
        what="the consultation to complete",
    )
    page.wait_for_function(
        "seq => document.getElementById('board-seq').dataset.seq === String(seq)",
        arg=ConsultationEvent.objects.filter(consultation=consultation).count(),
        timeout=30_000,
    )
    page.screenshot(path=str(screenshot_dir / "board-after-reconnect.png"), full_page=True)
    # with every event exactly once, and the clock stopped at the run's duration
    _dom_is_consistent(page, consultation)
    assert page.locator("#board-status .board-elapsed[data-ticking]").count() == 0
    assert re.fullmatch(r"\d+ min \d+ s", page.locator("#board-status .board-elapsed").inner_text())
