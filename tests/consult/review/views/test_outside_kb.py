"""A plan that abstains because the case is outside the knowledge base says so first on the
plan page and in the PDF report, in clinical words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from consult.review import services
from consult.review.report import report_html
from tests.fixtures.consultations import completed, system_plan
from tests.page_text import internal_names, page_text
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db

NOTE = "New back pain and leg weakness for two days; MRI shows spinal cord compression at T9."


def _abstaining(clinician: Any, team: Any) -> Any:
    case = json.loads((PUBLIC_CASES / "pub-lung-02.json").read_text())
    case.pop("expected", None)
    case["notes"] = NOTE
    plan = system_plan(case)
    assert plan["recommendation"]["intent"] == "abstain"
    return completed(clinician, team, "pub-lung-02.json", plan=plan)


def test_outside_kb_plan_page_says_so_before_the_pathway(
    client: Any, clinician: Any, team: Any
) -> None:
    # given a completed consultation whose plan abstains on a cord compression
    consultation = _abstaining(clinician, team)
    client.force_login(clinician)
    # when the clinician opens the plan
    html = client.get(reverse("consult:plan-detail", args=[consultation.pk])).content.decode()
    main = page_text(html[html.index("<main") : html.index("</main>")])
    # then "Outside the knowledge base" comes first, with the phrase that was recognised,
    # the immediate steps and the pathway it does not recommend - in clinical words
    assert main.index("Outside the knowledge base: emergency") < main.index("Question")
    assert "spinal cord compression at T9" in main
    assert "Immediate steps, safe whatever the final plan" in main
    assert "Dexamethasone" in main
    assert "Not recommended here" in main
    assert "until the data listed below is available" not in main
    assert internal_names(main) == []


def test_outside_kb_report_says_so_first(clinician: Any, team: Any) -> None:
    consultation = _abstaining(clinician, team)
    report = services.report_request(actor=clinician, consultation=consultation, paper="a4")
    html, plan = report_html(report=report)
    text = page_text(html)
    assert plan["recommendation"]["abstention"]["emergency"] is True
    assert text.index("Outside the knowledge base") < text.index("Recommended pathway")
    assert "spinal cord compression at T9" in text
