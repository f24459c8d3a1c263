"""On a 390 px phone no page a clinician or an administrator uses scrolls sideways: the plan
page, the board, the dossier form and its summary (with a prior-therapy table and the
derived facts), and the administration pages. Long text wraps everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.browser import login
from tests.fixtures.consultations import completed, submitted

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}

# The page's layout width, and the elements that reach past the screen's right edge (the
# innermost ones: what to fix), when there are any.
_OVERFLOW = """(limit) => {
  const width = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
  const wide = [...document.querySelectorAll('body *')].filter((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > limit + 1 && !el.closest('details:not([open]) > :not(summary)');
  });
  const innermost = wide.filter((el) => !wide.some((o) => o !== el && el.contains(o)));
  return {width, offenders: innermost.slice(0, 5).map((el) =>
    `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${[...el.classList].join('.')}` +
    ` (${Math.round(el.getBoundingClientRect().right)} px)`)};
}"""


def _assert_fits(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("domcontentloaded")
    measured = page.evaluate(_OVERFLOW, PHONE["width"])
    assert measured["width"] <= PHONE["width"], (
        f"{url} lays out {measured['width']} px wide: {measured['offenders']}"
    )


def test_no_clinical_page_scrolls_sideways_on_a_phone(
    daphne_server: str, browser: Any, clinician: Any, team: Any, finished: Any
) -> None:
    # given a finished board (pub-hcc-03), the plan of a relapsed lymphoma with its prior
    # therapy (pub-lymph-03), and a draft dossier of a breast case
    relapsed = completed(clinician, team, "pub-lymph-03.json")
    draft = submitted(clinician, team, "pub-breast-02.json")
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    try:
        login(page, daphne_server, clinician.email)
        for url in (
            f"/consultations/{finished.pk}/",
            f"/consultations/{finished.pk}/plan/",
            f"/consultations/{relapsed.pk}/plan/",
            f"/dossiers/{relapsed.dossier_id}/",
            f"/dossiers/{finished.dossier_id}/",
            f"/dossiers/{draft.pk}/",
            f"/dossiers/{relapsed.dossier_id}/edit/diagnosis/",
            f"/dossiers/{relapsed.dossier_id}/edit/patient/",
            f"/dossiers/{draft.pk}/edit/biomarkers/",
            "/dossiers/",
            "/dossiers/new/",
        ):
            # then nothing is wider than the screen
            _assert_fits(page, daphne_server + url)
    finally:
        context.close()


def test_no_administration_page_scrolls_sideways_on_a_phone(
    daphne_server: str, browser: Any, admin_user: Any
) -> None:
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    try:
        login(page, daphne_server, admin_user.email)
        for url in (
            "/admin/",
            "/admin/accounts/user/",
            f"/admin/accounts/user/{admin_user.pk}/change/",
            "/accounts/invite/",
            "/rating/studies/",
            "/memory/",
        ):
            _assert_fits(page, daphne_server + url)
    finally:
        context.close()
