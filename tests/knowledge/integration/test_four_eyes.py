"""Four eyes on every weakening of a safety rule, through the services: retirement, edit
(draft, review, publish), hot-fix, bulk import, and the records they leave."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, transaction

from knowledge.models import ApprovalRequest, UnitVersion, VersionStatus
from knowledge.services import (
    KnowledgeError,
    approval_request_approve,
    approval_request_refuse,
    approval_request_withdraw,
    bundle_import,
    unit_save_draft,
    version_publish,
    version_retire_request,
    version_submit,
)
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_verify
from mdtboard.core.dbroles import database_owner
from tests.knowledge.kb_factory import SAFETY, bundle, spec, unit

pytestmark = pytest.mark.django_db

KEY = "hcc.varices-bevacizumab"


def _safety(**action: Any) -> dict[str, Any]:
    return {**SAFETY, "action": {**SAFETY["action"], **action}}


WEAKER = _safety(severity="minor", effect="flag")
STRONGER = _safety(agents=["bevacizumab", "ramucirumab"])


@pytest.fixture
def published(curator: Any, second_curator: Any) -> UnitVersion:
    """A safety rule a curator wrote and a second curator published."""
    bundle_import(actor=curator, bundle=bundle(unit(KEY, **SAFETY)))
    return version_publish(actor=second_curator, version=UnitVersion.objects.get(unit__key=KEY))


def _live(key: str = KEY) -> UnitVersion:
    return UnitVersion.objects.get(unit__key=key, status=VersionStatus.PUBLISHED)


# --- retirement -------------------------------------------------------------------------------


def test_a_retirement_waits_for_a_second_person(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # when a curator asks to retire the published rule
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn 2026")
    # then nothing changes yet: the rule stays live, and the request says who, why and what
    assert _live().pk == published.pk
    assert (request.kind, request.status, request.requested_by) == ("retire", "pending", curator)
    assert request.reason == "Withdrawn 2026"
    assert any("safety gate" in r for r in request.reasons)
    # and they cannot approve it themselves, nor ask twice
    with pytest.raises(KnowledgeError, match="You asked for this change"):
        approval_request_approve(actor=curator, request=request)
    with pytest.raises(KnowledgeError, match="already waiting"):
        version_retire_request(actor=curator, version=published, reason="again")
    assert _live().pk == published.pk
    # when a second curator approves, it is retired, and the log names both
    approval_request_approve(actor=second_curator, request=request)
    published.refresh_from_db()
    assert published.status == VersionStatus.RETIRED
    event = AuditEvent.objects.get(action="kb.version.retire")
    assert (event.actor, event.payload["requested_by"]) == (second_curator, curator.pk)
    assert AuditEvent.objects.filter(action="kb.request.approve", actor=second_curator).exists()
    assert audit_verify().ok


def test_an_administrators_own_request_needs_another_person_too(
    admin_user: Any, curator: Any, published: UnitVersion
) -> None:
    request = version_retire_request(actor=admin_user, version=published, reason="Withdrawn")
    with pytest.raises(KnowledgeError, match="You asked for this change"):
        approval_request_approve(actor=admin_user, request=request)
    assert _live().pk == published.pk
    approval_request_approve(actor=curator, request=request)
    assert not UnitVersion.objects.filter(status=VersionStatus.PUBLISHED).exists()


def test_a_refused_or_withdrawn_retirement_leaves_the_rule_live(
    curator: Any, second_curator: Any, clinician: Any, published: UnitVersion
) -> None:
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn")
    # nobody but a curator or an administrator decides, and a refusal says why
    with pytest.raises(KnowledgeError, match="Only curators"):
        approval_request_approve(actor=clinician, request=request)
    with pytest.raises(KnowledgeError, match="Say why"):
        approval_request_refuse(actor=second_curator, request=request, note=" ")
    refused = approval_request_refuse(
        actor=second_curator, request=request, note="The 2026 label still says so"
    )
    assert (refused.status, refused.decided_by) == ("refused", second_curator)
    with pytest.raises(KnowledgeError, match="already been refused"):
        approval_request_approve(actor=second_curator, request=request)
    # who asked may withdraw a new request, and nobody else
    again = version_retire_request(actor=curator, version=published, reason="Withdrawn again")
    with pytest.raises(KnowledgeError, match="Only the person who asked"):
        approval_request_withdraw(actor=second_curator, request=again)
    approval_request_withdraw(actor=curator, request=again)
    assert _live().pk == published.pk


def test_a_retirement_of_a_version_no_longer_live_is_settled_not_applied(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # given a retirement asked for v1, then a stronger v2 published by review
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn")
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **STRONGER))
    version_submit(actor=curator, version=v2)
    version_publish(actor=second_curator, version=v2)
    # then the request is settled (v2 is live), and approving it retires nothing
    request.refresh_from_db()
    assert request.status == "superseded"
    with pytest.raises(KnowledgeError, match="already been superseded"):
        approval_request_approve(actor=second_curator, request=request)
    assert _live().number == 2


def test_requests_are_records_the_database_keeps(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn")
    rows = ApprovalRequest.objects.filter(pk=request.pk)
    # the app's role may write the decision only, and delete nothing
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        rows.update(reason="rewritten")
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        rows.delete()
    approval_request_refuse(actor=second_curator, request=request, note="Not withdrawn")
    # and a decision is made once
    with pytest.raises(DatabaseError, match="decided once"), transaction.atomic():
        rows.update(status="approved")


@pytest.mark.django_db(transaction=True)
def test_the_trigger_keeps_requests_even_from_the_owner(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    request = version_retire_request(actor=curator, version=published, reason="Withdrawn")
    rows = ApprovalRequest.objects.filter(pk=request.pk)
    with database_owner():
        with pytest.raises(DatabaseError, match="immutable"):
            rows.update(requested_by=second_curator)
        with pytest.raises(DatabaseError, match="never deleted"):
            rows.delete()


# --- edit: draft, review, publish ---------------------------------------------------------


def test_a_weakening_edit_is_published_only_by_a_second_person(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # given a curator's edit that lowers the severity and makes the rule a flag
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    # when they send it to review, a request records who asked and what it weakens
    version_submit(actor=curator, version=v2, reason="The 2026 label softened it")
    request = ApprovalRequest.objects.get(version=v2)
    assert (request.kind, request.requested_by, request.reason) == (
        "publish",
        curator,
        "The 2026 label softened it",
    )
    assert any("Severity lowered from critical to minor" in r for r in request.reasons)
    # then they can publish it neither as a reviewer nor as a hot-fix, nor approve it
    with pytest.raises(KnowledgeError, match="four eyes"):
        version_publish(actor=curator, version=v2)
    with pytest.raises(KnowledgeError, match="only add to or strengthen") as refused:
        version_publish(actor=curator, version=v2, hotfix_reason="Safety alert 2026-11 softened")
    assert "Severity lowered from critical to minor" in str(refused.value)
    with pytest.raises(KnowledgeError, match="four eyes"):
        approval_request_approve(actor=curator, request=request)
    assert _live().pk == published.pk
    # when a second curator publishes it, that approves the request
    version_publish(actor=second_curator, version=v2)
    request.refresh_from_db()
    assert (request.status, request.decided_by) == ("approved", second_curator)
    assert _live().number == 2
    event = AuditEvent.objects.get(action="kb.version.publish", payload__number=2)
    assert any("Severity lowered" in r for r in event.payload["weakens"])


def test_an_administrator_cannot_publish_a_weakening_draft_they_sent_for_someone(
    curator: Any, admin_user: Any, second_curator: Any, published: UnitVersion
) -> None:
    # given a curator's weakening draft, never sent
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    # an administrator cannot hot-fix it, and sending it makes them the one who asked
    with pytest.raises(KnowledgeError, match="only add to or strengthen"):
        version_publish(actor=admin_user, version=v2, hotfix_reason="Safety alert 2026-11 x")
    version_submit(actor=admin_user, version=v2)
    with pytest.raises(KnowledgeError, match="You asked for this change"):
        version_publish(actor=admin_user, version=v2)
    # its author cannot approve it either; a third person can
    request = ApprovalRequest.objects.get(version=v2)
    with pytest.raises(KnowledgeError, match="four eyes"):
        approval_request_approve(actor=curator, request=request)
    approval_request_approve(actor=second_curator, request=request)
    assert _live().number == 2


def test_refusing_a_weakening_version_sends_it_back_to_draft(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    version_submit(actor=curator, version=v2)
    request = ApprovalRequest.objects.get(version=v2)
    approval_request_refuse(actor=second_curator, request=request, note="The label did not change")
    v2.refresh_from_db()
    assert v2.status == VersionStatus.DRAFT
    assert _live().pk == published.pk


def test_a_strengthening_edit_opens_no_request(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    v2 = unit_save_draft(actor=curator, spec=spec(KEY, **STRONGER))
    version_submit(actor=curator, version=v2)
    assert not ApprovalRequest.objects.filter(version=v2).exists()
    version_publish(actor=second_curator, version=v2)
    assert _live().number == 2


# --- hot-fix ----------------------------------------------------------------------------------


def test_a_hotfix_may_only_strengthen_and_waits_for_a_second_review(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    # a weakening hot-fix is refused with the classifier's reasons, and nothing changes
    weaker = unit_save_draft(actor=curator, spec=spec(KEY, **WEAKER))
    with pytest.raises(KnowledgeError, match="Severity lowered from critical to minor"):
        version_publish(actor=curator, version=weaker, hotfix_reason="Safety alert 2026-11 x")
    assert _live().pk == published.pk
    assert not AuditEvent.objects.filter(action="kb.version.hotfix").exists()
    # a strengthening one goes live at once, pending a second person's review
    stronger = unit_save_draft(actor=curator, spec=spec(KEY, **STRONGER))
    version_publish(actor=curator, version=stronger, hotfix_reason="Safety alert 2026-12: VEGF")
    assert _live().pk == stronger.pk
    review = ApprovalRequest.objects.get(version=stronger, kind="hotfix")
    assert (review.status, review.requested_by) == ("pending", curator)
    assert any("ramucirumab" in r for r in review.reasons)
    # the one who hot-fixed it cannot confirm it, nor withdraw the review
    with pytest.raises(KnowledgeError, match="You asked for this change"):
        approval_request_approve(actor=curator, request=review)
    with pytest.raises(KnowledgeError, match="cannot be withdrawn"):
        approval_request_withdraw(actor=curator, request=review)
    approval_request_approve(actor=second_curator, request=review, note="Checked the alert")
    review.refresh_from_db()
    assert (review.status, review.decided_by) == ("approved", second_curator)


def test_a_disputed_hotfix_stays_live(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    stronger = unit_save_draft(actor=curator, spec=spec(KEY, **STRONGER))
    version_publish(actor=curator, version=stronger, hotfix_reason="Safety alert 2026-12: VEGF")
    review = ApprovalRequest.objects.get(version=stronger, kind="hotfix")
    approval_request_refuse(actor=second_curator, request=review, note="Ramucirumab is fine")
    # taking it back would itself weaken the rule: that goes through review
    assert _live().pk == stronger.pk


# --- bulk import ------------------------------------------------------------------------------


def test_a_curators_bundle_that_weakens_a_rule_waits_for_a_second_person(
    curator: Any, second_curator: Any, published: UnitVersion
) -> None:
    result = bundle_import(actor=curator, bundle=bundle(unit(KEY, **WEAKER)))
    assert result.weakening == [KEY]
    v2 = UnitVersion.objects.get(unit__key=KEY, number=2)
    assert v2.status == VersionStatus.IN_REVIEW
    request = ApprovalRequest.objects.get(version=v2, kind="publish")
    assert request.requested_by == curator
    assert _live().pk == published.pk


def test_a_publishing_import_never_publishes_a_weakening_alone(
    admin_user: Any, curator: Any, published: UnitVersion
) -> None:
    # given an administrator's import that publishes at once: one unit weakens, one is new
    result = bundle_import(
        actor=admin_user,
        bundle=bundle(unit(KEY, **WEAKER), unit("hcc.new-alert", **STRONGER)),
        publish=True,
        reason="Quarterly guideline update 2026",
    )
    # then the new rule is live (a hot-fix, pending review) and the weakening waits
    assert (result.published, result.weakening) == (1, [KEY])
    assert _live().pk == published.pk
    assert _live("hcc.new-alert").hotfix
    assert ApprovalRequest.objects.filter(kind="hotfix", unit__key="hcc.new-alert").exists()
    waiting = ApprovalRequest.objects.get(kind="publish", unit__key=KEY)
    assert waiting.requested_by == admin_user
    # and a second person publishes it
    approval_request_approve(actor=curator, request=waiting)
    assert _live().number == 2


def test_a_bundle_without_a_published_rule_does_not_retire_it(
    admin_user: Any, published: UnitVersion
) -> None:
    bundle_import(
        actor=admin_user,
        bundle=bundle(unit("hcc.other")),
        publish=True,
        reason="Quarterly guideline update 2026",
    )
    assert _live().pk == published.pk


def test_the_system_never_publishes_a_weakening_alone(published: UnitVersion) -> None:
    v2 = unit_save_draft(actor=None, spec=spec(KEY, **WEAKER))
    with pytest.raises(KnowledgeError, match="does not publish it alone"):
        version_publish(actor=None, version=v2, hotfix_reason="seed upgrade")
    assert _live().pk == published.pk
