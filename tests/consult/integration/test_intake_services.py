"""Case intake through the services: import, export, submit, and what bad input leaves behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, transaction

from clinical.calculators import derive_all, staging_summary
from consult.models import DossierSnapshot, DossierStatus, LesionDossier, Patient
from consult.services.dossiers import (
    DossierError,
    case_import,
    dossier_export,
    dossier_submit,
    dossier_update,
)
from mdtboard.audit.models import AuditEvent
from tests.paths import REPO, public_case_files

pytestmark = pytest.mark.django_db

MALFORMED = REPO / "tests" / "consult" / "fixtures" / "malformed"


def _import(path: Path, clinician: Any, team: Any) -> Any:
    return case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)


@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_public_case_imports_and_derives_the_expected_staging(
    path: Path, clinician: Any, team: Any
) -> None:
    # when a clinician imports an evaluation case
    result = _import(path, clinician, team)
    # then it is stored as a draft dossier of their team
    assert result.ok, result.errors
    dossier = LesionDossier.objects.get(pk=result.dossier.pk)
    assert dossier.patient.team == team
    assert dossier.status == DossierStatus.DRAFT
    # and the staging derived from what was stored equals the file's expectation
    expected = json.loads(path.read_text())["expected"].get("staging", {})
    derived = staging_summary(derive_all(dossier.data))
    for key, value in expected.items():
        assert str(derived[key]).lower() == str(value).lower(), key


ADDED_FIELDS = {
    "height_cm",
    "gestational_age_weeks",
    "breastfeeding",
    "frailty",
    "g8_score",
    "hiv",
    "autoimmune_activity",
    "immunosuppression",
    "qtc_ms",
    "heart_rate_bpm",
    "stop_reason",  # diagnosis.prior_therapies[] (2026-11-24, additive)
    # diagnosis.prior_therapies[] (2026-11-27, FORMAT.md §4, additive)
    "kind",
    "intent",
    "start_date",
    "toxicity",
    # 2026-11-27 (issue 21): the facts safety gates need
    "dpd_status",
    "dpd_test",
    "ugt1a1_status",
    "prior_irae_organ",
    "prior_irae_grade",
    "prior_irae_agent",
    "prior_irae_date",
    "endoscopy_date",
    "endoscopy_varices_size",
    "endoscopy_red_signs",
    "endoscopy_varices_treated",
    "recent_bleeding_site",
    "recent_bleeding_date",
    "date",  # diagnosis.date (2026-11-27, issue 29: no lesion measured before it)
}


def _as_in_file(exported: Any, original: Any) -> Any:
    """The exported value restricted to the keys the file had, at every depth (list items
    included); a key added to the format since must come back as null."""
    if isinstance(original, dict) and isinstance(exported, dict):
        added = {k: v for k, v in exported.items() if k not in original}
        assert set(added) <= ADDED_FIELDS, sorted(added)
        assert all(v is None for v in added.values()), added
        return {k: _as_in_file(exported.get(k), v) for k, v in original.items()}
    if isinstance(original, list) and isinstance(exported, list):
        return [_as_in_file(e, o) for e, o in zip(exported, original, strict=True)]
    return exported


@pytest.mark.parametrize("path", public_case_files(), ids=lambda p: p.stem)
def test_export_round_trips_the_imported_file_exactly(
    path: Path, clinician: Any, team: Any
) -> None:
    original = json.loads(path.read_text())
    original.pop("expected")
    dossier = _import(path, clinician, team).dossier
    exported = dossier_export(actor=clinician, dossier=dossier)
    # Every value the file had comes back unchanged, in the same order; the fields added to
    # the format since the file was written (2026-11-23, additive) come back as null.
    for section, value in original.items():
        if isinstance(value, dict):
            assert _as_in_file(exported[section], value) == value, section
            assert [k for k in exported[section] if k in value] == list(value)
        else:
            assert exported[section] == value, section
    assert [k for k in exported if k in original] == list(original)
    assert AuditEvent.objects.filter(action="dossier.export", object_id=str(dossier.pk)).exists()


def _counts() -> tuple[int, int, int]:
    return Patient.objects.count(), LesionDossier.objects.count(), AuditEvent.objects.count()


@pytest.mark.parametrize("path", sorted(MALFORMED.glob("*")), ids=lambda p: p.name)
def test_malformed_file_imports_nothing(path: Path, clinician: Any, team: Any) -> None:
    # given the database as it stands
    before = _counts()
    # when a malformed or hostile file is imported
    result = _import(path, clinician, team)
    # then it is refused with errors that name the file and a JSON path, and nothing is saved
    assert not result.ok
    assert result.errors
    assert all(e.filename == path.name and e.path.startswith("$") for e in result.errors)
    assert _counts() == before


@pytest.mark.parametrize("size_mb", [10])
def test_huge_file_is_refused_by_size(size_mb: int, clinician: Any, team: Any) -> None:
    raw = b'{"format": "mdtboard.case/1", "notes": "' + b"x" * (size_mb * 1024 * 1024) + b'"}'
    before = _counts()
    result = case_import(actor=clinician, team=team, raw=raw, filename="huge.json")
    assert "MiB" in result.errors[0].message
    assert _counts() == before


def test_importing_the_same_case_twice_is_refused(clinician: Any, team: Any) -> None:
    path = public_case_files()[0]
    assert _import(path, clinician, team).ok
    before = _counts()
    again = _import(path, clinician, team)
    assert not again.ok
    assert "already has a dossier" in again.errors[0].message
    assert _counts() == before


def test_import_into_a_team_the_clinician_is_not_in_is_refused(
    clinician: Any, other_team: Any
) -> None:
    result = _import(public_case_files()[0], clinician, other_team)
    assert not result.ok
    assert "team you belong to" in result.errors[0].message
    assert not Patient.objects.exists()


def test_submit_freezes_a_hashed_snapshot_that_later_edits_do_not_touch(
    clinician: Any, team: Any
) -> None:
    # given an imported dossier, submitted
    dossier = _import(public_case_files()[3], clinician, team).dossier
    first = dossier_submit(actor=clinician, dossier=dossier)
    assert first.number == 1
    assert len(first.content_hash) == 64
    # when the clinician edits a lab value afterwards
    data = json.loads(json.dumps(dossier.data))
    data["labs"]["albumin_g_dl"] = 3.0
    dossier = dossier_update(actor=clinician, dossier=dossier, data=data)
    # then the dossier is a draft again and the snapshot still holds what was submitted
    assert dossier.status == DossierStatus.DRAFT
    first.refresh_from_db()
    assert first.data["labs"]["albumin_g_dl"] != 3.0
    # and resubmitting makes a second snapshot with another hash
    second = dossier_submit(actor=clinician, dossier=dossier)
    assert second.number == 2
    assert second.content_hash != first.content_hash
    # and the edit is audited by field name, without the value
    edit = AuditEvent.objects.get(action="dossier.edit", object_id=str(dossier.pk))
    assert edit.payload["fields"] == ["labs.albumin_g_dl"]
    assert "3.0" not in json.dumps(edit.payload)


def test_the_database_refuses_to_change_a_snapshot(clinician: Any, team: Any) -> None:
    dossier = _import(public_case_files()[0], clinician, team).dossier
    snapshot = dossier_submit(actor=clinician, dossier=dossier)
    with (
        pytest.raises(DatabaseError, match="permission denied for table consult_dossiersnapshot"),
        transaction.atomic(),
    ):
        DossierSnapshot.objects.filter(pk=snapshot.pk).update(data={})


def test_update_with_an_out_of_range_value_saves_nothing(clinician: Any, team: Any) -> None:
    dossier = _import(public_case_files()[3], clinician, team).dossier
    data = json.loads(json.dumps(dossier.data))
    data["labs"]["bilirubin_mg_dl"] = 250
    with pytest.raises(DossierError) as excinfo:
        dossier_update(actor=clinician, dossier=dossier, data=data)
    assert excinfo.value.errors[0].path == "$.labs.bilirubin_mg_dl"
    dossier.refresh_from_db()
    assert dossier.data["labs"]["bilirubin_mg_dl"] == 0.9


def test_importcase_command_imports_a_folder_and_reports_bad_files(
    clinician: Any, team: Any, tmp_path: Path, capsys: Any
) -> None:
    # given a folder with one good and one bad file
    good = public_case_files()[0]
    (tmp_path / good.name).write_bytes(good.read_bytes())
    (tmp_path / "bad.json").write_text('{"format": "mdtboard.case/1", "cancer_type": "hcc"}')
    # when the command imports the folder
    with pytest.raises(CommandError, match="1 of 2 file"):
        call_command("importcase", str(tmp_path), team=team.slug, user=clinician.email)
    # then the good file was imported and the bad one is named with its path and problem
    output = capsys.readouterr()
    assert f"imported {tmp_path / good.name}" in output.out
    assert "bad.json: $" in output.err
    assert LesionDossier.objects.count() == 1
