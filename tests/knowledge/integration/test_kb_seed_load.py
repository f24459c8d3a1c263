"""``load_kb_seed``, run by ``make run`` at every start: it adds what is new and never touches
what curators have done with a seed unit since (reviewed versions, drafts, retirements)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from clinical.rules import SourceSpec
from knowledge.models import ApprovalRequest, GuidelineSource, UnitVersion, VersionStatus
from knowledge.services import (
    approval_request_approve,
    approval_request_refuse,
    bundle_import,
    source_save,
    unit_save_draft,
    version_publish,
    version_submit,
)
from mdtboard.audit.models import AuditEvent
from tests.knowledge.kb_factory import SAFETY, SOURCE, bundle, retire, spec, unit

# Every load embeds what it publishes: the first in a run loads the embedding model.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def seed_dir(tmp_path: Path) -> Path:
    """A small seed: the shared source, and one unit in a file of its own."""
    (tmp_path / "00-sources.yaml").write_text(
        yaml.safe_dump({"format": "mdtboard.kb/1", "sources": [SOURCE], "units": []})
    )
    (tmp_path / "hcc.yaml").write_text(
        yaml.safe_dump({"format": "mdtboard.kb/1", "sources": [], "units": [unit("hcc.seed")]})
    )
    return tmp_path


def _load(seed_dir: Path) -> str:
    out = StringIO()
    call_command("load_kb_seed", dir=seed_dir, stdout=out)
    return out.getvalue()


def _versions(key: str) -> list[tuple[int, str]]:
    return list(
        UnitVersion.objects.filter(unit__key=key).order_by("number").values_list("number", "status")
    )


def _reviewed_edit(curator: Any, reviewer: Any, key: str, **overrides: Any) -> UnitVersion:
    version = unit_save_draft(actor=curator, spec=spec(key, **overrides))
    version_submit(actor=curator, version=version)
    return version_publish(actor=reviewer, version=version)


@pytest.mark.slow
def test_first_load_publishes_the_seed_and_a_second_load_changes_nothing(
    seed_dir: Path,
) -> None:
    # when the seed is loaded into an empty knowledge base
    first = _load(seed_dir)
    # then its unit is published by the system, and embedded
    assert _versions("hcc.seed") == [(1, "published")]
    assert "1 seed units (1 new, published now; 0 already present" in first
    assert "1 embedded" in first
    # and loading it again (the next start) adds nothing and says so
    again = _load(seed_dir)
    assert _versions("hcc.seed") == [(1, "published")]
    assert "(0 new, published now; 1 already present, left as they are), 0 embedded" in again


def test_reload_keeps_a_curators_reviewed_version_published(
    seed_dir: Path, curator: Any, second_curator: Any
) -> None:
    # given the seed, then a curator's reviewed and published v2 of a seed unit
    _load(seed_dir)
    v2 = _reviewed_edit(curator, second_curator, "hcc.seed", anchor="Section 6.2 (2026)")
    # when the application starts again and reloads the seed
    output = _load(seed_dir)
    # then v2 is still the published version: the seed did not overwrite it with a v3
    assert _versions("hcc.seed") == [(1, "retired"), (2, "published")]
    v2.refresh_from_db()
    assert (v2.status, v2.reviewed_by) == (VersionStatus.PUBLISHED, second_curator)
    assert "1 already present" in output
    # and the system published nothing but the seed's first load
    system_publications = AuditEvent.objects.filter(action="kb.version.publish", actor=None)
    assert [e.payload["number"] for e in system_publications] == [1]


def test_reload_does_not_revive_a_retired_seed_unit(
    seed_dir: Path, curator: Any, second_curator: Any
) -> None:
    # given a seed unit that was retired as it stood
    _load(seed_dir)
    v1 = UnitVersion.objects.get(unit__key="hcc.seed")
    retire(curator, second_curator, v1)
    _load(seed_dir)
    assert _versions("hcc.seed") == [(1, "retired")]
    # and one whose curated v2 was retired later (its content now differs from the seed's)
    v2 = _reviewed_edit(curator, second_curator, "hcc.seed", anchor="Section 6.2 (2026)")
    retire(curator, second_curator, v2)
    _load(seed_dir)
    # then the seed brings neither back
    assert _versions("hcc.seed") == [(1, "retired"), (2, "retired")]
    assert not UnitVersion.objects.filter(status=VersionStatus.PUBLISHED).exists()


def test_reload_does_not_bury_a_curators_draft(seed_dir: Path, curator: Any) -> None:
    _load(seed_dir)
    draft = unit_save_draft(actor=curator, spec=spec("hcc.seed", anchor="Section 6.3"))
    _load(seed_dir)
    # the draft stays the latest version, and the seed's v1 stays the published one
    assert _versions("hcc.seed") == [(1, "published"), (2, "draft")]
    draft.refresh_from_db()
    assert draft.status == VersionStatus.DRAFT


def test_reload_keeps_a_curators_source_edits_and_adds_new_seed_units(
    seed_dir: Path, curator: Any
) -> None:
    _load(seed_dir)
    source_save(
        actor=curator,
        spec=SourceSpec.model_validate({**SOURCE, "url": "https://example.org/v2"}),
    )
    # when a new release ships one more seed unit
    (seed_dir / "lung.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "mdtboard.kb/1",
                "sources": [],
                "units": [unit("hcc.seed-new", text="Another distinct paraphrase of a rule.")],
            }
        )
    )
    output = _load(seed_dir)
    # then the new unit is published, the existing one and the curated source are untouched
    assert _versions("hcc.seed-new") == [(1, "published")]
    assert _versions("hcc.seed") == [(1, "published")]
    assert GuidelineSource.objects.get(key=SOURCE["key"]).url == "https://example.org/v2"
    assert "2 seed units (1 new, published now; 1 already present" in output


def test_curator_imports_still_make_new_versions_of_existing_units(
    curator: Any, second_curator: Any, admin_user: Any
) -> None:
    # given a unit a curator imported and a second curator published
    bundle_import(actor=curator, bundle=bundle(unit("hcc.one")))
    version_publish(actor=second_curator, version=UnitVersion.objects.get(unit__key="hcc.one"))
    # when a curator imports a changed bundle, the change goes to review as v2
    changed = bundle(unit("hcc.one", anchor="Section 7"))
    result = bundle_import(actor=curator, bundle=changed)
    assert (result.drafts, result.unchanged) == (1, 0)
    assert _versions("hcc.one") == [(1, "published"), (2, "in_review")]
    # and an administrator's publishing import still publishes changes (flagged: their own)
    result = bundle_import(
        actor=admin_user, bundle=bundle(unit("hcc.one", anchor="Section 8")), publish=True
    )
    assert result.published == 1
    v3 = UnitVersion.objects.get(unit__key="hcc.one", number=3)
    assert (v3.status, v3.hotfix) == (VersionStatus.PUBLISHED, True)


def test_reload_brings_an_uncurated_seed_unit_to_the_corrected_seed(seed_dir: Path) -> None:
    # given a deployment that loaded the seed, and a newer release whose seed corrects a unit
    # no curator has touched (a rule that is now critical, say)
    _load(seed_dir)
    (seed_dir / "hcc.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "mdtboard.kb/1",
                "sources": [],
                "units": [unit("hcc.seed", anchor="Section 6.4 (corrected)")],
            }
        )
    )
    # when the application starts again
    output = _load(seed_dir)
    # then the corrected unit is live, published by the system, and the first one retired
    assert _versions("hcc.seed") == [(1, "retired"), (2, "published")]
    live = UnitVersion.objects.get(unit__key="hcc.seed", status=VersionStatus.PUBLISHED)
    assert live.anchor == "Section 6.4 (corrected)"
    assert live.author is None
    assert "1 uncurated seed units brought to the new seed" in output
    assert "(0 new, published now" in output
    # and a second start changes nothing more
    _load(seed_dir)
    assert _versions("hcc.seed") == [(1, "retired"), (2, "published")]


@pytest.mark.slow
def test_a_unit_the_seed_no_longer_ships_is_retired_unless_a_curator_worked_on_it(
    seed_dir: Path, curator: Any, second_curator: Any
) -> None:
    # given a seed of three units, one of which a curator has since edited
    (seed_dir / "hcc.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "mdtboard.kb/1",
                "sources": [],
                "units": [unit("hcc.seed"), unit("hcc.renamed"), unit("hcc.curated")],
            }
        )
    )
    _load(seed_dir)
    _reviewed_edit(curator, second_curator, "hcc.curated", title="Edited by the curators")
    # when a newer seed renames one unit and drops the curated one
    (seed_dir / "hcc.yaml").write_text(
        yaml.safe_dump(
            {
                "format": "mdtboard.kb/1",
                "sources": [],
                "units": [unit("hcc.seed"), unit("hcc.new-name")],
            }
        )
    )
    out = _load(seed_dir)
    # then the old name is retired (plans stop offering it beside its successor), audited
    assert _versions("hcc.renamed") == [(1, "retired")]
    assert _versions("hcc.new-name") == [(1, "published")]
    assert "1 uncurated units the seed no longer ships retired (hcc.renamed)" in out
    assert AuditEvent.objects.filter(
        action="kb.version.retire", payload__unit="hcc.renamed"
    ).exists()
    # and the unit a curator worked on stays as the curators keep it
    assert [status for _, status in _versions("hcc.curated")][-1] == "published"


# --- an operator's seed upgrade never weakens a safety rule alone ------------------------------

SAFETY_SEED = unit("hcc.seed-alert", **SAFETY)


def _write_seed(seed_dir: Path, *units: dict[str, Any]) -> None:
    (seed_dir / "hcc.yaml").write_text(
        yaml.safe_dump({"format": "mdtboard.kb/1", "sources": [], "units": list(units)})
    )


def test_a_seed_upgrade_that_weakens_a_safety_rule_waits_for_a_curator(
    seed_dir: Path, curator: Any
) -> None:
    # given a deployment whose seed published an uncurated safety rule
    _write_seed(seed_dir, SAFETY_SEED)
    _load(seed_dir)
    # when a newer release's seed lowers its severity
    weaker = unit(
        "hcc.seed-alert", **{**SAFETY, "action": {**SAFETY["action"], "severity": "minor"}}
    )
    _write_seed(seed_dir, weaker)
    output = _load(seed_dir)
    # then the seed's v1 stays live, v2 waits in review with the system's request, and says so
    assert _versions("hcc.seed-alert") == [(1, "published"), (2, "in_review")]
    request = ApprovalRequest.objects.get(unit__key="hcc.seed-alert", kind="publish")
    assert request.requested_by is None
    assert any("Severity lowered" in r for r in request.reasons)
    assert "1 seed changes weaken a published safety rule" in output
    # and the next start asks nothing more
    _load(seed_dir)
    assert ApprovalRequest.objects.filter(unit__key="hcc.seed-alert").count() == 1
    # when a curator approves it, it is published
    approval_request_approve(actor=curator, request=request)
    assert _versions("hcc.seed-alert") == [(1, "retired"), (2, "published")]


def test_a_safety_rule_the_seed_no_longer_ships_is_retired_only_with_approval(
    seed_dir: Path, curator: Any, second_curator: Any
) -> None:
    # given a seed with a safety rule no curator touched
    _write_seed(seed_dir, unit("hcc.seed"), SAFETY_SEED)
    _load(seed_dir)
    # when a newer seed no longer ships it
    _write_seed(seed_dir, unit("hcc.seed"))
    output = _load(seed_dir)
    # then it stays published, its retirement asked for by the system, once
    assert _versions("hcc.seed-alert") == [(1, "published")]
    assert "1 safety units the seed no longer ships stay published" in output
    _load(seed_dir)
    request = ApprovalRequest.objects.get(unit__key="hcc.seed-alert", kind="retire")
    assert (request.requested_by, request.status) == (None, "pending")
    # a refusal stands: the next start does not ask again
    approval_request_refuse(actor=curator, request=request, note="Still in the 2026 label")
    _load(seed_dir)
    assert ApprovalRequest.objects.filter(unit__key="hcc.seed-alert").count() == 1
    assert _versions("hcc.seed-alert") == [(1, "published")]
