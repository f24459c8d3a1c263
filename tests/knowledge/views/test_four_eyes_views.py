"""Four eyes as curators see it: what waits for a second person, on the unit page and in the
review queue, the decision forms each persona gets, and the Django admin offering no way
around it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.urls import reverse

from clinical.rules import SourceSpec
from knowledge.models import ApprovalRequest, UnitVersion, VersionStatus
from knowledge.services import (
    source_save,
    unit_save_draft,
    version_publish,
    version_retire_request,
    version_submit,
)
from tests.knowledge.kb_factory import SAFETY, SOURCE, spec

pytestmark = pytest.mark.django_db

KEY = "hcc.varices-bevacizumab"
WEAKER = {**SAFETY, "action": {**SAFETY["action"], "severity": "minor"}}
STRONGER = {**SAFETY, "action": {**SAFETY["action"], "agents": ["bevacizumab", "ramucirumab"]}}


@pytest.fixture
def published(curator: Any, second_curator: Any) -> UnitVersion:
    source_save(actor=curator, spec=SourceSpec.model_validate(SOURCE))
    version = unit_save_draft(actor=curator, spec=spec(KEY, **SAFETY))
    version_submit(actor=curator, version=version)
    return version_publish(actor=second_curator, version=version)


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _decide(request: ApprovalRequest, decision: str) -> str:
    return reverse("knowledge:approval-decide", args=[request.pk, decision])


def _approval_html(page: str, request: ApprovalRequest) -> str:
    found = re.search(rf'<article[^>]*id="approval-{request.pk}">.*?</article>', page, re.S)
    assert found is not None, page
    return found.group(0)


def test_a_retirement_request_is_shown_and_decided_by_someone_else(
    client: Any, curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # given a curator who asks to retire the rule through its page
    client.force_login(curator)
    detail = reverse("knowledge:unit-detail", args=[KEY])
    client.post(
        reverse("knowledge:version-retire", args=[KEY, 1]),
        {"reason": "Withdrawn by the society", "next": detail},
    )
    request = ApprovalRequest.objects.get(kind="retire")
    # then their page shows it as theirs, with no approve form, and no second retire form
    page = client.get(detail).content.decode()
    own = _approval_html(page, request)
    assert "Withdrawn by the society" in own
    assert "Yours – needs another curator or an administrator." in own
    assert _decide(request, "approve") not in own
    assert _decide(request, "withdraw") in own
    assert "Retirement asked for" in page
    assert reverse("knowledge:version-retire", args=[KEY, 1]) not in page
    # and a forged approval is refused with the service's reason
    response = client.post(_decide(request, "approve"), {"next": detail}, follow=True)
    assert any("You asked for this change" in m for m in _messages(response))
    assert UnitVersion.objects.get(unit__key=KEY).status == VersionStatus.PUBLISHED
    # when the second curator opens the review queue, they may approve or refuse it
    client.force_login(second_curator)
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    theirs = _approval_html(queue, request)
    assert _decide(request, "approve") in theirs
    assert _decide(request, "refuse") in theirs
    assert "Retiring it takes the rule out of the safety gate" in theirs
    response = client.post(_decide(request, "approve"), {"next": detail}, follow=True)
    assert any("retired: retrieval no longer sees it" in m for m in _messages(response))
    assert UnitVersion.objects.get(unit__key=KEY).status == VersionStatus.RETIRED
    # and the unit's page keeps the decision
    decided = client.get(detail).content.decode()
    assert re.search(r'id="decided-approvals".*Approved', decided, re.S)


def test_a_weakening_version_in_review_says_what_it_weakens(
    client: Any, curator: Any, second_curator: Any, admin_user: Any, published: UnitVersion
) -> None:
    # given a curator's weakening edit, sent by an administrator
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    version_submit(actor=admin_user, version=v2, reason="The 2026 label")
    publish = reverse("knowledge:version-publish", args=[KEY, 2])
    # then the administrator who sent it is not offered to publish it
    client.force_login(admin_user)
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    row = re.search(rf'<tr id="review-{KEY}-2">.*?</tr>', queue, re.S)
    assert row is not None
    assert "Severity lowered from critical to minor" in row.group(0)
    assert "The 2026 label" in row.group(0)
    assert publish not in row.group(0)
    assert "You sent it" in row.group(0)
    # a second curator is, with a refusal that sends it back to draft
    client.force_login(second_curator)
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    row = re.search(rf'<tr id="review-{KEY}-2">.*?</tr>', queue, re.S)
    assert row is not None
    assert publish in row.group(0)
    assert "Approve and publish" in row.group(0)
    request = ApprovalRequest.objects.get(version=v2)
    client.post(_decide(request, "refuse"), {"note": "The label did not change"})
    v2.refresh_from_db()
    assert v2.status == VersionStatus.DRAFT
    # and the diff page says the same before anyone publishes
    diff = client.get(reverse("knowledge:unit-diff", args=[KEY]), {"b": "2"}).content.decode()
    assert "weakens the published safety rule" in diff


def test_a_weakening_hotfix_is_refused_with_its_reasons_and_not_offered(
    client: Any, curator: Any, published: UnitVersion
) -> None:
    unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    client.force_login(curator)
    page = client.get(reverse("knowledge:unit-detail", args=[KEY])).content.decode()
    assert reverse("knowledge:version-hotfix", args=[KEY, 2]) not in page
    assert "No hot-fix: it weakens the published rule." in page
    response = client.post(
        reverse("knowledge:version-hotfix", args=[KEY, 2]),
        {"reason": "Safety alert 2026-11 softened the label"},
        follow=True,
    )
    assert any(
        "only add to or strengthen" in m and "Severity lowered" in m for m in _messages(response)
    )
    assert UnitVersion.objects.get(unit__key=KEY, number=2).status == VersionStatus.DRAFT


def test_a_hotfix_is_shown_pending_second_review_until_confirmed(
    client: Any, curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # given a strengthening hot-fix, live at once
    client.force_login(curator)
    unit_save_draft(actor=curator, spec=spec(KEY, **STRONGER))
    response = client.post(
        reverse("knowledge:version-hotfix", args=[KEY, 2]),
        {"reason": "Safety alert 2026-12 on VEGF inhibitors"},
        follow=True,
    )
    assert any("pending a second person's review" in m for m in _messages(response))
    detail = reverse("knowledge:unit-detail", args=[KEY])
    page = client.get(detail).content.decode()
    assert "hot-fix pending second review" in page
    review = ApprovalRequest.objects.get(kind="hotfix")
    assert _decide(review, "approve") not in _approval_html(page, review)
    # then the review queue lists it for the second curator, who confirms it
    client.force_login(second_curator)
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    listed = re.search(r'id="pending-hotfixes".*', queue, re.S)
    assert listed is not None
    assert KEY in listed.group(0)
    client.post(_decide(review, "approve"), {"note": "Checked against the alert"})
    page = client.get(detail).content.decode()
    assert "hot-fix pending second review" not in page
    queue = client.get(reverse("knowledge:review-queue")).content.decode()
    assert "No hot-fix waits." in queue


def test_the_decision_route_answers_404_for_what_does_not_exist(
    client: Any, curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn")
    client.force_login(second_curator)
    assert client.post(_decide(request, "delete")).status_code == 404
    missing = reverse("knowledge:approval-decide", args=[99999, "approve"])
    assert client.post(missing).status_code == 404
    response = client.post(_decide(request, "refuse"), {"note": ""}, follow=True)
    assert any("Say why" in m for m in _messages(response))
    request.refresh_from_db()
    assert request.status == "pending"


def test_the_django_admin_offers_no_way_to_change_the_knowledge_base(
    client: Any, admin_user: Any, published: UnitVersion
) -> None:
    # no knowledge model is registered (an admin page that saves a status or content would
    # bypass the services: four eyes, the classifier and the audit log)
    registered = [m for m in admin.site._registry if m._meta.app_label == "knowledge"]
    assert registered == []
    client.force_login(admin_user)
    for model in ("unitversion", "knowledgeunit", "approvalrequest"):
        assert client.get(f"/admin/knowledge/{model}/").status_code == 404
        assert client.get(f"/admin/knowledge/{model}/{published.pk}/change/").status_code == 404
