"""Two curators change a guideline unit through the browser: edit, review, diff, publish, and
the real worker's embedding makes the new version retrievable with its provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clinical.rules import SourceSpec
from knowledge.models import UnitEmbedding, UnitVersion, VersionStatus
from knowledge.services import bundle_import, source_save, version_publish, versions_embed
from tests.fixtures.browser import login
from tests.fixtures.personas import make_user
from tests.fixtures.waiting import wait_until
from tests.knowledge.kb_factory import SOURCE, bundle, unit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

EMBEDDING_WAIT_S = 60


def _logout(page: Any) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/**")


def _wait_for_embedding(version: UnitVersion) -> None:
    wait_until(
        lambda: UnitEmbedding.objects.filter(version=version).exists(),
        timeout=EMBEDDING_WAIT_S,
        interval=0.5,
        what=f"the worker to embed {version}",
    )


def test_two_curators_edit_review_publish_and_retrieve_a_unit(
    daphne_server: str,
    celery_worker_proc: Any,
    page: Any,
    curator: Any,
    screenshot_dir: Path,
) -> None:
    reviewer = make_user("curator", "reviewer@hospital.test", [])
    # given a published unit, imported by the reviewer and published by the curator
    bundle_import(actor=reviewer, bundle=bundle(unit("hcc.resection")))
    first = UnitVersion.objects.get(unit__key="hcc.resection", number=1)
    version_publish(actor=curator, version=first)
    versions_embed(version_ids=[first.pk])

    # when the curator finds the unit by searching the list
    login(page, daphne_server, curator.email)
    page.get_by_role("link", name="Knowledge base").click()
    page.wait_for_selector("h1:has-text('Knowledge units')")
    page.get_by_label("Search").fill("portal hypertension")  # words of its text
    page.wait_for_function("() => location.search.includes('portal')")
    row = page.locator("#unit-hcc\\.resection")
    row.wait_for()
    assert "v1" in row.inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-unit-list.png"), full_page=True)
    row.get_by_role("link", name="hcc.resection").click()
    page.wait_for_selector("h1:has-text('hcc.resection')")
    assert "derived.bclc in 0, A" in page.content()
    page.screenshot(path=str(screenshot_dir / "kb-unit-detail.png"), full_page=True)

    # and edits it: a broken condition is explained beside the field, nothing is saved
    page.get_by_role("link", name="Edit (new draft)").click()
    context = page.get_by_label("Applicability (JSON)")
    context.fill('{"all": [{"fact": "derived.bclc", "op": "in", "value": "A"}]}')
    page.get_by_role("button", name="Save draft").click()
    page.locator("#field-context .errorlist").wait_for()
    assert "needs a non-empty list" in page.locator("#field-context").inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-edit-error.png"), full_page=True)
    assert UnitVersion.objects.filter(unit__key="hcc.resection").count() == 1
    context.fill('{"all": [{"fact": "derived.bclc", "op": "in", "value": ["0", "A"]}]}')
    page.get_by_label("Anchor").fill("Section 6.2, table 4")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_selector("text=Saved as draft v2")
    # a therapy step offers no hot-fix path (that is for safety units): four eyes only
    assert page.locator("#version-2 summary").count() == 0
    page.screenshot(path=str(screenshot_dir / "kb-unit-draft.png"), full_page=True)

    # and sends the draft to review
    page.locator("#version-2").get_by_role("button", name="Send to review").click()
    page.wait_for_selector("text=v2 sent to review")
    draft = UnitVersion.objects.get(unit__key="hcc.resection", number=2)
    assert draft.status == VersionStatus.IN_REVIEW
    page.goto(daphne_server + "/kb/review/")
    assert "yours – needs another curator" in page.locator("#review-hcc\\.resection-2").inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-review-queue-author.png"), full_page=True)
    _logout(page)

    # then the second curator sees it in the review queue and opens the side-by-side diff
    login(page, daphne_server, reviewer.email)
    page.get_by_role("link", name="Review queue").click()
    queued = page.locator("#review-hcc\\.resection-2")
    assert "yours" not in queued.inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-review-queue.png"), full_page=True)
    queued.get_by_role("link", name="Diff v1 → v2").click()
    page.wait_for_selector("h1:has-text('compare versions')")
    removed = page.locator("td.diff-line.diff-removed")
    added = page.locator("td.diff-line.diff-added")
    assert removed.count() == 1
    assert added.count() == 1
    assert "Section 6.1" in removed.inner_text()
    assert "Section 6.2, table 4" in added.inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-diff.png"), full_page=True)

    # when they publish it
    page.get_by_role("button", name="Publish v2").click()
    page.wait_for_selector("text=hcc.resection v2 published")
    draft.refresh_from_db()
    first.refresh_from_db()
    assert (draft.status, draft.reviewed_by, first.status) == ("published", reviewer, "retired")
    # the real worker embeds the new version on commit
    _wait_for_embedding(draft)

    # then retrieval diagnostics find the new version with its provenance
    page.get_by_role("link", name="Retrieval diagnostics").click()
    page.get_by_label("Query").fill("resection of a single liver tumour")
    page.get_by_label("Cancer type").select_option("hcc")
    page.get_by_role("button", name="Search").click()
    hit = page.locator("#hit-hcc\\.resection")
    hit.wait_for(timeout=30_000)
    text = hit.inner_text()
    assert "Section 6.2, table 4" in text
    assert f"v2:{draft.content_hash[:12]}" in text
    assert "Test Society" in text
    assert page.locator("#arbitration").is_visible()
    page.screenshot(path=str(screenshot_dir / "kb-diagnostics.png"), full_page=True)


GUIDELINE_MD = b"""# Test guideline on hepatocellular carcinoma (HCC)

## 6 Treatment

### 6.1 Resection

Liver resection is recommended for a single tumour with preserved liver function (LoE 2, strong).

### 6.4 Systemic therapy

Atezolizumab plus bevacizumab should be offered first line in BCLC C. [I, A]
"""


def test_curator_ingests_a_document_and_drafts_a_unit_from_a_statement(
    daphne_server: str, page: Any, curator: Any, screenshot_dir: Path
) -> None:
    source_save(actor=curator, spec=SourceSpec.model_validate(SOURCE))
    login(page, daphne_server, curator.email)
    page.get_by_role("link", name="Ingest a document").click()
    # when the curator uploads a Markdown guideline
    page.get_by_label("Source").select_option(SOURCE["key"])
    page.get_by_label("Document").set_input_files(
        files=[{"name": "hcc.md", "mimeType": "text/markdown", "buffer": GUIDELINE_MD}]
    )
    page.get_by_role("button", name="Segment").click()
    # then each statement is listed with its anchor, suggested kind and grade
    page.wait_for_selector("h2:has-text('2 candidate statements')")
    second = page.locator("#candidate-2")
    assert "§ 6.4 Systemic therapy > ¶1" in second.inner_text()
    assert "[I, A]" in second.inner_text()
    page.screenshot(path=str(screenshot_dir / "kb-ingest.png"), full_page=True)
    # when they draft a unit from it and fill in what the segmenter could not know
    second.get_by_role("button", name="Draft a unit").click()
    page.wait_for_selector("h2:has-text('From the document')")
    assert page.get_by_label("Anchor").input_value() == "§ 6.4 Systemic therapy > ¶1"
    assert page.get_by_label("Native grade").input_value() == "[I, A]"
    page.get_by_label("Key").fill("hcc.atezo-bev")
    page.get_by_label("Title").fill("Atezolizumab plus bevacizumab first line")
    page.get_by_label("Paraphrased text").fill(
        "First-line atezolizumab with bevacizumab for advanced HCC (BCLC C)."
    )
    page.get_by_label("Grading system").fill("ESMO")
    page.get_by_label("Action (JSON)").fill(
        '{"type": "therapy", "modality": "systemic", "description": "Atezolizumab + '
        'bevacizumab", "agents": ["atezolizumab", "bevacizumab"], "intent": "palliative"}'
    )
    page.screenshot(path=str(screenshot_dir / "kb-ingest-draft.png"), full_page=True)
    page.get_by_role("button", name="Save draft").click()
    # then a draft exists, citing the statement's place in the source
    page.wait_for_selector("text=Saved as draft v1")
    version = UnitVersion.objects.get(unit__key="hcc.atezo-bev")
    assert (version.status, version.anchor, version.grade_native) == (
        "draft",
        "§ 6.4 Systemic therapy > ¶1",
        "[I, A]",
    )
    # the other curator pages, for the record
    page.get_by_role("link", name="Sources").click()
    page.wait_for_selector("h1:has-text('Guideline sources')")
    page.screenshot(path=str(screenshot_dir / "kb-sources.png"), full_page=True)
    page.get_by_role("link", name="Import / export").click()
    page.wait_for_selector("h1:has-text('Import and export')")
    page.screenshot(path=str(screenshot_dir / "kb-bundle.png"), full_page=True)
