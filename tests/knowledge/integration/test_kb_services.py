"""Knowledge-base workflow: immutable versions, diffs, four eyes, hot-fix, retrieval."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import DatabaseError, transaction

from knowledge.models import UnitEmbedding, UnitVersion, VersionStatus
from knowledge.selectors import arbitrate, unit_search
from knowledge.services import (
    KnowledgeError,
    bundle_export,
    bundle_import,
    bundle_parse,
    unit_save_draft,
    version_publish,
    version_submit,
    versions_embed,
)
from mdtboard.audit.models import AuditEvent
from mdtboard.core.dbroles import database_owner
from tests.knowledge.kb_factory import SAFETY, SOURCE, bundle, retire, spec, unit

pytestmark = pytest.mark.django_db


@pytest.fixture
def sourced(curator: Any) -> None:
    bundle_import(actor=curator, bundle=bundle())


def _published(curator: Any, reviewer: Any, key: str, **overrides: Any) -> UnitVersion:
    version = unit_save_draft(actor=curator, spec=spec(key, **overrides))
    version_submit(actor=curator, version=version)
    return version_publish(actor=reviewer, version=version)


def test_edit_creates_a_new_version_with_a_diff(curator: Any, sourced: None) -> None:
    # given a unit's first draft
    first = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    # when the curator edits the anchor
    second = unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.2"))
    # then there are two versions, the second with a diff naming the change
    assert (first.number, second.number) == (1, 2)
    assert first.content_hash != second.content_hash
    assert '-  "anchor": "Section 6.1"' in second.diff
    assert '+  "anchor": "Section 6.2"' in second.diff
    # and an identical edit is refused rather than stored twice
    with pytest.raises(KnowledgeError, match="Nothing changed"):
        unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.2"))


def test_publishing_needs_a_second_curator(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    version = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    version_submit(actor=curator, version=version)
    # the author cannot publish their own version
    with pytest.raises(KnowledgeError, match="four eyes"):
        version_publish(actor=curator, version=version)
    version.refresh_from_db()
    assert version.status == VersionStatus.IN_REVIEW
    # a second curator can
    version_publish(actor=second_curator, version=version)
    version.refresh_from_db()
    assert version.status == VersionStatus.PUBLISHED
    assert version.reviewed_by == second_curator
    assert not version.hotfix


def test_hotfix_publishes_at_once_and_is_flagged_and_audited(curator: Any, sourced: None) -> None:
    version = unit_save_draft(
        actor=curator,
        spec=spec(
            "hcc.alert",
            kind="contraindication",
            action={
                "type": "safety",
                "gate": "varices",
                "agents": ["bevacizumab"],
                "severity": "critical",
                "effect": "remove",
                "advice": "Treat varices before bevacizumab.",
            },
        ),
    )
    with pytest.raises(KnowledgeError, match="hot-fix needs a reason"):
        version_publish(actor=curator, version=version)
    version_publish(actor=curator, version=version, hotfix_reason="Safety alert 2026-11")
    version.refresh_from_db()
    assert version.status == VersionStatus.PUBLISHED
    assert version.hotfix
    event = AuditEvent.objects.get(action="kb.version.hotfix")
    assert event.payload["reason"] == "Safety alert 2026-11"


@pytest.mark.parametrize("status", ["draft", "in_review"])
def test_a_curator_cannot_hotfix_a_unit_that_is_not_a_safety_unit(
    curator: Any, status: str, sourced: None
) -> None:
    # given a curator's own therapy step (not a safety alert)
    version = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    if status == "in_review":
        version_submit(actor=curator, version=version)
    # when they try to publish it themselves as a hot-fix, with a proper reason
    with pytest.raises(KnowledgeError, match="Only safety units"):
        version_publish(
            actor=curator, version=version, hotfix_reason="Safety alert 2026-11: bleeding"
        )
    # then it waits for a second curator, and nothing was audited as published
    version.refresh_from_db()
    assert version.status == status
    assert not AuditEvent.objects.filter(action__in=["kb.version.hotfix", "kb.version.publish"])


@pytest.mark.parametrize(
    "reason",
    ["x", "urgent", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "asdf asdf asdf asdf asdf", "   .   "],
)
def test_a_hotfix_needs_a_substantive_reason(curator: Any, reason: str, sourced: None) -> None:
    # given a curator's own safety unit
    version = unit_save_draft(actor=curator, spec=spec("hcc.alert", **SAFETY))
    # when the hot-fix reason is a token, filler or repeated characters
    with pytest.raises(KnowledgeError, match="hot-fix"):
        version_publish(actor=curator, version=version, hotfix_reason=reason)
    # then it stays a draft
    version.refresh_from_db()
    assert version.status == VersionStatus.DRAFT
    assert not AuditEvent.objects.filter(action="kb.version.hotfix").exists()


def test_a_curator_cannot_hotfix_publish_someone_elses_draft(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    # given a curator's draft, never sent to review
    draft = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    # when another curator tries to publish it, even as a hot-fix with a reason
    for reason in ("", "Safety alert 2026-11"):
        with pytest.raises(KnowledgeError, match="Only its author or an administrator"):
            version_publish(actor=second_curator, version=draft, hotfix_reason=reason)
    # then it stays a draft, and nothing was audited as published
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT
    assert not AuditEvent.objects.filter(action__in=["kb.version.hotfix", "kb.version.publish"])


def test_an_admin_may_hotfix_someone_elses_draft_only_flagged_with_a_reason(
    curator: Any, any_admin: Any, sourced: None
) -> None:
    draft = unit_save_draft(actor=curator, spec=spec("hcc.resection"))
    with pytest.raises(KnowledgeError, match="hot-fix needs a reason"):
        version_publish(actor=any_admin, version=draft)
    version_publish(actor=any_admin, version=draft, hotfix_reason="Safety alert 2026-12")
    draft.refresh_from_db()
    assert (draft.status, draft.hotfix, draft.hotfix_reason, draft.reviewed_by) == (
        VersionStatus.PUBLISHED,
        True,
        "Safety alert 2026-12",
        any_admin,
    )


def test_an_admin_publishing_their_own_version_is_a_flagged_hotfix(
    admin_user: Any, sourced: None
) -> None:
    # given an administrator's own version in review
    version = unit_save_draft(actor=admin_user, spec=spec("hcc.resection"))
    version_submit(actor=admin_user, version=version)
    # when they publish it themselves without a reason: four eyes, as for any curator
    with pytest.raises(KnowledgeError, match="four eyes"):
        version_publish(actor=admin_user, version=version)
    version.refresh_from_db()
    assert version.status == VersionStatus.IN_REVIEW
    # and with a reason it goes live flagged and audited as a hot-fix, not as a review
    version_publish(actor=admin_user, version=version, hotfix_reason="Safety alert 2026-13")
    version.refresh_from_db()
    assert (version.status, version.hotfix) == (VersionStatus.PUBLISHED, True)
    assert AuditEvent.objects.get(action="kb.version.hotfix").payload["reason"] == (
        "Safety alert 2026-13"
    )
    assert not AuditEvent.objects.filter(action="kb.version.publish").exists()


def test_someone_elses_version_in_review_is_a_normal_publication(
    curator: Any, second_curator: Any, admin_user: Any, sourced: None
) -> None:
    # a second curator (even through the hot-fix form, with a reason) and an administrator
    # publish a version in review as reviewers: not flagged
    for key, reviewer, reason in (
        ("hcc.one", second_curator, "Safety alert 2026-14"),
        ("hcc.two", admin_user, ""),
    ):
        version = unit_save_draft(actor=curator, spec=spec(key))
        version_submit(actor=curator, version=version)
        version_publish(actor=reviewer, version=version, hotfix_reason=reason)
        version.refresh_from_db()
        assert (version.status, version.hotfix, version.reviewed_by) == (
            VersionStatus.PUBLISHED,
            False,
            reviewer,
        )
    assert AuditEvent.objects.filter(action="kb.version.publish").count() == 2
    assert not AuditEvent.objects.filter(action="kb.version.hotfix").exists()


def test_a_stale_version_in_review_cannot_roll_the_unit_back(
    curator: Any, second_curator: Any, admin_user: Any, sourced: None
) -> None:
    # given v1 in review, then a newer v2 hot-fixed by its author while v1 waited
    v1 = unit_save_draft(actor=curator, spec=spec("hcc.resection", **SAFETY))
    version_submit(actor=curator, version=v1)
    v2 = unit_save_draft(actor=curator, spec=spec("hcc.resection", anchor="Section 6.2", **SAFETY))
    version_publish(actor=curator, version=v2, hotfix_reason="Safety alert 2026-15")
    # when a reviewer (or an administrator) publishes the stale v1
    for reviewer in (second_curator, admin_user):
        with pytest.raises(KnowledgeError, match="v1 is older than v2, which has already been"):
            version_publish(actor=reviewer, version=v1)
    # then v2 stays published and v1 waits
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (VersionStatus.IN_REVIEW, VersionStatus.PUBLISHED)
    # and once v2 is retired, v1 still cannot bring back the content v2 superseded
    retire(curator, second_curator, v2, reason="withdrawn")
    with pytest.raises(KnowledgeError, match="older than v2"):
        version_publish(actor=second_curator, version=v1)
    v1.refresh_from_db()
    assert v1.status == VersionStatus.IN_REVIEW


def test_publishing_a_new_version_retires_the_old_one(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    first = _published(curator, second_curator, "hcc.resection")
    second = _published(curator, second_curator, "hcc.resection", anchor="Section 6.2")
    first.refresh_from_db()
    assert first.status == VersionStatus.RETIRED
    assert second.status == VersionStatus.PUBLISHED
    assert UnitVersion.objects.filter(unit__key="hcc.resection", status="published").count() == 1


def test_database_refuses_to_change_a_published_version(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    version = _published(curator, second_curator, "hcc.resection")
    # content and deletion: the app's database role has no privilege for either
    denied = "permission denied for table knowledge_unitversion"
    with pytest.raises(DatabaseError, match=denied), transaction.atomic():
        UnitVersion.objects.filter(pk=version.pk).update(text="rewritten after publication")
    with pytest.raises(DatabaseError, match=denied), transaction.atomic():
        UnitVersion.objects.filter(pk=version.pk).delete()
    # the review state: the role may write it, the trigger allows only forward moves
    with pytest.raises(DatabaseError, match="only be retired"), transaction.atomic():
        UnitVersion.objects.filter(pk=version.pk).update(status="draft")
    retire(curator, second_curator, version, reason="superseded by 2026 update")
    version.refresh_from_db()
    assert version.status == VersionStatus.RETIRED


@pytest.mark.django_db(transaction=True)
def test_the_trigger_refuses_content_changes_even_to_the_owner(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    # given a published version and a session as the table's owner (which has the privileges)
    version = _published(curator, second_curator, "hcc.resection")
    versions = UnitVersion.objects.filter(pk=version.pk)
    # when the owner rewrites or deletes it, then the trigger refuses
    with database_owner():
        with pytest.raises(DatabaseError, match="immutable"):
            versions.update(text="rewritten after publication")
        with pytest.raises(DatabaseError, match="never deleted"):
            versions.delete()


def test_clinicians_cannot_change_the_knowledge_base(clinician: Any, sourced: None) -> None:
    with pytest.raises(KnowledgeError, match="Only curators"):
        unit_save_draft(actor=clinician, spec=spec("hcc.resection"))


def test_bundle_with_errors_imports_nothing(curator: Any) -> None:
    good = unit("hcc.one")
    bad = unit("hcc.two", grade={"system": "EASL", "native": "x", "ordinal": 9})
    raw = json.dumps({"format": "mdtboard.kb/1", "sources": [SOURCE], "units": [good, bad]})
    parsed, errors = bundle_parse(raw.encode(), filename="kb.json")
    assert parsed is None
    assert errors[0].where == "kb.json: units.1.grade.ordinal"
    assert UnitVersion.objects.count() == 0


def test_bundle_reimport_of_unchanged_units_adds_no_versions(curator: Any) -> None:
    first = bundle_import(actor=curator, bundle=bundle(unit("hcc.one"), unit("hcc.two")))
    again = bundle_import(actor=curator, bundle=bundle(unit("hcc.one"), unit("hcc.two")))
    assert (first.drafts, again.drafts, again.unchanged) == (2, 0, 2)


def test_a_published_bundle_queues_its_embeddings_in_a_few_tasks_after_commit(
    admin_user: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge import services, tasks

    queued: list[list[int]] = []
    monkeypatch.setattr(tasks.versions_embed_task, "delay", queued.append)
    monkeypatch.setattr(services, "EMBED_TASK_SIZE", 2)
    units = [unit(f"hcc.unit-{i}", text=f"Distinct paraphrase number {i}.") for i in range(5)]
    with django_capture_on_commit_callbacks(execute=True):
        result = bundle_import(
            actor=admin_user,
            bundle=bundle(*units),
            publish=True,
            reason="test bundle published at once",
        )
        assert queued == []  # nothing reaches the worker before the import commits
    # then every published version is queued once, in tasks of at most EMBED_TASK_SIZE
    published = set(
        UnitVersion.objects.filter(status=VersionStatus.PUBLISHED).values_list("pk", flat=True)
    )
    assert result.published == 5
    assert [len(ids) for ids in queued] == [2, 2, 1]
    assert {pk for ids in queued for pk in ids} == published


def test_export_of_published_units_reimports_to_the_same_content(
    curator: Any, second_curator: Any, sourced: None
) -> None:
    _published(curator, second_curator, "hcc.resection")
    exported = bundle_export()
    parsed, errors = bundle_parse(json.dumps(exported).encode(), filename="x.json")
    assert not errors
    assert parsed is not None
    assert parsed.units[0].key == "hcc.resection"


# --- retrieval ----------------------------------------------------------------------------

VARICES = {
    "kind": "contraindication",
    "title": "Bevacizumab with untreated varices",
    "text": "Large oesophageal varices must be treated before any bevacizumab-containing "
    "regimen because of the bleeding risk.",
    "context": {
        "all": [{"fact": "organ_function.varices", "op": "eq", "value": "large_untreated"}]
    },
    "action": {
        "type": "safety",
        "gate": "varices",
        "agents": ["bevacizumab"],
        "severity": "critical",
        "effect": "remove",
        "advice": "Band ligation or beta-blocker first.",
    },
}
ATEZO_BEV = {
    "title": "Atezolizumab plus bevacizumab first line",
    "text": "Atezolizumab combined with bevacizumab is a first-line systemic therapy for "
    "advanced hepatocellular carcinoma with preserved liver function.",
    "context": {"all": [{"fact": "derived.bclc", "op": "eq", "value": "C"}]},
    "action": {
        "type": "therapy",
        "modality": "systemic",
        "description": "Atezolizumab + bevacizumab",
        "agents": ["atezolizumab", "bevacizumab"],
        "intent": "palliative",
    },
}


@pytest.fixture
def retrievable(curator: Any, second_curator: Any, sourced: None) -> None:
    _published(curator, second_curator, "hcc.resection")
    _published(curator, second_curator, "hcc.varices-bevacizumab", **VARICES)
    _published(curator, second_curator, "hcc.atezo-bev", **ATEZO_BEV)
    _published(
        curator,
        second_curator,
        "lung.osimertinib",
        cancer_type="lung_adenocarcinoma",
        title="Osimertinib for EGFR-mutant NSCLC",
        text="Osimertinib is preferred "
        "first line for advanced NSCLC with EGFR exon 19 deletion or L858R.",
        context={},
        action={
            "type": "therapy",
            "modality": "systemic",
            "description": "Osimertinib",
            "agents": ["osimertinib"],
            "intent": "palliative",
        },
    )
    versions_embed(version_ids=list(UnitVersion.objects.values_list("pk", flat=True)))


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_published_versions_get_embeddings(retrievable: None) -> None:
    assert UnitEmbedding.objects.count() == 4
    assert UnitEmbedding.objects.first().provider == "local:all-MiniLM-L6-v2"


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_search_returns_provenance_and_filters_by_cancer_type(retrievable: None) -> None:
    hits = unit_search(query="bleeding risk from varices with anti-VEGF", cancer_type="hcc")
    assert hits[0].unit_key == "hcc.varices-bevacizumab"
    assert all(h.cancer_type in ("hcc", "any") for h in hits)
    unit_key, anchor, version = hits[0].provenance
    assert (unit_key, anchor) == ("hcc.varices-bevacizumab", "Section 6.1")
    assert version.startswith("v1:")
    assert hits[0].grade_native == "LoE 2, strong"
    assert "Test Society" in hits[0].source


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_search_sees_published_versions_only(curator: Any, retrievable: None) -> None:
    unit_save_draft(
        actor=curator,
        spec=spec(
            "hcc.draft-only",
            title="Draft yttrium radioembolisation",
            text="Radioembolisation draft text not yet reviewed.",
        ),
    )
    hits = unit_search(query="yttrium radioembolisation draft", cancer_type="hcc", k=20)
    assert "hcc.draft-only" not in {h.unit_key for h in hits}


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_keyword_mode_finds_drug_names_and_hybrid_fuses(retrievable: None) -> None:
    keyword = unit_search(query="osimertinib", mode="keyword")
    assert [h.unit_key for h in keyword] == ["lung.osimertinib"]
    assert keyword[0].keyword == 1.0
    hybrid = unit_search(query="osimertinib", cancer_type="lung_adenocarcinoma")
    assert hybrid[0].unit_key == "lung.osimertinib"
    assert hybrid[0].score == pytest.approx(
        0.8 * hybrid[0].dense + 0.2 * hybrid[0].keyword, abs=1e-3
    )


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_search_with_a_case_drops_units_that_do_not_apply(retrievable: None) -> None:
    case = {"cancer_type": "hcc", "organ_function": {"varices": "none"}}
    hits = unit_search(query="bevacizumab varices", cancer_type="hcc", case=case, k=10)
    assert "hcc.varices-bevacizumab" not in {h.unit_key for h in hits}
    unknown = unit_search(
        query="bevacizumab varices", cancer_type="hcc", case={"cancer_type": "hcc"}, k=10
    )
    hit = next(h for h in unknown if h.unit_key == "hcc.varices-bevacizumab")
    assert hit.applies is None  # varices not recorded: unknown, kept, never assumed


@pytest.mark.slow  # embeds: the first in a run loads the embedding model
def test_arbitration_puts_safety_first_and_records_the_decision(retrievable: None) -> None:
    hits = unit_search(query="atezolizumab bevacizumab varices", cancer_type="hcc", k=10)
    result = arbitrate(hits)
    assert result.hits[0].unit_key == "hcc.varices-bevacizumab"
    decision = result.decisions[0]
    assert decision.winner == "hcc.varices-bevacizumab"
    assert decision.losers == ("hcc.atezo-bev",)
    assert decision.agents == ("bevacizumab",)
