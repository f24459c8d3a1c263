"""`make run`'s supervisor: a crashed worker is started again, within a budget."""

from __future__ import annotations

import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from mdtboard.core.management.commands import runstack
from mdtboard.core.management.commands.runstack import Child, Command


def _command() -> tuple[Command, StringIO]:
    err = StringIO()
    return Command(stdout=StringIO(), stderr=err), err


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_crashed_worker_is_started_again_and_the_stack_keeps_running(tmp_path: Path) -> None:
    # given a web server that runs, and a worker that crashes the first time it starts
    marker = tmp_path / "started-once"
    worker = Child(
        "worker",
        _python(
            "import pathlib, sys, time\n"
            f"m = pathlib.Path({str(marker)!r})\n"
            "if not m.exists():\n    m.touch(); sys.exit(1)\n"
            "time.sleep(30)"
        ),
        env={},
        restart=True,
    )
    web = Child("web server", _python("import time; time.sleep(30)"), env={})
    command, err = _command()
    for child in (web, worker):
        child.start()
    polls: list[int] = []
    deadline = time.monotonic() + 20

    def stopping() -> bool:
        polls.append(1)
        settled = len(worker.restarts) == 1 and worker.exit_code() is None and len(polls) > 10
        return settled or time.monotonic() > deadline

    try:
        # when the supervisor watches them
        command.supervise([web, worker], stopping=stopping, poll_s=0.05)
        # then the worker was started again, the web server left alone, and the console says so
        assert len(worker.restarts) == 1
        assert worker.exit_code() is None
        assert web.exit_code() is None
        assert "The worker exited (code 1); starting it again (restart 1 of at most 5" in (
            err.getvalue()
        )
    finally:
        command._stop_children([web, worker])


def test_a_worker_crashing_over_and_over_stops_the_stack_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # given a worker that exits as soon as it starts
    monkeypatch.setattr(runstack, "MAX_RESTARTS", 3)
    worker = Child("worker", _python("raise SystemExit(3)"), env={}, restart=True)
    web = Child("web server", _python("import time; time.sleep(30)"), env={})
    command, err = _command()
    for child in (web, worker):
        child.start()
    try:
        # when the supervisor watches it (it returns by itself: no Ctrl-C)
        command.supervise([web, worker], stopping=lambda: False, poll_s=0.05)
        # then it was restarted as often as allowed, and no more
        out = err.getvalue()
        assert out.count("starting it again") == 3
        assert "The worker exited (code 3) 4 times within 60 s; stopping." in out
    finally:
        command._stop_children([web, worker])


def test_the_web_server_exiting_stops_the_stack(tmp_path: Any) -> None:
    # given a web server that exits (a taken port, say)
    web = Child("web server", _python("raise SystemExit(2)"), env={})
    worker = Child("worker", _python("import time; time.sleep(30)"), env={}, restart=True)
    command, err = _command()
    for child in (web, worker):
        child.start()
    try:
        command.supervise([web, worker], stopping=lambda: False, poll_s=0.05)
        assert "The web server exited (code 2); stopping." in err.getvalue()
        assert "starting it again" not in err.getvalue()
    finally:
        command._stop_children([web, worker])
