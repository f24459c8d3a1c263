"""Settings only parse the environment; mdtboard.bootstrap starts the embedded servers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stack import REPO

EMBEDDED = (
    "DATABASE_URL",
    "REDIS_URL",
    "MDTBOARD_EMBEDDED_DATABASE_URL",
    "MDTBOARD_EMBEDDED_REDIS_URL",
)


def _python(code: str, var_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in EMBEDDED}
    env["MDTBOARD_VAR_DIR"] = str(var_dir)
    env["DJANGO_SETTINGS_MODULE"] = "mdtboard.settings.test"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_the_settings_starts_no_server(tmp_path: Path) -> None:
    # given a machine with no servers configured and an empty var/
    # when a tool (a type checker, a linter) imports the settings
    result = _python(
        "from django.conf import settings; print(settings.DATABASES['default']['NAME'])",
        tmp_path,
    )
    # then they load, and nothing was started or created under var/
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "pgdata").exists()
    assert not (tmp_path / "redis").exists()


def test_settings_use_the_servers_bootstrap_started() -> None:
    # given this test process, bootstrapped by mdtboard.pytest_plugin
    from django.conf import settings

    # then the settings point at the embedded servers it started
    url = os.environ.get("MDTBOARD_EMBEDDED_REDIS_URL")
    if os.environ.get("REDIS_URL") or not url:
        pytest.skip("real servers configured")
    assert url == settings.REDIS_URL
    assert settings.DATABASE_EMBEDDED
    socket_dir = settings.DATABASES["default"]["OPTIONS"]["host"]
    assert Path(socket_dir).exists()
