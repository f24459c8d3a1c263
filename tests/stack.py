"""Real processes for integration and end-to-end tests: Daphne and a Celery worker on loopback,
pointed at the test database that pytest-django created."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
LOG_DIR = REPO / "var" / "test-logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child_env(test_database: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **os.environ,
        **(extra or {}),
        "DJANGO_SETTINGS_MODULE": "mdtboard.settings.test",
        "MDTBOARD_TEST_DATABASE_NAME": test_database,
        "PYTHONUNBUFFERED": "1",
    }


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 15) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _spawn(name: str, args: list[str], env: dict[str, str]) -> Proc:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = LOG_DIR / f"{name}.log"
    handle = log.open("wb")
    popen = subprocess.Popen(args, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT)
    return Proc(name, popen, log)


def start_daphne(
    test_database: str, port: int | None = None, extra_env: dict[str, str] | None = None
) -> tuple[Proc, str]:
    port = port or free_port()
    proc = _spawn(
        "daphne",
        [
            sys.executable,
            "-m",
            "mdtboard.webserver",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "mdtboard.asgi:application",
        ],
        child_env(test_database, extra_env),
    )
    base = f"http://127.0.0.1:{port}"
    # Loading Django and the app takes a few seconds, over a minute on a shared, busy machine.
    deadline = time.monotonic() + 90
    while True:
        if proc.popen.poll() is not None:
            raise RuntimeError(f"Daphne exited early:\n{proc.tail()}")
        try:
            with urllib.request.urlopen(f"{base}/accounts/login/", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return proc, base
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError(f"Daphne did not answer within 90 s:\n{proc.tail()}")
        time.sleep(0.2)


def start_worker(test_database: str, extra_env: dict[str, str] | None = None) -> Proc:
    from mdtboard.celery import app

    proc = _spawn(
        "celery-worker",
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "mdtboard",
            "worker",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
            "--hostname",
            f"test-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ],
        child_env(test_database, extra_env),
    )
    deadline = time.monotonic() + 60
    while not app.control.ping(
        timeout=0.5, destination=[f"test-{os.getpid()}@{socket.gethostname()}"]
    ):
        if proc.popen.poll() is not None:
            raise RuntimeError(f"Celery worker exited early:\n{proc.tail()}")
        if time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError(f"Celery worker did not answer within 60 s:\n{proc.tail()}")
    return proc


def in_thread(fn: Callable[..., T], /, **kwargs: Any) -> T:
    """Run sync code that uses async_to_sync (channel-layer broadcasts) from a fresh thread:
    once Playwright has started, this thread has a running event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, **kwargs).result(timeout=30)


class DaphneHandle:
    """The session's Daphne on a fixed port, which a test may restart (browsers reconnect)."""

    def __init__(self, test_database: str, extra_env: dict[str, str]) -> None:
        self.test_database = test_database
        self.extra_env = extra_env
        self.proc, self.url = start_daphne(test_database, extra_env=extra_env)
        self.port = int(self.url.rsplit(":", 1)[1])

    def restart(self, *, down_s: float = 0.0) -> None:
        self.proc.stop()
        time.sleep(down_s)
        self.proc, self.url = start_daphne(self.test_database, self.port, self.extra_env)

    def stop(self) -> None:
        self.proc.stop()


class WorkerHandle:
    """The test session's Celery worker, which a test may kill (SIGKILL, as a crash) and
    start again."""

    def __init__(self, test_database: str, extra_env: dict[str, str]) -> None:
        self.test_database = test_database
        self.extra_env = extra_env
        self.proc = start_worker(test_database, extra_env)

    @property
    def log(self) -> Path:
        return self.proc.log

    def kill(self) -> None:
        self.proc.popen.kill()
        self.proc.popen.wait()

    def restart(self) -> None:
        if self.proc.popen.poll() is None:
            self.proc.stop()
        self.proc = start_worker(self.test_database, self.extra_env)

    def stop(self) -> None:
        self.proc.stop()


@contextmanager
def running(proc: Proc) -> Iterator[Proc]:
    try:
        yield proc
    finally:
        proc.stop()
