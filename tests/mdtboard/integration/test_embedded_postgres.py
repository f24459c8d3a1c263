"""The embedded database answers vector queries, and a broken one is named plainly."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management.base import CommandError
from django.db import OperationalError

from mdtboard import embedded
from mdtboard.core.management.commands import runstack
from tests.stack import REPO

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.django_db(transaction=True)
def test_vector_search_check_passes_on_a_working_server() -> None:
    # given the test database with pgvector, when checked, then nothing is raised
    runstack.vector_search_check()


@pytest.mark.django_db(transaction=True)
def test_vector_search_check_names_a_dead_server(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a server that dies on the query (as the -march=native pgvector did with SIGILL)
    class Dying:
        def __enter__(self) -> Dying:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

        def execute(self, sql: str) -> None:
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(runstack.connection, "cursor", lambda: Dying())
    # when make run checks it, then it stops with a message that says what to look at
    with pytest.raises(CommandError, match=r"failed a pgvector query.*pgdata/log"):
        runstack.vector_search_check()


def test_a_command_before_migrate_says_what_to_run() -> None:
    # given a database that was never migrated
    name = f"unmigrated_{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mdtboard.settings.test",
        "MDTBOARD_DB_NAME": name,
    }
    env.pop("MDTBOARD_TEST_DATABASE_NAME", None)
    case = REPO.parent / "shared" / "cases" / "public" / "pub-hcc-01.json"
    try:
        # when a newcomer runs a case on it
        done = subprocess.run(
            [sys.executable, "manage.py", "runcase", str(case)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        embedded.drop_database(Path(settings.VAR_DIR), name)
    # then they are told what to do, without a traceback
    assert done.returncode == 1
    assert "run `make run` or `python manage.py migrate` first" in done.stderr
    assert "Traceback" not in done.stderr
