"""Backups: a pg_dump of the configured database with a manifest, and its checked restore."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, connections, transaction

from mdtboard import __version__, embedded
from mdtboard.audit.anchor import Anchor, AnchorUnreadable, anchor_read, anchor_reset
from mdtboard.audit.models import AuditEvent
from mdtboard.audit.services import audit_chain_check, audit_record
from mdtboard.core.dbroles import app_role_grant, database_owner

MANIFEST_FORMAT = "mdtboard.backup/1"
# The tables whose row counts a manifest keeps, to compare after a restore.
KEY_TABLES = {
    "dossiers": "consult.LesionDossier",
    "consultations": "consult.Consultation",
    "events": "consult.ConsultationEvent",
    "audit_events": "audit.AuditEvent",
    "kb_units": "knowledge.KnowledgeUnit",
}
# A restore waits this long for a table another session has locked, then gives up whole.
RESTORE_LOCK_TIMEOUT = "30s"

NO_DUMP = "no backup file at {path}"
NO_MANIFEST = "no manifest {path} beside the backup: its checksum cannot be checked"
BAD_MANIFEST = "the manifest {path} is not an mdtboard backup manifest"
CHECKSUM_MISMATCH = (
    "checksum mismatch: {path} does not match its manifest (damaged or altered); nothing restored"
)
BAD_REPORTS = (
    "the report archive {path} does not match its manifest (damaged or altered); nothing restored"
)
NO_REPORTS = "the report archive {path} the manifest names is missing; nothing restored"
NO_TOOL = (
    "{tool} not found: install the PostgreSQL client tools of the server's major version "
    "or set PG_BIN to their directory"
)


class BackupError(Exception):
    """A backup or restore that cannot go on; the message is one line for the operator."""


@dataclass(frozen=True)
class BackupResult:
    path: Path
    manifest_path: Path
    manifest: dict[str, Any]

    @property
    def reports_unavailable(self) -> list[dict[str, Any]]:
        return list((self.manifest.get("reports") or {}).get("unavailable") or [])


@dataclass(frozen=True)
class RestoreResult:
    manifest: dict[str, Any]
    row_counts: dict[str, int]
    chain_head: Anchor | None
    previous_anchor_kept: Path | None
    reports_restored: int = 0
    reports_missing: tuple[int, ...] = ()

    @property
    def mismatched(self) -> list[str]:
        expected = self.manifest["row_counts"]
        return [name for name, count in self.row_counts.items() if expected.get(name) != count]


def manifest_path_for(dump: Path) -> Path:
    return dump.with_name(dump.name + ".json")


def reports_path_for(dump: Path) -> Path:
    return dump.with_name(dump.name + ".reports.tar")


def backup_create(*, output: Path | None = None) -> BackupResult:
    """Dump the configured database (``pg_dump -Fc``) and write its manifest beside it.

    The row counts and the audit chain head are read in the very snapshot pg_dump dumps, so
    the manifest describes exactly the file even while the app keeps writing. Runs as the
    database owner (mdtboard.core.dbroles), who can read everything pg_dump needs.
    """
    with database_owner():
        return _backup_create(output=output)


def _backup_create(*, output: Path | None) -> BackupResult:
    now = datetime.now(UTC)
    path = output or Path(settings.BACKUP_DIR) / f"mdtboard-{now:%Y%m%dT%H%M%SZ}.dump"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    pg_dump = _tool("pg_dump")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SELECT pg_export_snapshot(), current_setting('server_version')")
            snapshot, server_version = cursor.fetchone()
        counts = _row_counts()
        head = _chain_head()
        report_rows = _finished_reports()
        try:
            _run(
                [pg_dump, "--format=custom", f"--snapshot={snapshot}", f"--file={partial}"],
                what="pg_dump",
            )
        except BackupError:
            partial.unlink(missing_ok=True)
            raise
    os.chmod(partial, 0o600)
    os.replace(partial, path)
    reports = _reports_archive(rows=report_rows, archive=reports_path_for(path))
    manifest = {
        "format": MANIFEST_FORMAT,
        "file": path.name,
        "database": connection.settings_dict["NAME"],
        "server_version": server_version,
        "app_version": __version__,
        "created_at": now.isoformat(),
        "size": path.stat().st_size,
        "sha256": _sha256(path),
        "row_counts": counts,
        "audit_chain_head": (
            {"event_id": head.event_id, "hash": head.hash} if head is not None else None
        ),
        "reports": reports,
    }
    manifest_path = manifest_path_for(path)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    os.chmod(manifest_path, 0o600)
    # A copy of every record left the database: who made it, and which file, is on the log.
    audit_record(
        action="database.backup",
        object_type="backup",
        object_id=path.name[:64],
        payload={
            "file": path.name,
            "sha256": manifest["sha256"],
            "reports": len(reports["files"]),
            "reports_unavailable": [r["id"] for r in reports["unavailable"]],
        },
    )
    return BackupResult(path=path, manifest_path=manifest_path, manifest=manifest)


def backup_check(*, path: Path) -> dict[str, Any]:
    """The manifest of a backup whose dump matches its checksum; BackupError otherwise."""
    if not path.is_file():
        raise BackupError(NO_DUMP.format(path=path))
    manifest_path = manifest_path_for(path)
    if not manifest_path.is_file():
        raise BackupError(NO_MANIFEST.format(path=manifest_path))
    try:
        manifest = json.loads(manifest_path.read_text())
        ok = manifest["format"] == MANIFEST_FORMAT and isinstance(manifest["row_counts"], dict)
        expected = str(manifest["sha256"])
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise BackupError(BAD_MANIFEST.format(path=manifest_path))
    if _sha256(path) != expected:
        raise BackupError(CHECKSUM_MISMATCH.format(path=path))
    reports = manifest.get("reports")
    if reports:
        archive = reports_path_for(path)
        if not archive.is_file():
            raise BackupError(NO_REPORTS.format(path=archive))
        if _sha256(archive) != reports.get("sha256"):
            raise BackupError(BAD_REPORTS.format(path=archive))
    return dict(manifest)


def backup_restore(*, path: Path) -> RestoreResult:
    """Replace the configured database's contents with a checked backup, then re-anchor the
    audit chain on the restored head and record the restore in it.

    pg_restore runs as one transaction: a failure leaves the database as it was. The anchor
    file outside the database is ahead of a restored older chain by design; after checking
    every restored link and that the head is the one the manifest names, the anchor moves back
    to that head (the old anchor file is kept beside it) and a ``database.restored`` event
    continues the chain from there.
    """
    manifest = backup_check(path=path)
    pg_restore = _tool("pg_restore")
    # Every report file is read and checked against its hash before anything is replaced.
    staged = _reports_staged(path=path, manifest=manifest)
    # pg_restore drops every table: this process must hold no session that could block it.
    connections.close_all()
    # The owner recreates the tables; the app's role gets its privileges from app_role_grant,
    # not from the backup's own grants (--no-acl), which may name a role this server lacks.
    with database_owner():
        result = _backup_restore(path=path, manifest=manifest, pg_restore=pg_restore)
    restored, missing = _reports_put_back(staged=staged)
    return RestoreResult(
        manifest=result.manifest,
        row_counts=result.row_counts,
        chain_head=result.chain_head,
        previous_anchor_kept=result.previous_anchor_kept,
        reports_restored=restored,
        reports_missing=missing,
    )


def _backup_restore(*, path: Path, manifest: dict[str, Any], pg_restore: str) -> RestoreResult:
    _run(
        [
            pg_restore,
            "--clean",
            "--if-exists",
            "--no-owner",
            "--no-acl",
            "--single-transaction",
            "--exit-on-error",
            f"--dbname={connection.settings_dict['NAME']}",
            str(path),
        ],
        what="pg_restore",
        extra_env={"PGOPTIONS": f"-c lock_timeout={RESTORE_LOCK_TIMEOUT}"},
    )
    app_role_grant()
    counts = _row_counts()
    report, head_event = audit_chain_check()
    if not report.ok:
        raise BackupError(
            f"restored, but the audit chain is broken at event #{report.broken_event_id}: "
            f"{report.reason} (is AUDIT_HMAC_KEY the one the backup was made with?)"
        )
    head = Anchor(head_event.pk, head_event.hash) if head_event is not None else None
    restored_head = {"event_id": head.event_id, "hash": head.hash} if head else None
    if restored_head != manifest.get("audit_chain_head"):
        raise BackupError(
            f"restored, but the audit chain head {restored_head} is not the one the manifest "
            f"names ({manifest.get('audit_chain_head')})"
        )
    try:
        previous = anchor_read()
    except AnchorUnreadable:
        previous = None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = anchor_reset(head=head, reason=f"restore-{stamp}")
    audit_record(
        action="database.restored",
        object_type="backup",
        object_id=path.name[:64],
        payload={
            "file": path.name,
            "sha256": manifest["sha256"],
            "backup_created_at": manifest.get("created_at", ""),
            "chain_head_id": head.event_id if head else None,
            "chain_head": head.hash if head else None,
            "previous_anchor": (
                {"event_id": previous.event_id, "hash": previous.hash} if previous else None
            ),
        },
    )
    return RestoreResult(
        manifest=manifest, row_counts=counts, chain_head=head, previous_anchor_kept=kept
    )


# --- report files -------------------------------------------------------------------------------
# The PDF reports live under MEDIA_ROOT, outside the database, each with its SHA-256 on its
# row. A backup archives every finished report's file beside the dump (checked against its
# row's hash as it is read); a restore checks each against the manifest before it touches
# the database, then puts them back. A report whose file was missing or altered at backup
# time is listed in the manifest as unavailable and can be rendered again from its plan.


def _finished_reports() -> list[tuple[int, str, str]]:
    model = apps.get_model("review", "PlanReport")
    return list(
        model.objects.filter(status="done")
        .exclude(path="")
        .order_by("pk")
        .values_list("pk", "path", "sha256")
    )


def _safe_relative(relative: str) -> Path | None:
    """A report path inside MEDIA_ROOT, or None (absolute, or climbing out with '..')."""
    candidate = Path(relative)
    if candidate.is_absolute() or ".." in candidate.parts or not candidate.parts:
        return None
    return candidate


def _reports_archive(*, rows: list[tuple[int, str, str]], archive: Path) -> dict[str, Any]:
    media = Path(settings.MEDIA_ROOT)
    files: dict[str, str] = {}
    unavailable: list[dict[str, Any]] = []
    partial = archive.with_name(archive.name + ".partial")
    with tarfile.open(partial, "w") as tar:
        for pk, relative, expected in rows:
            safe = _safe_relative(relative)
            source = media / safe if safe is not None else None
            if source is None or not source.is_file():
                unavailable.append({"id": pk, "path": relative, "reason": "file missing"})
                continue
            data = source.read_bytes()
            if hashlib.sha256(data).hexdigest() != expected:
                unavailable.append({"id": pk, "path": relative, "reason": "hash mismatch"})
                continue
            info = tarfile.TarInfo(name=str(safe))
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
            files[str(safe)] = expected
    os.chmod(partial, 0o600)
    os.replace(partial, archive)
    return {
        "file": archive.name,
        "sha256": _sha256(archive),
        "files": files,
        "unavailable": unavailable,
    }


def _reports_staged(*, path: Path, manifest: dict[str, Any]) -> Path | None:
    """The backup's report files unpacked into a private folder beside MEDIA_ROOT, each
    checked against the manifest's hash; BackupError before anything is restored otherwise."""
    reports = manifest.get("reports")
    if not reports:
        return None  # a backup made before reports were archived
    expected: dict[str, str] = dict(reports.get("files") or {})
    media = Path(settings.MEDIA_ROOT)
    media.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=".restore-", dir=media))
    seen: set[str] = set()
    try:
        with tarfile.open(reports_path_for(path), "r") as tar:
            for member in tar.getmembers():
                safe = _safe_relative(member.name)
                handle = tar.extractfile(member) if member.isfile() else None
                if safe is None or handle is None or member.name not in expected:
                    raise BackupError(BAD_REPORTS.format(path=reports_path_for(path)))
                data = handle.read()
                if hashlib.sha256(data).hexdigest() != expected[member.name]:
                    raise BackupError(
                        f"report file {member.name} does not match its hash in the manifest; "
                        "nothing restored"
                    )
                target = staged / safe
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod(0o600)
                seen.add(member.name)
        if seen != set(expected):
            raise BackupError(BAD_REPORTS.format(path=reports_path_for(path)))
    except (BackupError, tarfile.TarError, OSError) as exc:
        shutil.rmtree(staged, ignore_errors=True)
        if isinstance(exc, BackupError):
            raise
        raise BackupError(BAD_REPORTS.format(path=reports_path_for(path))) from exc
    return staged


def _reports_put_back(*, staged: Path | None) -> tuple[int, tuple[int, ...]]:
    """Move the staged files into MEDIA_ROOT; the ids of finished reports whose file is
    still not there (to be rendered again)."""
    media = Path(settings.MEDIA_ROOT)
    restored = 0
    if staged is not None:
        for source in sorted(p for p in staged.rglob("*") if p.is_file()):
            target = media / source.relative_to(staged)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            restored += 1
        shutil.rmtree(staged, ignore_errors=True)
    missing = []
    for pk, relative, expected in _finished_reports():
        safe = _safe_relative(relative)
        kept = media / safe if safe is not None else None
        if kept is None or not kept.is_file() or _sha256(kept) != expected:
            missing.append(pk)
    return restored, tuple(missing)


# --- helpers ----------------------------------------------------------------------------------


def _row_counts() -> dict[str, int]:
    return {name: apps.get_model(label).objects.count() for name, label in KEY_TABLES.items()}


def _chain_head() -> Anchor | None:
    row = AuditEvent.objects.order_by("-id").values_list("id", "hash").first()
    return Anchor(event_id=row[0], hash=row[1]) if row else None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _tool(name: str) -> str:
    """The client tool matching the server: the embedded server's own, else PG_BIN, else PATH."""
    if settings.DATABASE_EMBEDDED:
        candidate: str | None = str(embedded.pg_bin_dir() / name)
    elif settings.PG_BIN:
        candidate = str(Path(settings.PG_BIN) / name)
    else:
        candidate = shutil.which(name)
    if candidate is None or not os.access(candidate, os.X_OK):
        raise BackupError(NO_TOOL.format(tool=name))
    return candidate


def _pg_env() -> dict[str, str]:
    """libpq's environment for the configured database. The password goes only here, never on
    a command line (where every user of the machine can read it in the process list)."""
    db = connection.settings_dict
    env = dict(os.environ)
    for key, var in (
        ("HOST", "PGHOST"),
        ("PORT", "PGPORT"),
        ("USER", "PGUSER"),
        ("PASSWORD", "PGPASSWORD"),
        ("NAME", "PGDATABASE"),
    ):
        # Stray PG* variables of the shell must not point the tools at another database.
        env.pop(var, None)
        if db.get(key):
            env[var] = str(db[key])
    # Connection parameters in OPTIONS win over the columns above, as they do for Django's
    # own connection (the embedded server's unix socket directory is OPTIONS["host"]).
    for key, value in (db.get("OPTIONS") or {}).items():
        libpq_var = _LIBPQ_ENV.get(key)
        if libpq_var and value not in (None, ""):
            env[libpq_var] = str(value)
    return env


_LIBPQ_ENV = {
    "host": "PGHOST",
    "port": "PGPORT",
    "user": "PGUSER",
    "password": "PGPASSWORD",
    "sslmode": "PGSSLMODE",
    "sslrootcert": "PGSSLROOTCERT",
    "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY",
    "connect_timeout": "PGCONNECT_TIMEOUT",
}


def _run(args: list[str], *, what: str, extra_env: dict[str, str] | None = None) -> None:
    # Our own argv: a client tool path and options, no shell.
    result = subprocess.run(  # noqa: S603
        args,
        env={**_pg_env(), **(extra_env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        # The first error line: libpq's messages name objects and servers, not row contents
        # (pg_restore's "Command was:" lines after it are left out).
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        detail = (errors or lines or [f"exit status {result.returncode}"])[0]
        raise BackupError(f"{what} failed: {detail}")
