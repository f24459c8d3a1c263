"""`make run` serves no Django debug pages (URL list, tracebacks) unless asked to."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mdtboard.core.management.commands.runstack import child_environment
from tests.stack import REPO

pytestmark = pytest.mark.slow


def _debug_in_child(env: dict[str, str]) -> str:
    env = {
        **env,
        # Given URLs, importing the settings connects to nothing (no embedded servers start).
        "DATABASE_URL": "postgres://app@db.invalid/mdtboard",
        "REDIS_URL": "redis://redis.invalid:6379",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; from django.conf import settings; django.setup(); "
            "print(settings.DEBUG)",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(("debug", "expected"), [(False, "False"), (True, "True")])
def test_runstack_children_run_without_debug_unless_asked(debug: bool, expected: str) -> None:
    # given the developer's environment under the local settings (which default DEBUG on)
    parent = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    parent["DJANGO_SETTINGS_MODULE"] = "mdtboard.settings.local"
    parent["DJANGO_DEBUG"] = "true"  # what local.py sets in the runstack process itself
    # when runstack starts Daphne and the worker
    env = child_environment(parent, debug=debug)
    # then their settings have DEBUG off, unless --debug was given
    assert _debug_in_child(env) == expected
