"""Curator pages as each persona sees them: curator, second curator, admin, clinician, rater."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from clinical.rules import SourceSpec
from consult.services.dossiers import case_import
from knowledge.models import (
    ApprovalRequest,
    GuidelineSource,
    KnowledgeUnit,
    UnitVersion,
    VersionStatus,
)
from knowledge.services import (
    FOUR_EYES,
    HOTFIX_NOT_SAFETY,
    HOTFIX_REASON,
    bundle_parse,
    source_save,
    unit_save_draft,
    version_publish,
    version_submit,
    versions_embed,
)
from mdtboard.audit.models import AuditEvent
from tests.fixtures.htmx import HISTORY_RESTORE, HTMX
from tests.knowledge.kb_factory import SAFETY, SOURCE, merge_bomb, spec, unit
from tests.page_text import page_text
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.django_db


@pytest.fixture
def sourced(curator: Any) -> None:
    source_save(actor=curator, spec=SourceSpec.model_validate(SOURCE))


@pytest.fixture
def draft(curator: Any, sourced: None) -> UnitVersion:
    return unit_save_draft(actor=curator, spec=spec("hcc.resection"))


def _in_review(curator: Any, key: str, **overrides: Any) -> UnitVersion:
    version = unit_save_draft(actor=curator, spec=spec(key, **overrides))
    return version_submit(actor=curator, version=version)


def _form_data(key: str = "hcc.resection", **overrides: Any) -> dict[str, str]:
    content = unit(key)
    data = {
        "key": key,
        "kind": content["kind"],
        "cancer_type": content["cancer_type"],
        "source": content["source"],
        "title": content["title"],
        "text": content["text"],
        "anchor": content["anchor"],
        "grade_system": content["grade"]["system"],
        "grade_native": content["grade"]["native"],
        "grade_ordinal": str(content["grade"]["ordinal"]),
        "context": json.dumps(content["context"], indent=2),
        "action": json.dumps(content["action"], indent=2),
    }
    data.update(overrides)
    return data


def _field(html: str, name: str) -> str:
    """The HTML of one field's wrapper: its label, input, help text and errors."""
    start = html.index(f'id="field-{name}"')
    following = html.find('id="field-', start + 1)
    return html[start : following if following != -1 else len(html)]


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _curator_urls() -> list[tuple[str, str]]:
    unit_kw = {"key": "hcc.resection"}
    version_kw = {"key": "hcc.resection", "number": 1}
    return [
        ("get", reverse("knowledge:unit-list")),
        ("get", reverse("knowledge:unit-create")),
        ("post", reverse("knowledge:unit-create")),
        ("get", reverse("knowledge:unit-detail", kwargs=unit_kw)),
        ("get", reverse("knowledge:unit-edit", kwargs=unit_kw)),
        ("post", reverse("knowledge:unit-edit", kwargs=unit_kw)),
        ("get", reverse("knowledge:unit-diff", kwargs=unit_kw)),
        ("post", reverse("knowledge:version-submit", kwargs=version_kw)),
        ("post", reverse("knowledge:version-publish", kwargs=version_kw)),
        ("post", reverse("knowledge:version-hotfix", kwargs=version_kw)),
        ("post", reverse("knowledge:version-retire", kwargs=version_kw)),
        ("get", reverse("knowledge:review-queue")),
        ("get", reverse("knowledge:source-list")),
        ("get", reverse("knowledge:source-create")),
        ("post", reverse("knowledge:source-create")),
        ("get", reverse("knowledge:source-edit", kwargs={"key": SOURCE["key"]})),
        ("post", reverse("knowledge:source-edit", kwargs={"key": SOURCE["key"]})),
        ("get", reverse("knowledge:bundle")),
        ("post", reverse("knowledge:bundle")),
        ("get", reverse("knowledge:bundle-export-json")),
        ("get", reverse("knowledge:bundle-export-yaml")),
        ("get", reverse("knowledge:diagnostics")),
        ("get", reverse("knowledge:ingest")),
        ("post", reverse("knowledge:ingest")),
        ("post", reverse("knowledge:ingest-draft")),
    ]


# --- who may open the pages ---------------------------------------------------------------


@pytest.mark.parametrize("persona", ["clinician", "rater"])
def test_curator_pages_refuse_clinicians_and_raters(
    client: Any, draft: UnitVersion, persona: str, request: Any
) -> None:
    client.force_login(request.getfixturevalue(persona))
    for method, url in _curator_urls():
        data = {"reason": "x", "hotfix_reason": "x"} if method == "post" else None
        assert getattr(client, method)(url, data).status_code == 403, url
    # the POSTs changed nothing
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT
    assert UnitVersion.objects.count() == 1


def test_curator_pages_send_anonymous_visitors_to_login(client: Any, draft: UnitVersion) -> None:
    for method, url in _curator_urls():
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("account_login")), url


@pytest.mark.parametrize("persona", ["curator", "admin_user", "group_admin"])
def test_curator_pages_open_for_curators_and_admins(
    client: Any, draft: UnitVersion, persona: str, request: Any
) -> None:
    client.force_login(request.getfixturevalue(persona))
    for method, url in _curator_urls():
        if method == "get":
            assert getattr(client, method)(url).status_code == 200, url


def test_nav_link_only_for_curators_and_admins(client: Any, curator: Any, clinician: Any) -> None:
    link = f'href="{reverse("knowledge:unit-list")}"'
    client.force_login(curator)
    assert link in client.get(reverse("core:home")).content.decode()
    client.force_login(clinician)
    assert link not in client.get(reverse("core:home")).content.decode()


# --- the review workflow ------------------------------------------------------------------


def test_curator_workflow_from_draft_to_retrieval_to_retirement(
    client: Any, curator: Any, second_curator: Any, sourced: None
) -> None:
    # given a curator who writes a new unit through the form
    client.force_login(curator)
    response = client.post(reverse("knowledge:unit-create"), _form_data())
    assert response.status_code == 302
    version = UnitVersion.objects.get(unit__key="hcc.resection")
    assert (version.number, version.status, version.author) == (1, "draft", curator)
    detail_url = reverse("knowledge:unit-detail", args=["hcc.resection"])
    page = client.get(detail_url).content.decode()
    assert "Send to review" in page
    assert "derived.bclc in 0, A" in page  # applicability, readable
    # when they send it to review
    client.post(reverse("knowledge:version-submit", args=["hcc.resection", 1]))
    version.refresh_from_db()
    assert version.status == VersionStatus.IN_REVIEW
    # then they cannot publish it themselves: the service's reason is shown, nothing changes
    response = client.post(
        reverse("knowledge:version-publish", args=["hcc.resection", 1]), follow=True
    )
    assert FOUR_EYES in _messages(response)
    version.refresh_from_db()
    assert version.status == VersionStatus.IN_REVIEW
    # and the review queue marks it as theirs
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    assert "yours – needs another curator" in queue
    # when a second curator opens the queue and publishes it
    client.force_login(second_curator)
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    assert "hcc.resection" in queue
    assert "yours – needs another curator" not in queue
    response = client.post(
        reverse("knowledge:version-publish", args=["hcc.resection", 1]),
        {"next": reverse("knowledge:review-queue")},
    )
    assert response["Location"] == reverse("knowledge:review-queue")
    version.refresh_from_db()
    assert (version.status, version.reviewed_by, version.hotfix) == (
        "published",
        second_curator,
        False,
    )
    # then, once embedded (the worker's job in production), retrieval finds it with provenance
    assert versions_embed(version_ids=[version.pk]) == 1
    response = client.get(
        reverse("knowledge:diagnostics"),
        {"q": "liver resection for a single tumour", "cancer_type": "hcc", "mode": "hybrid"},
    )
    hits = response.context["ranked"]
    provenance = ("hcc.resection", "Section 6.1", f"v1:{version.content_hash[:12]}")
    assert hits[0][1].provenance == provenance
    row = re.search(r'<tr id="hit-hcc.resection">.*?</tr>', response.content.decode(), re.S)
    assert row is not None
    assert "Section 6.1" in row.group(0)
    assert f"v1:{version.content_hash[:12]}" in row.group(0)
    assert "Test Society" in row.group(0)
    # when it is retired without a reason, the page refuses
    retire = reverse("knowledge:version-retire", args=["hcc.resection", 1])
    response = client.post(retire, {"reason": "  "}, follow=True)
    assert any("needs a reason" in m for m in _messages(response))
    version.refresh_from_db()
    assert version.status == VersionStatus.PUBLISHED
    # and with a reason its retirement is asked for: still published, waiting for four eyes
    response = client.post(retire, {"reason": "Superseded by the 2026 update"}, follow=True)
    assert any("stays published until a second curator" in m for m in _messages(response))
    version.refresh_from_db()
    assert version.status == VersionStatus.PUBLISHED
    request = ApprovalRequest.objects.get(kind="retire", version=version)
    assert "Superseded by the 2026 update" in response.content.decode()
    # when the first curator approves it, it is retired and no longer retrieved
    client.force_login(curator)
    client.post(reverse("knowledge:approval-decide", args=[request.pk, "approve"]))
    version.refresh_from_db()
    assert version.status == VersionStatus.RETIRED
    event = AuditEvent.objects.get(action="kb.version.retire")
    assert event.payload["reason"] == "Superseded by the 2026 update"
    assert (event.actor_id, event.payload["requested_by"]) == (curator.pk, second_curator.pk)
    response = client.get(
        reverse("knowledge:diagnostics"), {"q": "liver resection", "mode": "keyword"}
    )
    assert response.context["ranked"] == []


def test_diagnostics_offers_a_dossier_only_to_clinical_roles(
    client: Any, curator: Any, admin_user: Any, clinician: Any, team: Any, sourced: None
) -> None:
    # given a published unit and a dossier of the clinician's team
    version = version_publish(actor=admin_user, version=_in_review(curator, "hcc.resection"))
    versions_embed(version_ids=[version.pk])
    path = PUBLIC_CASES / "pub-hcc-01.json"
    dossier = case_import(
        actor=clinician, team=team, raw=path.read_bytes(), filename=path.name
    ).dossier
    assert dossier is not None
    url = reverse("knowledge:diagnostics")
    query = {"q": "liver resection", "mode": "keyword", "dossier": str(dossier.pk)}
    # a curator is not offered a dossier, and one given in the address is ignored
    client.force_login(curator)
    response = client.get(url, query)
    assert 'name="dossier"' not in response.content.decode()
    assert response.context["dossier"] is None
    assert "no case" in response.content.decode()
    # an administrator may check applicability against it
    client.force_login(admin_user)
    response = client.get(url, query)
    page = response.content.decode()
    assert 'name="dossier"' in page
    assert response.context["dossier"].case_id == dossier.case_id
    assert f"applicability checked against {dossier.case_id}" in page
    hit = response.context["ranked"][0][1]
    assert hit.unit_key == "hcc.resection"
    assert hit.applies in (True, None)
    # htmx asks for the panel only
    fragment = client.get(url, query, headers=HTMX).content.decode()
    assert fragment.lstrip().startswith('<div id="diagnostics-panel">')


@pytest.mark.parametrize(
    ("page", "query", "fragment_start"),
    [
        ("knowledge:unit-list", {"q": "hcc"}, '<table id="unit-table"'),
        (
            "knowledge:diagnostics",
            {"q": "liver", "mode": "keyword"},
            '<div id="diagnostics-panel">',
        ),
    ],
)
def test_kb_back_button_gets_the_whole_page(
    client: Any,
    curator: Any,
    draft: UnitVersion,
    page: str,
    query: dict[str, str],
    fragment_start: str,
) -> None:
    client.force_login(curator)
    url = reverse(page)
    # when htmx restores the page from history (Back, not in its cache)
    restored = client.get(url, query, headers=HISTORY_RESTORE)
    # then it gets the whole page, layout and all
    assert "<html" in restored.content.decode()
    assert 'aria-label="Main"' in restored.content.decode()
    assert "HX-History-Restore-Request" in restored["Vary"]
    # while an ordinary htmx request still gets the fragment alone
    fragment = client.get(url, query, headers=HTMX).content.decode()
    assert fragment.lstrip().startswith(fragment_start)


def test_hotfix_requires_a_reason_and_is_flagged(client: Any, curator: Any, sourced: None) -> None:
    draft = unit_save_draft(actor=curator, spec=spec("hcc.resection", **SAFETY))
    client.force_login(curator)
    url = reverse("knowledge:version-hotfix", args=["hcc.resection", 1])
    # when the author tries a hot-fix without a reason
    response = client.post(url, {"reason": ""}, follow=True)
    # then it is refused with the service's wording and nothing is published
    assert HOTFIX_REASON in _messages(response)
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT
    # and with the safety alert it answers, it goes live at once, flagged
    response = client.post(url, {"reason": "Safety alert 2026-11: bleeding"}, follow=True)
    draft.refresh_from_db()
    assert (draft.status, draft.hotfix) == ("published", True)
    page = response.content.decode()
    assert "Hot-fix" in page
    assert "Safety alert 2026-11: bleeding" in page


def test_a_curator_gets_no_hotfix_for_a_unit_that_is_not_a_safety_unit(
    client: Any, curator: Any, draft: UnitVersion
) -> None:
    # given the author's own therapy-step draft
    client.force_login(curator)
    # then its page offers no hot-fix, only sending it to review
    assert _offers(_version_row(client, "hcc.resection", 1), "hcc.resection", 1) == (
        False,
        False,
    )
    # and a forged hot-fix post with the probe's reason is refused with the rule, not published
    url = reverse("knowledge:version-hotfix", args=["hcc.resection", 1])
    for reason in ("x", "Safety alert 2026-11: bleeding"):
        response = client.post(url, {"reason": reason}, follow=True)
        assert response.status_code == 200
        assert HOTFIX_NOT_SAFETY in _messages(response)
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT


def test_a_one_letter_hotfix_reason_is_refused_with_a_message(
    client: Any, curator: Any, sourced: None
) -> None:
    # given the author's own safety draft
    version = unit_save_draft(actor=curator, spec=spec("hcc.alert", **SAFETY))
    client.force_login(curator)
    # when they hot-fix it with the reason "x"
    response = client.post(
        reverse("knowledge:version-hotfix", args=["hcc.alert", 1]), {"reason": "x"}, follow=True
    )
    # then they read what a reason needs, and nothing is published
    assert any("Say which safety alert" in m for m in _messages(response))
    version.refresh_from_db()
    assert version.status == VersionStatus.DRAFT


def _version_row(client: Any, key: str, number: int) -> str:
    page = client.get(reverse("knowledge:unit-detail", args=[key])).content.decode()
    row = re.search(rf'<tr id="version-{number}">.*?</tr>', page, re.S)
    assert row is not None
    return row.group(0)


def _offers(row: str, key: str, number: int) -> tuple[bool, bool]:
    """(plain Publish form, hot-fix form) offered in a version's row."""
    publish = f'action="{reverse("knowledge:version-publish", args=[key, number])}"' in row
    hotfix = f'action="{reverse("knowledge:version-hotfix", args=[key, number])}"' in row
    return publish, hotfix


@pytest.mark.parametrize(
    ("author", "status", "viewer", "offers"),
    [
        # a draft: its author and an administrator may hot-fix it, nobody else publishes it
        ("curator", "draft", "curator", (False, True)),
        ("curator", "draft", "second_curator", (False, False)),
        ("curator", "draft", "admin_user", (False, True)),
        # in review: the author only as a hot-fix; anyone else publishes it as its reviewer
        ("curator", "in_review", "curator", (False, True)),
        ("curator", "in_review", "second_curator", (True, False)),
        ("curator", "in_review", "admin_user", (True, False)),
        # an administrator's own version follows the same four-eyes rule
        ("admin_user", "draft", "admin_user", (False, True)),
        ("admin_user", "in_review", "admin_user", (False, True)),
        ("admin_user", "in_review", "curator", (True, False)),
    ],
)
def test_publish_forms_are_offered_exactly_when_the_service_accepts_them(
    client: Any,
    sourced: None,
    second_curator: Any,
    author: str,
    status: str,
    viewer: str,
    offers: tuple[bool, bool],
    request: Any,
) -> None:
    writer = request.getfixturevalue(author)
    version = unit_save_draft(actor=writer, spec=spec("hcc.resection", **SAFETY))
    if status == "in_review":
        version_submit(actor=writer, version=version)
    user = request.getfixturevalue(viewer)
    client.force_login(user)
    # the page offers exactly what it should
    row = _version_row(client, "hcc.resection", 1)
    assert _offers(row, "hcc.resection", 1) == offers
    if status == "in_review" and writer == user:
        assert "Yours – needs another curator." in row
    if status == "in_review":  # the diff page a reviewer reads offers the same
        diff = client.get(reverse("knowledge:unit-diff", args=["hcc.resection"]), {"b": "1"})
        assert _offers(diff.content.decode(), "hcc.resection", 1)[0] == offers[0]
    # and the service agrees: a hot-fix with a reason is accepted as a flagged hot-fix exactly
    # when the form is offered (otherwise refused, or a plain review)
    response = client.post(
        reverse("knowledge:version-hotfix", args=["hcc.resection", 1]),
        {"reason": "Safety alert 2026-11"},
        follow=True,
    )
    version.refresh_from_db()
    flagged = version.status == VersionStatus.PUBLISHED and version.hotfix
    assert flagged == offers[1], _messages(response)


def test_admin_sees_their_own_version_in_review_as_needing_another_curator(
    client: Any, admin_user: Any, curator: Any, sourced: None
) -> None:
    _in_review(admin_user, "hcc.own")
    _in_review(curator, "hcc.other")
    client.force_login(admin_user)
    page = client.get(reverse("knowledge:review-queue")).content.decode()
    own = re.search(r'<tr id="review-hcc.own-1">.*?</tr>', page, re.S)
    other = re.search(r'<tr id="review-hcc.other-1">.*?</tr>', page, re.S)
    assert own is not None
    assert other is not None
    assert "yours – needs another curator" in own.group(0)
    assert reverse("knowledge:version-publish", args=["hcc.own", 1]) not in own.group(0)
    assert reverse("knowledge:version-publish", args=["hcc.other", 1]) in other.group(0)


def test_a_stale_version_in_review_is_not_offered_for_publication(
    client: Any, curator: Any, second_curator: Any, sourced: None
) -> None:
    # given v1 in review and a newer v2 published meanwhile (the author's hot-fix)
    _in_review(curator, "hcc.resection", **SAFETY)
    v2 = unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.2", **SAFETY))
    version_publish(actor=curator, version=v2, hotfix_reason="Safety alert 2026-11")
    client.force_login(second_curator)
    # then neither the unit page nor the queue offers to publish v1, and both say why
    row = _version_row(client, "hcc.resection", 1)
    assert _offers(row, "hcc.resection", 1) == (False, False)
    assert "Older than v2, already published" in row
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    assert reverse("knowledge:version-publish", args=["hcc.resection", 1]) not in queue
    assert "Older than v2, already published" in queue
    diff_url = reverse("knowledge:unit-diff", args=["hcc.resection"])
    diff = client.get(diff_url, {"b": "1"}).content.decode()
    assert _offers(diff, "hcc.resection", 1) == (False, False)
    assert "Older than v2, already published" in diff
    # and a forged POST is refused with the service's message
    response = client.post(
        reverse("knowledge:version-publish", args=["hcc.resection", 1]), follow=True
    )
    assert any("would roll the unit back" in m for m in _messages(response))
    assert UnitVersion.objects.get(unit__key="hcc.resection", number=1).status == "in_review"


# --- evidence pages, as consultations cite them ---------------------------------------------


def test_evidence_shows_published_and_retired_versions_but_never_unpublished_ones(
    client: Any, curator: Any, second_curator: Any, clinician: Any, sourced: None
) -> None:
    # given a retired v1 (once published), a published v2, v3 in review and a v4 draft
    v1 = version_publish(actor=second_curator, version=_in_review(curator, "hcc.resection"))
    v2 = version_publish(
        actor=second_curator,
        version=_in_review(curator, "hcc.resection", anchor="Section 6.2"),
    )
    v3 = _in_review(curator, "hcc.resection", anchor="Section 6.3 (in review)")
    v4 = unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.4 (draft)"))
    v1.refresh_from_db()
    assert v1.status == VersionStatus.RETIRED
    for user in (clinician, curator):
        client.force_login(user)
        for version, expected in ((v1, 200), (v2, 200), (v3, 404), (v4, 404)):
            response = client.get(reverse("knowledge:evidence", args=[version.pk]))
            assert response.status_code == expected, (user, version)
        page = client.get(reverse("knowledge:evidence", args=[v1.pk])).content.decode()
        assert "Section 6.1" in page
        assert "version 1, retired" in page
    assert client.get(reverse("knowledge:evidence", args=[999999])).status_code == 404


def test_evidence_opens_with_its_source_and_reads_its_conditions_in_words(
    client: Any, curator: Any, second_curator: Any, clinician: Any, sourced: None
) -> None:
    # given a published unit that applies at BCLC 0 or A without portal hypertension
    context = {
        "all": [
            {"fact": "derived.bclc", "op": "in", "value": ["0", "A"]},
            {"fact": "organ_function.clinically_significant_portal_hypertension", "op": "is_false"},
            {"fact": "labs.platelets_10e9_l", "op": "ge", "value": 50},
        ]
    }
    version = version_publish(
        actor=second_curator, version=_in_review(curator, "hcc.resection", context=context)
    )
    # when a clinician follows the citation from a plan
    client.force_login(clinician)
    page = page_text(client.get(reverse("knowledge:evidence", args=[version.pk])).content.decode())
    # then it opens with the source (organisation, guideline, version, section) and its address
    source = "Test Society Test guideline on liver tumours (2025), Section 6.1."
    assert source in page
    assert page.index(source) < page.index("Liver resection is the first option")
    assert "https://example.org/guideline" in page
    # and its conditions read as clinical sentences, not the rule's keys
    assert "BCLC stage is one of 0, A" in page
    assert "Clinically significant portal hypertension: no" in page
    assert "Platelets (×10⁹/L) is at least 50" in page  # noqa: RUF001 - the unit's sign
    applies = page[page.index("Applies when") : page.index("Action")]
    assert "derived." not in applies
    assert "organ_function" not in applies


# --- the edit form ------------------------------------------------------------------------


def test_unit_form_shows_each_error_beside_its_field_and_saves_nothing(
    client: Any, curator: Any, sourced: None
) -> None:
    client.force_login(curator)
    context = {"all": [{"fact": "derived.bclc", "op": "in", "value": "A"}]}
    response = client.post(
        reverse("knowledge:unit-create"),
        _form_data(
            key="Bad Key!",
            text="too short",
            grade_system="EASL",
            context=json.dumps(context),
            action='{"type": "therapy", "modality": "surgery",',  # cut off
        ),
    )
    assert response.status_code == 422
    page = response.content.decode()
    assert "Not saved" in page
    assert "String should match pattern" in _field(page, "key")
    assert "at least 10 characters" in _field(page, "text")
    assert "all[0]: operator &#x27;in&#x27; needs a non-empty list" in _field(page, "context")
    assert "Not valid JSON" in _field(page, "action")
    assert "errorlist" not in _field(page, "title")
    # the typed text is kept for correction, escaped
    assert "too short" in _field(page, "text")
    assert KnowledgeUnit.objects.count() == 0
    assert UnitVersion.objects.count() == 0


def test_unit_form_puts_an_action_of_the_wrong_type_on_the_action_field(
    client: Any, curator: Any, sourced: None
) -> None:
    client.force_login(curator)
    response = client.post(
        reverse("knowledge:unit-create"),
        _form_data(
            action=json.dumps(
                {
                    "type": "safety",
                    "gate": "varices",
                    "agents": ["bevacizumab"],
                    "severity": "critical",
                    "effect": "remove",
                    "advice": "Treat varices first.",
                }
            )
        ),
    )
    assert response.status_code == 422
    action = _field(response.content.decode(), "action")
    assert "a therapy_step unit needs an action of type &#x27;therapy&#x27;" in action
    response = client.post(
        reverse("knowledge:unit-create"),
        _form_data(action=json.dumps({"type": "therapy", "modality": "laser"})),
    )
    action = _field(response.content.decode(), "action")
    assert "modality: Input should be" in action
    assert "description: Field required" in action
    assert UnitVersion.objects.count() == 0


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ('{"all": [{"fact": "labs.afp", "op": "gt", "value": NaN}]}', "NaN or infinity"),
        ('{"all": [{"fact": "labs.afp", "op": "lt", "value": Infinity}]}', "NaN or infinity"),
        ('{"all": [{"fact": "labs.afp", "op": "in", "value": [1, -Infinity]}]}', "NaN or"),
        (
            '{"all": [{"fact": "labs.afp", "op": "eq", "value": ' + "[" * 40 + "]" * 40 + "}]}",
            "nested more than 32 levels deep",
        ),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["nan", "infinity", "infinity-in-list", "deep", "very-deep"],
)
def test_unit_form_refuses_json_the_database_or_the_parser_cannot_take(
    client: Any, curator: Any, sourced: None, context: str, message: str
) -> None:
    client.force_login(curator)
    response = client.post(reverse("knowledge:unit-create"), _form_data(context=context))
    assert response.status_code == 422
    assert message in _field(response.content.decode(), "context")
    assert UnitVersion.objects.count() == 0


def test_edit_prefills_the_json_and_refuses_an_unchanged_save(
    client: Any, curator: Any, draft: UnitVersion
) -> None:
    client.force_login(curator)
    url = reverse("knowledge:unit-edit", args=["hcc.resection"])
    form = client.get(url).content.decode()
    # the current content, pretty-printed, escaped inside the textarea
    assert "&quot;fact&quot;: &quot;derived.bclc&quot;" in _field(form, "context")
    assert "&quot;modality&quot;: &quot;surgery&quot;" in _field(form, "action")
    # identity is shown but not editable
    assert "disabled" in _field(form, "kind")
    response = client.post(url, _form_data())
    assert response.status_code == 422
    assert "Nothing changed" in response.content.decode()
    assert UnitVersion.objects.count() == 1
    # an edited anchor makes draft v2, even if the POST tries to change the kind
    response = client.post(url, _form_data(anchor="Section 6.2", kind="staging_rule"))
    assert response.status_code == 302
    latest = UnitVersion.objects.get(unit__key="hcc.resection", number=2)
    assert (latest.status, latest.anchor, latest.unit.kind) == (
        "draft",
        "Section 6.2",
        "therapy_step",
    )


def test_content_is_escaped_on_every_page(client: Any, curator: Any, sourced: None) -> None:
    evil = '<script>alert("x")</script> resection'
    unit_save_draft(actor=curator, spec=spec("hcc.evil", title=evil, anchor="<b>6.1</b>"))
    unit_save_draft(actor=curator, spec=spec("hcc.evil", title=evil, anchor="<i>6.2</i>"))
    client.force_login(curator)
    for url in (
        reverse("knowledge:unit-list"),
        reverse("knowledge:unit-detail", args=["hcc.evil"]),
        reverse("knowledge:unit-diff", args=["hcc.evil"]),
        reverse("knowledge:unit-edit", args=["hcc.evil"]),
    ):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page, url
        assert "&lt;script&gt;" in page, url


# --- lists and filters --------------------------------------------------------------------


def test_unit_list_searches_and_filters(
    client: Any, curator: Any, second_curator: Any, sourced: None
) -> None:
    version_publish(actor=second_curator, version=_in_review(curator, "hcc.resection"))
    unit_save_draft(
        actor=curator,
        spec=spec("hcc.resection", anchor="Section 6.2"),
    )
    unit_save_draft(
        actor=curator,
        spec=spec(
            "lung.osimertinib",
            cancer_type="lung_adenocarcinoma",
            title="Osimertinib for EGFR-mutant NSCLC",
            text="Osimertinib is preferred first line for EGFR exon 19 deletion.",
            context={},
        ),
    )
    client.force_login(curator)
    url = reverse("knowledge:unit-list")
    page = client.get(url).content.decode()
    row = re.search(r'<tr id="unit-hcc.resection">.*?</tr>', page, re.S)
    assert row is not None
    # latest v2 is a draft while v1 stays published
    assert "v2" in row.group(0)
    assert "Draft" in row.group(0)
    assert "v1" in row.group(0)

    def keys(**params: str) -> set[str]:
        return {v.unit.key for v in client.get(url, params).context["rows"]}

    assert keys(q="EGFR") == {"lung.osimertinib"}  # text of the latest version
    assert keys(q="hcc.res") == {"hcc.resection"}  # key
    assert keys(cancer_type="hcc") == {"hcc.resection"}
    assert keys(status="draft") == {"hcc.resection", "lung.osimertinib"}
    assert keys(status="published") == set()
    assert keys(kind="staging_rule") == set()
    assert keys(source=SOURCE["key"]) == {"hcc.resection", "lung.osimertinib"}
    fragment = client.get(url, {"q": "EGFR"}, headers=HTMX).content.decode()
    assert fragment.lstrip().startswith('<table id="unit-table"')
    assert "lung.osimertinib" in fragment


def test_sources_are_validated_created_and_edited(client: Any, curator: Any) -> None:
    client.force_login(curator)
    url = reverse("knowledge:source-create")
    bad = {**SOURCE, "url": "javascript:alert(1)", "year": "1800"}
    response = client.post(url, bad)
    assert response.status_code == 422
    page = response.content.decode()
    assert "url must be an http(s) address" in _field(page, "url")
    assert "greater than or equal to 1990" in _field(page, "year")
    assert GuidelineSource.objects.count() == 0
    response = client.post(url, SOURCE)
    assert response.status_code == 302
    assert client.get(reverse("knowledge:source-list")).content.decode().count(SOURCE["key"]) >= 1
    edit = reverse("knowledge:source-edit", args=[SOURCE["key"]])
    assert "Test guideline on liver tumours" in client.get(edit).content.decode()
    client.post(edit, {**SOURCE, "key": "something-else", "title": "Renamed guideline"})
    source = GuidelineSource.objects.get()
    assert (source.key, source.title) == (SOURCE["key"], "Renamed guideline")


# --- bundles and diffs --------------------------------------------------------------------


def test_bundle_upload_with_an_error_lists_it_and_imports_nothing(
    client: Any, curator: Any
) -> None:
    client.force_login(curator)
    bad = unit("hcc.two", grade={"system": "EASL", "native": "x", "ordinal": 9})
    document = {"format": "mdtboard.kb/1", "sources": [SOURCE], "units": [unit("hcc.one"), bad]}
    upload = SimpleUploadedFile("kb.json", json.dumps(document).encode())
    response = client.post(reverse("knowledge:bundle"), {"file": upload})
    assert response.status_code == 422
    page = response.content.decode()
    assert "kb.json: units.1.grade.ordinal" in page
    assert "less than or equal to 5" in page
    assert "Not imported" in page
    assert GuidelineSource.objects.count() == 0
    assert UnitVersion.objects.count() == 0
    junk = SimpleUploadedFile("kb.yaml", b"format: [unclosed")
    response = client.post(reverse("knowledge:bundle"), {"file": junk})
    assert response.status_code == 422
    assert "Not valid YAML" in response.content.decode()


def test_bundle_upload_of_a_yaml_merge_bomb_is_refused_and_imports_nothing(
    client: Any, curator: Any
) -> None:
    # given a curator's upload of a valid source and unit followed by a YAML merge-key bomb

    client.force_login(curator)
    document = {"format": "mdtboard.kb/1", "sources": [SOURCE], "units": [unit("hcc.one")]}
    raw = merge_bomb(24) + yaml.safe_dump(document).encode()
    # when it is uploaded
    upload = SimpleUploadedFile("kb.yaml", raw)
    response = client.post(reverse("knowledge:bundle"), {"file": upload})
    # then the page says why it was refused, and nothing was saved
    assert response.status_code == 422
    page = response.content.decode()
    assert "the YAML is too large: its merge keys (&lt;&lt;) copy more than 100,000 keys" in page
    assert "Not imported" in page
    assert GuidelineSource.objects.count() == 0
    assert UnitVersion.objects.count() == 0


def test_bundle_import_sends_units_to_review_and_export_round_trips(
    client: Any, curator: Any, second_curator: Any
) -> None:
    client.force_login(curator)
    document = {"format": "mdtboard.kb/1", "sources": [SOURCE], "units": [unit("hcc.one")]}
    upload = SimpleUploadedFile("kb.yaml", yaml.safe_dump(document).encode())
    response = client.post(reverse("knowledge:bundle"), {"file": upload})
    assert response.status_code == 200
    assert "1 new version sent to review" in response.content.decode()
    version = UnitVersion.objects.get(unit__key="hcc.one")
    assert version.status == VersionStatus.IN_REVIEW  # imported, not published
    version_publish(actor=second_curator, version=version)
    # when the published knowledge base is exported
    exported = client.get(reverse("knowledge:bundle-export-json"))
    assert exported["Content-Disposition"] == 'attachment; filename="mdtboard-kb.json"'
    parsed, errors = bundle_parse(exported.content, filename="mdtboard-kb.json")
    assert not errors
    assert parsed is not None
    assert [u.key for u in parsed.units] == ["hcc.one"]
    as_yaml = client.get(reverse("knowledge:bundle-export-yaml"))
    assert as_yaml["Content-Disposition"] == 'attachment; filename="mdtboard-kb.yaml"'
    assert yaml.safe_load(as_yaml.content) == json.loads(exported.content)
    # then uploading the export again changes nothing
    again = SimpleUploadedFile("mdtboard-kb.json", exported.content)
    response = client.post(reverse("knowledge:bundle"), {"file": again})
    assert "1 unit unchanged" in response.content.decode()
    assert UnitVersion.objects.count() == 1


def test_diff_page_shows_both_versions_side_by_side_with_markers(
    client: Any, curator: Any, draft: UnitVersion
) -> None:
    unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.2"))
    client.force_login(curator)
    response = client.get(reverse("knowledge:unit-diff", args=["hcc.resection"]))
    page = response.content.decode()
    # default: previous (v1) against latest (v2)
    assert (response.context["old"].number, response.context["new"].number) == (1, 2)
    rows = response.context["rows"]
    changed = [r for r in rows if r.left.change != "same"]
    assert [(r.left.text.strip(), r.right.text.strip()) for r in changed] == [
        ('"anchor": "Section 6.1",', '"anchor": "Section 6.2",')
    ]
    assert (changed[0].left.marker, changed[0].right.marker) == ("\u2212", "+")
    # both sides appear, each changed line with its marker and class, unchanged lines plain
    removed = re.search(r"<tr>(?:(?!</tr>).)*Section 6\.1(?:(?!</tr>).)*</tr>", page, re.S)
    assert removed is not None
    assert 'class="diff-line diff-removed"' in removed.group(0)
    assert 'class="diff-line diff-added"' in removed.group(0)
    assert "\u2212</span>" in removed.group(0)
    assert "+</span>" in removed.group(0)
    assert "Section 6.2" in removed.group(0)
    assert page.count("diff-line diff-same") == 2 * (len(rows) - 1)
    # explicit versions, and a version that does not exist
    url = reverse("knowledge:unit-diff", args=["hcc.resection"])
    assert client.get(url, {"a": "2", "b": "1"}).status_code == 200
    assert client.get(url, {"a": "1", "b": "7"}).status_code == 404
    first = client.get(url, {"b": "1"})
    assert first.context["old"] is None
    assert all(r.right.change == "added" for r in first.context["rows"])


@pytest.mark.parametrize(
    "params",
    [{"b": "\u00b2"}, {"a": "\u00b2"}, {"b": "9" * 5000}, {"a": "1" * 5000}, {"b": "x"}],
    ids=["superscript-b", "superscript-a", "huge-b", "huge-a", "letter"],
)
def test_diff_page_answers_a_malformed_version_number_with_404(
    client: Any, curator: Any, draft: UnitVersion, params: dict[str, str]
) -> None:
    client.force_login(curator)
    url = reverse("knowledge:unit-diff", args=["hcc.resection"])
    assert client.get(url, params).status_code == 404


# --- document ingest ----------------------------------------------------------------------

GUIDELINE_MD = """# Test guideline on hepatocellular carcinoma (HCC)

## 6 Treatment

### 6.1 Resection

Liver resection is recommended for a single tumour with preserved liver function (LoE 2, strong).

### 6.4 Systemic therapy

<script>alert("x")</script> Atezolizumab plus bevacizumab should be offered first line. [I, A]
"""


def test_ingest_lists_candidates_and_drafts_a_unit_from_one(
    client: Any, curator: Any, sourced: None
) -> None:
    client.force_login(curator)
    upload = SimpleUploadedFile("hcc.md", GUIDELINE_MD.encode())
    # when a curator uploads a Markdown guideline
    response = client.post(
        reverse("knowledge:ingest"), {"source": SOURCE["key"], "fmt": "auto", "file": upload}
    )
    # then each statement is listed with its anchor, suggested kind and grade, escaped
    assert response.status_code == 200
    page = response.content.decode()
    row = re.search(r'<tr id="candidate-1">.*?</tr>', page, re.S)
    assert row is not None
    assert "§ 6.1 Resection &gt; ¶1" in row.group(0)
    assert "(LoE 2, strong)" in row.group(0)
    assert "therapy_step" in row.group(0)
    assert "<script>alert" not in page
    assert UnitVersion.objects.count() == 0  # segmenting saves nothing
    # when they turn the first statement into a unit
    candidate = response.context["candidates"][0]
    form = client.post(
        reverse("knowledge:ingest-draft"),
        {
            "source": candidate.source_key,
            "anchor": candidate.anchor,
            "statement": candidate.text,
            "native_grade": candidate.native_grade,
            "kind": candidate.suggested_kind,
            "cancer_type": candidate.suggested_cancer_type or "",
        },
    )
    # then the new-unit form is pre-filled with what the segmenter found
    html = form.content.decode()
    initial = form.context["form"].initial
    assert (initial["anchor"], initial["grade_native"], initial["kind"]) == (
        "§ 6.1 Resection > ¶1",
        "(LoE 2, strong)",
        "therapy_step",
    )
    assert "&quot;type&quot;: &quot;therapy&quot;" in _field(html, "action")
    assert "source's own wording" in html  # the curator is asked to paraphrase
    assert "single tumour with preserved liver function" in html.split('id="source-statement"')[1]
    assert UnitVersion.objects.count() == 0
    # and filling the remaining fields saves a draft
    data = _form_data(
        key="hcc.resection-ingested",
        anchor=initial["anchor"],
        text="Resect a single HCC when liver function is preserved.",
        grade_native=initial["grade_native"],
        statement=candidate.text,
        statement_anchor=candidate.anchor,
    )
    response = client.post(reverse("knowledge:unit-create"), data)
    assert response.status_code == 302
    version = UnitVersion.objects.get(unit__key="hcc.resection-ingested")
    assert (version.status, version.anchor) == ("draft", "§ 6.1 Resection > ¶1")


def test_ingest_refuses_a_file_it_cannot_read(client: Any, curator: Any, sourced: None) -> None:
    client.force_login(curator)
    url = reverse("knowledge:ingest")
    unknown = SimpleUploadedFile("guideline.pdf", b"%PDF-1.7")
    response = client.post(url, {"source": SOURCE["key"], "fmt": "auto", "file": unknown})
    assert response.status_code == 422
    assert "choose one" in _field(response.content.decode(), "fmt")
    binary = SimpleUploadedFile("guideline.txt", b"\xff\xfe\x00junk")
    response = client.post(url, {"source": SOURCE["key"], "fmt": "auto", "file": binary})
    assert "Not UTF-8 text" in _field(response.content.decode(), "file")
