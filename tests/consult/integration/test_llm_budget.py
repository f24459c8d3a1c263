"""No silent degradation: an LLM consultation that runs past its token budget says so on its
status, its board, its plan JSON and its PDF cover; tokens are the server's reported usage."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.urls import reverse
from pypdf import PdfReader

from consult.models import AgentMessage, Consultation, ConsultationStatus
from consult.review import services as review_services
from consult.services.consultations import consultation_run, consultation_start
from tests.fixtures.consultations import submitted
from tests.fixtures.seed import load_seed
from tests.page_text import page_text

# A consultation in LLM mode and a PDF: minutes on a loaded two-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

NOTE = re.compile(r"(\d+) of (\d+) turns answered by the guideline engine: token budget reached")


def _llm_run(clinician: Any, team: Any, llm_env: Any, name: str) -> Consultation:
    from tests.consult.llm_responder import clinical_responder

    llm_env.switch.responder = clinical_responder()
    dossier = submitted(clinician, team, name)
    consultation = consultation_start(actor=clinician, dossier=dossier, engine="llm", enqueue=False)
    assert consultation_run(consultation_id=consultation.pk) == "completed"
    return Consultation.objects.get(pk=consultation.pk)


@pytest.mark.django_db(transaction=True)
def test_a_consultation_past_its_budget_says_so_everywhere_a_clinician_looks(
    clinician: Any, team: Any, llm_env: Any, monkeypatch: pytest.MonkeyPatch, client: Any
) -> None:
    load_seed()
    monkeypatch.setattr(review_services, "_enqueue_report", lambda report_id: None)
    # given a token budget that covers a few turns of the consultation, not all of them
    monkeypatch.setenv("LLM_TOKEN_BUDGET", "4000")
    consultation = _llm_run(clinician, team, llm_env, "pub-hcc-03.json")
    turns = AgentMessage.objects.filter(consultation=consultation).exclude(
        model_name="", fallback=""
    )
    fell_back = turns.exclude(fallback="")
    assert fell_back.exists()
    assert fell_back.count() < turns.count()
    assert all("token budget reached" in m.fallback for m in fell_back)
    expected = (
        f"{fell_back.count()} of {turns.count()} turns answered by the guideline engine: "
        "token budget reached"
    )
    # then the status is not a bare "completed"
    assert consultation.status == ConsultationStatus.COMPLETED
    assert consultation.status_text.startswith(f"completed — {expected}")
    # and, the budget spent, the board did not start another round it could not pay for
    assert "stopped before round 2: the token budget left (0 tokens)" in consultation.status_note

    # the board says it at the top, above the plan and the members
    client.force_login(clinician)
    board = page_text(
        client.get(reverse("consult:consultation-board", args=[consultation.pk])).content.decode()
    )
    assert f"Status: Completed — {expected}" in board
    assert board.index(expected) < board.index("Members")
    # and so does the plan page
    plan_page = page_text(
        client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    )
    assert plan_page.index(f"Completed — {expected}") < plan_page.index("Question")

    # the plan JSON carries the count, the reason and the tokens the server reported
    plan = json.loads(client.get(reverse("consult:plan-json", args=[consultation.pk])).content)
    llm = plan["llm"]
    assert llm["note"].startswith(expected)
    assert llm["budget"]["decision"] == "stopped"
    assert (llm["turns"], llm["guideline_turns"]) == (turns.count(), fell_back.count())
    assert llm["fallback_reasons"] == {"token budget reached": fell_back.count()}
    reported = sum(m.tokens_prompt for m in turns)
    assert llm["prompt_tokens"] == reported > 0
    assert sum(r["prompt_tokens"] for r in llm["by_round"]) == reported
    assert sum(r["prompt_tokens"] for r in llm["by_role"]) == reported

    # and the PDF's cover prints it
    report = review_services.report_request(actor=clinician, consultation=consultation, paper="a4")
    assert review_services.report_render(report_id=report.pk) == "done"
    report.refresh_from_db()
    pdf = PdfReader(io.BytesIO(review_services.report_path(report).read_bytes()))
    cover = " ".join(pdf.pages[0].extract_text().split())
    assert NOTE.search(cover), cover
    assert expected[1:] in cover  # capitalised on the cover


@pytest.mark.django_db(transaction=True)
def test_an_llm_consultation_within_its_budget_reports_its_tokens_per_role_and_round(
    clinician: Any, team: Any, llm_env: Any, client: Any
) -> None:
    load_seed()
    consultation = _llm_run(clinician, team, llm_env, "pub-lung-01.json")
    # then no turn fell back, and the status says only "completed"
    assert consultation.status_text == "completed"
    plan = consultation.plan.payload
    assert plan["llm"]["guideline_turns"] == 0
    assert plan["llm"]["note"] == ""
    # the usage the stub reported (characters of the request ÷ 4), call by call
    messages = AgentMessage.objects.filter(consultation=consultation).exclude(model_name="")
    assert plan["llm"]["turns"] == messages.count()
    assert plan["llm"]["prompt_tokens"] == sum(m.tokens_prompt for m in messages)
    assert consultation.tokens_prompt == plan["llm"]["prompt_tokens"]
    # and the board shows them per round and member
    client.force_login(clinician)
    board = page_text(
        client.get(reverse("consult:consultation-board", args=[consultation.pk])).content.decode()
    )
    assert f"{plan['llm']['prompt_tokens']} prompt" in board
    assert "turns answered by the guideline engine" not in board
    # and the radiation oncologist's check of Treatment's proposal, made by its domain's rules
    # without a call, says so; Safety's review, asked of the LLM, does not
    assert "Radiation oncology on Treatment (by the rules of its domain; not asked" in board
    assert "Safety on Treatment: " in board


@pytest.mark.django_db(transaction=True)
def test_a_round_the_budget_left_will_not_cover_is_known_before_it_starts(
    clinician: Any, team: Any, llm_env: Any, monkeypatch: pytest.MonkeyPatch, client: Any
) -> None:
    load_seed()
    # given a budget that pays for the first round of a case that needs a second (about 19 k
    # tokens with the replies: the test server's Treatment keeps an item Safety says must go),
    # not for both
    monkeypatch.setenv("LLM_TOKEN_BUDGET", "28000")
    consultation = _llm_run(clinician, team, llm_env, "tests/cases/safety-11.json")
    # then no turn ran out of budget half-way: the LLM answered every turn it was asked
    turns = AgentMessage.objects.filter(consultation=consultation).exclude(model_name="")
    assert turns.exists()
    assert not turns.exclude(fallback="").exists()
    # and the board ended before round 2, saying why with the estimate and what was left
    note = re.search(
        r"stopped before round 2: the token budget left \((\d+) tokens\) would not cover it "
        r"\(about (\d+)\)",
        consultation.status_note,
    )
    assert note, consultation.status_note
    left, estimate = int(note.group(1)), int(note.group(2))
    assert 0 < left < estimate
    assert consultation.plan.payload["llm"]["budget"]["decision"] == "stopped"
    # which the clinician reads at the top of the board
    client.force_login(clinician)
    board = page_text(
        client.get(reverse("consult:consultation-board", args=[consultation.pk])).content.decode()
    )
    assert board.index("stopped before round 2") < board.index("Members")
