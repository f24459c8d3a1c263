"""What a process pays before it works: the start-up of ``runcase`` (Python, Django and the
modules a consultation imports) and a whole ``runcase`` of a public case, each in a fresh
process, with its peak memory (the child's maximum resident set, from wait4) and its CPU time
(user + system, from wait4: on a shared machine the wall time also counts the other
processes' turns, the CPU time much less so).

The knowledge base is seeded first (idempotent), or the case would be deliberated against an
empty one: no evidence retrieved, nothing to read, an abstention ("outside the knowledge
base") instead of a plan. The repository's modules are compiled to bytecode first, as the
image does at build time (docker/Dockerfile) and as Python does on a first run wherever
PYTHONDONTWRITEBYTECODE is not set; without it each process compiles them again (~0.4 s).
"""

from __future__ import annotations

import compileall
import io
import json
import os
import subprocess
import sys

from django.core.management import call_command

from benchmarks.common import PUBLIC_CASES, REPO, emit

# Imports what ``manage.py runcase`` imports before it reads the case, and stops.
_STARTUP = (
    "import django; django.setup(); "
    "from django.core.management import load_command_class; "
    "load_command_class('consult', 'runcase')"
)
PACKAGES = ("mdtboard", "consult", "knowledge", "clinical")


# Runs argv and prints its (wall s, CPU s, peak RSS kB, exit code). A process of its own,
# importing nothing: a child's ru_maxrss is at least the resident size of the process that
# forked it (Linux carries the old address space's peak across exec), and this one's parent,
# having seeded the knowledge base, holds the embedding model and hundreds of MB besides.
_MEASURE = """
import json, os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps([time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss, os.waitstatus_to_exitcode(status)]))
"""


def _run(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code) of ``argv`` in a fresh process."""
    env = {**os.environ, "MDTBOARD_DB_NAME": "mdtboard_bench", "PYTHONUNBUFFERED": "1"}
    measured = subprocess.run(  # noqa: S603 - fixed argv: this interpreter and our app
        [sys.executable, "-c", _MEASURE, *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu, peak_kb, code = json.loads(measured.stdout)
    # ru_maxrss is in kilobytes on Linux.
    return wall, cpu, peak_kb / 1024, code


def run() -> None:
    # Its summary line would break the JSON lines on stdout.
    call_command("load_kb_seed", verbosity=0, stdout=io.StringIO())
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)
    wall, cpu, peak, code = _run([sys.executable, "-c", _STARTUP])
    if code == 0:
        emit("runcase_startup", wall, "s (Python, Django, the consultation's imports)", "< 4 s")
        emit("runcase_startup_cpu", cpu, "s")
        emit("runcase_startup_peak_memory", peak, "MB", "< 400 MB")
    case = PUBLIC_CASES / "pub-lung-01.json"
    argv = [sys.executable, "manage.py", "runcase", str(case), "--format", "json"]
    wall, cpu, peak, code = _run(argv)
    if code == 0:
        emit(
            "runcase_public_case", wall, "s (pub-lung-01, guideline engine, start to plan)", "< 4 s"
        )
        emit("runcase_public_case_cpu", cpu, "s")
        emit("runcase_peak_memory", peak, "MB", "< 400 MB")
