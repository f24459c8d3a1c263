"""The curators' coverage map page: the published knowledge base, per cancer."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from clinical.rules import SourceSpec
from knowledge.services import source_save, unit_save_draft, version_publish, version_submit
from tests.knowledge.kb_factory import SOURCE, spec

pytestmark = pytest.mark.django_db


def test_coverage_page_shows_curators_what_has_a_pathway_and_what_is_outside(
    client: Any, curator: Any, admin_user: Any
) -> None:
    # given one published HCC therapy option
    source_save(actor=curator, spec=SourceSpec.model_validate(SOURCE))
    draft = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    version_publish(actor=admin_user, version=version_submit(actor=curator, version=draft))
    # when a curator opens the coverage map
    client.force_login(curator)
    response = client.get(reverse("knowledge:coverage"))
    # then the option is listed under the common histology, and the situations without a
    # pathway are listed as outside it (where a plan abstains)
    assert response.status_code == 200
    page = response.content.decode()
    section = page.split('id="coverage-hcc"')[1].split('id="coverage-lung_adenocarcinoma"')[0]
    assert "hepatocellular carcinoma" in section
    assert "hcc.resection" in section
    outside = section.split("Outside the pathways")[1]
    assert "fibrolamellar carcinoma" in outside
    assert "metastatic spinal cord compression" in outside


def test_coverage_page_is_for_curators_only(client: Any, clinician: Any) -> None:
    client.force_login(clinician)
    assert client.get(reverse("knowledge:coverage")).status_code == 403
