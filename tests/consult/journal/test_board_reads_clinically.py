"""The board as an oncologist reads it, from a recorded guideline run on pub-hcc-03 (BCLC C,
large untreated varices): the plan first, clinical words only, no safety rule or data request
about drugs nobody proposed, the gates failed-first with their results in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from consult.journal.board import Board
from consult.journal.render import render_events
from tests.consult.journal.golden_board import recorded_consultation, streams
from tests.page_text import internal_names, page_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def board_text(client: Any, clinician: Any, team: Any) -> str:
    consultation = recorded_consultation(clinician, team, streams()["hcc03"])
    client.force_login(clinician)
    html = client.get(reverse("consult:consultation-board", args=[consultation.pk])).content
    page = html.decode()
    return page_text(page[page.index("<main") : page.index("</main>")])


def _panel(text: str, name: str, following: str) -> str:
    start = text.index(f"{name} ✓ DONE") if f"{name} ✓ DONE" in text else text.index(name)
    return text[start : text.index(following, start)]


def test_the_board_shows_no_internal_names(board_text: str) -> None:
    assert internal_names(board_text) == []


def test_the_plan_comes_before_the_deliberation(board_text: str) -> None:
    assert board_text.index("MDT plan") < board_text.index("Members") < board_text.index("Rounds")


def test_safety_lists_only_rules_about_proposed_drugs(board_text: str) -> None:
    members = board_text[board_text.index("Members") : board_text.index("Rounds")]
    safety = members[members.index("Safety") : members.index("Monitoring")]
    # the varices rule concerns bevacizumab, which Treatment proposed: shown
    assert "Untreated large varices before atezolizumab-bevacizumab" in safety
    # fluoropyrimidine, anthracycline and carboplatin rules concern drugs nobody proposed
    for noise in ("DPD deficiency", "anthracycline", "Carboplatin dosed by the Calvert"):
        assert noise not in safety
    assert re.search(r"\d+ further rules concern drugs not proposed", safety)
    # and with the plan known, data only a drug outside the plan would need is not asked for
    assert "LVEF" not in safety
    assert "Heart rate" not in safety
    assert "only options that are not in the plan" in safety


def test_gates_read_failed_first_with_their_result(board_text: str) -> None:
    gates = board_text[board_text.index("Safety gates") : board_text.index("Conflicts and how")]
    results = re.findall(r"[✗?✓] (?:Failed|Not checked|Passed)", gates)
    assert results[0] == "✗ Failed"
    order = {"✗ Failed": 0, "? Not checked": 1, "✓ Passed": 2}
    assert [order[r] for r in results] == sorted(order[r] for r in results)
    # the fields a gate could not be checked without, by their labels
    assert "Needs: Autoimmune disease activity" in gates


def test_live_fragments_end_where_the_page_starts(client: Any, clinician: Any, team: Any) -> None:
    """A watcher's last safety panel (folded event by event) is the one a reload shows."""
    events = streams()["hcc03"]
    board = Board(consultation_id=1)
    last = ""
    for _, html in render_events(board, events):
        if 'id="panel-safety"' in html:
            last = html[html.index('<article id="panel-safety"') :]
            last = last[: last.index("</article>") + len("</article>")]
    assert "further rules concern drugs not proposed" in last
    assert "only options that are not in the plan" in last
