"""Backups: `manage.py backup` and `manage.py restore` round-trip the real test database."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from consult.models import Consultation, ConsultationEvent, LesionDossier, Patient
from knowledge.models import KnowledgeUnit
from mdtboard.audit.anchor import anchor_read
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_record, audit_verify
from tests.fixtures.audit import anchor_current_head
from tests.fixtures.isolation import database_name
from tests.paths import REPO
from tests.stack import child_env

# pg_restore replaces every table: it cannot run inside a test's transaction.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def anchor_file(settings: Any, tmp_path: Path) -> Path:
    settings.AUDIT_ANCHOR_PATH = str(tmp_path / "audit-anchor.json")
    anchor_current_head()
    return tmp_path / "audit-anchor.json"


def submitted(clinician: Any, team: Any, name: str) -> LesionDossier:
    from consult.services.dossiers import case_import, dossier_submit

    path = REPO / "tests" / "cases" / name
    result = case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)
    assert result.dossier is not None, result.errors
    dossier_submit(actor=clinician, dossier=result.dossier)
    return result.dossier


@pytest.fixture
def finished(clinician: Any, team: Any) -> Consultation:
    """A consultation with a saved board event, and a knowledge unit: rows in every table the
    manifest counts (made directly: running the engine on the seed takes most of a minute)."""
    from consult.services.consultations import consultation_start

    KnowledgeUnit.objects.create(key="test.unit", kind="therapy_step", cancer_type="hcc")
    dossier = submitted(clinician, team, "hcc-03.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    ConsultationEvent.objects.create(consultation=consultation, seq=1, kind="status", payload={})
    return consultation


def backup(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    out = StringIO()
    call_command("backup", "--output", str(tmp_path / "b.dump"), stdout=out, stderr=StringIO())
    path = Path(out.getvalue().strip())
    return path, json.loads(path.with_name(path.name + ".json").read_text())


def restore(path: Path, *args: str) -> str:
    out = StringIO()
    call_command("restore", str(path), *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_backup_restore_round_trip_brings_the_data_back_and_the_chain_verifies(
    finished: Any, clinician: Any, team: Any, anchor_file: Path, tmp_path: Path
) -> None:
    # given a finished consultation, its knowledge base and its audit trail, backed up
    audit_record(action="test.before_backup", actor=clinician)
    patient = finished.dossier.patient
    head = AuditEvent.objects.order_by("-id").first()
    audit_events = AuditEvent.objects.count()
    path, manifest = backup(tmp_path)
    # then the manifest describes the dump and the data in it
    assert manifest["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert manifest["size"] == path.stat().st_size
    assert manifest["database"] == database_name()
    assert manifest["server_version"].startswith("18")
    assert manifest["row_counts"] == {
        "dossiers": 1,
        "consultations": 1,
        "events": ConsultationEvent.objects.count(),
        "audit_events": audit_events,
        "kb_units": KnowledgeUnit.objects.count(),
    }
    assert manifest["row_counts"]["events"] > 0
    assert manifest["row_counts"]["kb_units"] > 0
    assert manifest["audit_chain_head"] == {"event_id": head.pk, "hash": head.hash}
    # and the backup itself is on the audit log, after the head it holds
    logged = AuditEvent.objects.order_by("-id").first()
    assert (logged.action, logged.payload["file"]) == ("database.backup", path.name)
    # when the data changes afterwards (an edit, a new dossier, more audited events: the
    # anchor outside the database moves past the backup's head)
    Patient.objects.filter(pk=patient.pk).update(age_years=99)
    submitted(clinician, team, "breast-01.json")
    audit_record(action="test.after_backup", actor=clinician)
    assert anchor_read().event_id > head.pk
    # and the backup is restored
    output = restore(path, "--yes")
    # then the data is as it was at the backup
    patient.refresh_from_db()
    assert patient.age_years != 99
    assert list(LesionDossier.objects.values_list("pk", flat=True)) == [finished.dossier.pk]
    assert Consultation.objects.get().status == finished.status
    assert not AuditEvent.objects.filter(action="test.after_backup").exists()
    assert "dossiers: 1 (backup: 1)" in output
    assert "MISMATCH" not in output
    # and the audit chain continues from the restored head with the restore recorded
    restored = AuditEvent.objects.order_by("-id").first()
    assert restored.action == "database.restored"
    assert restored.prev_hash == head.hash
    assert restored.payload["file"] == path.name
    assert restored.payload["chain_head"] == head.hash
    assert AuditEvent.objects.count() == manifest["row_counts"]["audit_events"] + 1
    assert audit_verify().ok
    assert anchor_read().event_id == restored.pk
    # and the anchor the restore went back from is kept, not destroyed
    kept = list(tmp_path.glob("audit-anchor.json.before-restore-*"))
    assert len(kept) == 1
    assert json.loads(kept[0].read_text())["event_id"] > head.pk


def test_restore_refuses_a_damaged_dump_and_changes_nothing(clinician: Any, tmp_path: Path) -> None:
    # given a backup whose dump was altered after it was made, and data written since
    path, _ = backup(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    later = audit_record(action="test.after_backup", actor=clinician)
    # when it is restored
    with pytest.raises(CommandError, match="checksum mismatch"):
        restore(path, "--yes")
    # then nothing was restored
    assert AuditEvent.objects.order_by("-id").first() == later
    assert not AuditEvent.objects.filter(action="database.restored").exists()


@pytest.mark.parametrize("typed", [None, "mdtboard"])
def test_restore_without_yes_is_refused(
    clinician: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str | None
) -> None:
    # given a good backup and data written since
    path, _ = backup(tmp_path)
    later = audit_record(action="test.after_backup", actor=clinician)
    if typed is not None:
        # someone at a terminal types a name that is not the test database's
        monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
        monkeypatch.setattr("builtins.input", lambda prompt: typed)
    # when restore runs without --yes
    with pytest.raises(CommandError, match="refused: restoring replaces all data"):
        restore(path)
    # then nothing was restored
    assert AuditEvent.objects.order_by("-id").first() == later


def test_restore_after_typing_the_database_name(
    clinician: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a backup and an event written since
    path, _ = backup(tmp_path)
    audit_record(action="test.after_backup", actor=clinician)
    # when someone at a terminal confirms with the database's name
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: database_name())
    restore(path)
    # then the backup is restored
    assert not AuditEvent.objects.filter(action="test.after_backup").exists()
    assert AuditEvent.objects.order_by("-id").first().action == "database.restored"


def test_restore_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    # when the command is run on a file that does not exist
    missing = tmp_path / "nothing.dump"
    result = subprocess.run(
        [sys.executable, "manage.py", "restore", str(missing), "--yes"],
        cwd=REPO,
        env=child_env(database_name()),
        capture_output=True,
        text=True,
        check=False,
    )
    # then it fails with one clear line
    assert result.returncode == 1
    assert result.stderr.strip() == f"CommandError: no backup file at {missing}"


def test_backup_says_clearly_when_pg_dump_is_missing(settings: Any, tmp_path: Path) -> None:
    # given a real server (not the embedded one) and client tools that are not there
    settings.DATABASE_EMBEDDED = False
    settings.PG_BIN = str(tmp_path)
    # when a backup is asked for
    with pytest.raises(CommandError, match=r"pg_dump not found.*PG_BIN"):
        backup(tmp_path)
    # then no file was written
    assert not list(tmp_path.iterdir())


# --- report files (issue 26) --------------------------------------------------------------------


def _rendered_report(consultation: Any, user: Any, media: Path, content: bytes) -> Any:
    """A finished report as report_render leaves it: the PDF under MEDIA_ROOT, its hash on
    its row (rendering a real PDF here would only add WeasyPrint's seconds)."""
    from consult.review.models import PlanReport, ReportStatus

    report = PlanReport.objects.create(
        consultation=consultation, plan_number=1, plan_hash="0" * 64, requested_by=user
    )
    relative = f"reports/{consultation.pk}/report-{report.pk}.pdf"
    (media / relative).parent.mkdir(parents=True, exist_ok=True)
    (media / relative).write_bytes(content)
    PlanReport.objects.filter(pk=report.pk).update(
        status=ReportStatus.DONE,
        path=relative,
        size_bytes=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
    )
    return relative


def test_report_files_are_backed_up_and_restored_with_their_hashes_checked(
    finished: Any, clinician: Any, anchor_file: Path, tmp_path: Path, settings: Any
) -> None:
    # given a finished report whose PDF is on disk
    settings.MEDIA_ROOT = str(tmp_path / "media")
    media = Path(settings.MEDIA_ROOT)
    pdf = b"%PDF-1.7 the MDT report\n"
    relative = _rendered_report(finished, clinician, media, pdf)
    # when the database is backed up
    path, manifest = backup(tmp_path)
    # then the report file is in an archive beside the dump, named with its hash
    archive = path.with_name(path.name + ".reports.tar")
    assert archive.is_file()
    assert manifest["reports"]["files"] == {relative: hashlib.sha256(pdf).hexdigest()}
    assert manifest["reports"]["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    # when the media disk is lost and the backup restored
    (media / relative).unlink()
    output = restore(path, "--yes")
    # then the report is back, byte for byte
    assert (media / relative).read_bytes() == pdf
    assert "report files restored, each matching its hash: 1" in output
    assert "without their file" not in output


def test_restore_refuses_an_altered_report_archive_and_changes_nothing(
    finished: Any, clinician: Any, tmp_path: Path, settings: Any
) -> None:
    # given a backup whose report archive was altered afterwards, and data written since
    settings.MEDIA_ROOT = str(tmp_path / "media")
    _rendered_report(finished, clinician, Path(settings.MEDIA_ROOT), b"%PDF report\n")
    path, _ = backup(tmp_path)
    archive = path.with_name(path.name + ".reports.tar")
    raw = bytearray(archive.read_bytes())
    raw[600] ^= 0xFF
    archive.write_bytes(bytes(raw))
    later = audit_record(action="test.after_backup", actor=clinician)
    # when it is restored, then it is refused before the database is touched
    with pytest.raises(CommandError, match=r"report archive .* does not match"):
        restore(path, "--yes")
    assert AuditEvent.objects.order_by("-id").first() == later


def test_a_report_file_that_no_longer_matches_its_hash_is_not_backed_up_silently(
    finished: Any, clinician: Any, tmp_path: Path, settings: Any
) -> None:
    # given a report whose file was changed on disk after it was rendered
    settings.MEDIA_ROOT = str(tmp_path / "media")
    media = Path(settings.MEDIA_ROOT)
    relative = _rendered_report(finished, clinician, media, b"%PDF original\n")
    (media / relative).write_bytes(b"%PDF something else\n")
    # when the database is backed up
    err = StringIO()
    call_command("backup", "--output", str(tmp_path / "b.dump"), stdout=StringIO(), stderr=err)
    # then the backup says so, and the manifest lists it as unavailable, not as backed up
    assert "not backed up (hash mismatch)" in err.getvalue()
    manifest = json.loads((tmp_path / "b.dump.json").read_text())
    assert manifest["reports"]["files"] == {}
    assert [r["reason"] for r in manifest["reports"]["unavailable"]] == ["hash mismatch"]
