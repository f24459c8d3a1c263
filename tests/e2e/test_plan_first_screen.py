"""A plan read in one minute: on a 1366x900 screen the answer, the pathway and the review's
next step are in the first screen for every public case, without scrolling. The page's full
height and how much of the pathway the first screen holds are measured and printed (they are
figures to watch, not limits to assert)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.browser import login
from tests.fixtures.consultations import completed
from tests.paths import public_case_files

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDTH, HEIGHT = 1366, 900

# Where each part of the page sits, measured in the browser (page coordinates at scroll 0).
_MEASURE = """() => {
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
                        return {top: r.top, bottom: r.bottom, width: r.width}; };
  const steps = [...document.querySelectorAll('#pathway li.item')].map(box);
  const actions = [...document.querySelectorAll('#review-actions a, #review-actions button')]
      .map((el) => ({text: el.innerText.trim(), ...box(el)}));
  return {
    height: document.documentElement.scrollHeight,
    width: document.documentElement.scrollWidth,
    answer: box(document.querySelector('#answer')),
    sentences: document.querySelectorAll('#answer .answer__sentence').length,
    pathway: box(document.querySelector('#pathway h2')),
    steps: steps,
    actions: actions,
    sections: Object.fromEntries([...document.querySelectorAll('#plan > [id]')]
        .map((el) => [el.id, Math.round(el.getBoundingClientRect().height)])),
  };
}"""


def test_the_answer_pathway_and_review_actions_are_in_the_first_screen(
    daphne_server: str, browser: Any, clinician: Any, team: Any, screenshot_dir: Path
) -> None:
    # given every public case's plan, as the guideline engine makes it
    consultations = {
        path.stem: completed(clinician, team, path.name, copy_of=f"fs-{path.stem}")
        for path in public_case_files()
    }
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    figures = {}
    try:
        login(page, daphne_server, clinician.email)
        for name, consultation in consultations.items():
            # when a clinician opens the plan on a 1366x900 screen
            page.goto(f"{daphne_server}/consultations/{consultation.pk}/plan/")
            page.wait_for_selector("#answer")
            m = page.evaluate(_MEASURE)
            # then the answer (at most three sentences) is wholly in the first screen
            assert 1 <= m["sentences"] <= 3, name
            assert m["answer"]["bottom"] <= HEIGHT, f"{name}: the answer ends at {m['answer']}"
            # and the pathway: its heading and at least its first step, whole
            assert m["steps"], f"{name}: no pathway step"
            assert m["steps"][0]["bottom"] <= HEIGHT, f"{name}: first step at {m['steps'][0]}"
            # and the review's next step: every action button, whole
            assert m["actions"], f"{name}: no review action"
            for action in m["actions"]:
                assert action["bottom"] <= HEIGHT, f"{name}: {action['text']} at {action}"
            # and nothing is wider than the screen
            assert m["width"] <= WIDTH, f"{name}: the page is {m['width']} px wide"
            whole = sum(1 for s in m["steps"] if s["bottom"] <= HEIGHT)
            figures[name] = {
                "page_height_px": m["height"],
                "answer_bottom_px": round(m["answer"]["bottom"]),
                "pathway_steps": len(m["steps"]),
                "steps_in_first_screen": whole,
                "actions": [a["text"] for a in m["actions"]],
                "section_heights_px": m["sections"],
            }
            if name == "pub-hcc-03":
                page.screenshot(path=str(screenshot_dir / "plan-first-screen.png"))
    finally:
        context.close()
    # the figures, printed for the README and kept beside the screenshots
    report = json.dumps(figures, indent=1)
    sys.stdout.write(f"\nplan page at {WIDTH}x{HEIGHT}:\n{report}\n")
    (screenshot_dir / "plan-first-screen.json").write_text(report + "\n")
