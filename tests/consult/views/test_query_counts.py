"""Pages whose database work must not grow with what they list: a fixed number of queries
whether a board has seven events or hundreds, a list one dossier or many."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from consult.services.dossiers import case_import
from tests.consult.journal.golden_board import recorded_consultation, streams
from tests.fixtures.htmx import HTMX
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db
# The session, the user and their roles, the consultation with its dossier, the events and
# who may cancel; the page also writes the audit record of the viewing (the poll does not).
BOARD_QUERIES = 11
BOARD_POLL_QUERIES = 6
# The dossier list: session, user, roles, the page of dossiers, and the worklist's latest
# consultation and review of those dossiers in one query; then the audit record of what it
# showed (savepoint, chain lock, previous hash, insert, release: five, however many rows).
DOSSIER_LIST_QUERIES = 10


@pytest.mark.parametrize("name", ["llm-cancelled", "hcc03"])
def test_board_page_queries_do_not_grow_with_its_events(
    client: Any, clinician: Any, team: Any, django_assert_num_queries: Any, name: str
) -> None:
    consultation = recorded_consultation(clinician, team, streams()[name])
    client.force_login(clinician)
    url = reverse("consult:consultation-board", args=[consultation.pk])
    with django_assert_num_queries(BOARD_QUERIES):
        assert client.get(url).status_code == 200
    with django_assert_num_queries(BOARD_POLL_QUERIES):
        assert client.get(url, headers=HTMX).status_code == 200


@pytest.mark.parametrize("count", [1, 6])
def test_dossier_list_queries_do_not_grow_with_its_rows(
    client: Any, clinician: Any, team: Any, django_assert_num_queries: Any, count: int
) -> None:
    for path in sorted(PUBLIC_CASES.glob("*.json"))[:count]:
        case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)
    client.force_login(clinician)
    with django_assert_num_queries(DOSSIER_LIST_QUERIES):
        page = client.get(reverse("consult:dossier-list")).content.decode()
    assert page.count("/dossiers/") >= count
