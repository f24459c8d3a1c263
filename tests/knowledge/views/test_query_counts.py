"""The curator's unit list: a fixed number of queries however many units it lists."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from knowledge.services import bundle_import
from tests.knowledge.kb_factory import bundle, unit

pytestmark = pytest.mark.django_db
UNIT_LIST_QUERIES = 6


@pytest.mark.parametrize("count", [1, 8])
def test_unit_list_queries_do_not_grow_with_its_rows(
    client: Any, curator: Any, django_assert_num_queries: Any, count: int
) -> None:
    units = [unit(f"test.unit-{i}", title=f"Unit {i}") for i in range(count)]
    bundle_import(actor=None, bundle=bundle(*units), publish=True, reason="query count")
    client.force_login(curator)
    with django_assert_num_queries(UNIT_LIST_QUERIES):
        page = client.get(reverse("knowledge:unit-list")).content.decode()
    assert page.count("test.unit-") >= count
