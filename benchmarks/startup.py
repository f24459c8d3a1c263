"""What a process pays before it works: the start-up of ``runcase`` (Python, Django and the
modules a consultation imports) and a whole ``runcase`` of a public case, each in a fresh
process, with its peak memory (the child's maximum resident set, from wait4)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks.common import PUBLIC_CASES, REPO, emit

# Imports what ``manage.py runcase`` imports before it reads the case, and stops.
_STARTUP = (
    "import django; django.setup(); "
    "from django.core.management import load_command_class; "
    "load_command_class('consult', 'runcase')"
)


def _run(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of ``argv`` in a fresh process."""
    env = {**os.environ, "MDTBOARD_DB_NAME": "mdtboard_bench", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter and our app
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in kilobytes on Linux.
    return wall, usage.ru_maxrss / 1024, process.returncode


def run() -> None:
    wall, peak, code = _run([sys.executable, "-c", _STARTUP])
    if code == 0:
        emit("runcase_startup", wall, "s (Python, Django, the consultation's imports)", "< 4 s")
        emit("runcase_startup_peak_memory", peak, "MB", "< 400 MB")
    case = PUBLIC_CASES / "pub-lung-01.json"
    wall, peak, code = _run([sys.executable, "manage.py", "runcase", str(case), "--format", "json"])
    if code == 0:
        emit("runcase_public_case", wall, "s (pub-lung-01, guideline engine, start to plan)")
        emit("runcase_peak_memory", peak, "MB", "< 400 MB")
