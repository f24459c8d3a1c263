"""``manage.py runstack``: what ``make run`` runs. Prepares the database, starts Daphne, a
Celery worker for consultations and one for PDF reports, prints the URL and demo logins, and
on Ctrl-C stops everything it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection

from mdtboard import embedded
from mdtboard.core.dbroles import database_owner


def vector_search_check() -> None:
    """Run a real pgvector query before anything is served: a vector extension that does not
    fit this CPU kills the database server here, with a message, rather than on the first
    consultation."""
    try:
        # As the owner: the extension is the owner's to update (the app's role may not).
        with database_owner(), connection.cursor() as cursor:
            # A data directory made by an older embedded server may carry an older extension
            # version than the library now installed.
            cursor.execute("ALTER EXTENSION vector UPDATE")
            cursor.execute("SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector")
            distance = cursor.fetchone()
    except DatabaseError as exc:
        connection.close()
        log = Path(settings.VAR_DIR) / "pgdata" / "log"
        raise CommandError(
            "The database server failed a pgvector query "
            f"({type(exc).__name__}); if it is the embedded one, its log is {log}. "
            "A server that died with 'Illegal instruction' has a pgvector built for another "
            "CPU: reinstall with `make run` after `rm -rf .venv`."
        ) from None
    if distance is None or abs(float(distance[0]) - 1.0) > 1e-6:
        raise CommandError(f"pgvector returned a wrong cosine distance: {distance!r}")


def child_environment(environ: Mapping[str, str], *, debug: bool) -> dict[str, str]:
    """The web server's and worker's environment. DEBUG is off unless asked for: the stack
    `make run` starts is what colleagues and demo audiences reach, and Django's debug pages
    list every URL to anonymous visitors and show tracebacks with local values (patient data
    among them). The local settings still default DEBUG on for manage.py and tests."""
    env = {**environ, "DJANGO_SETTINGS_MODULE": environ["DJANGO_SETTINGS_MODULE"]}
    env["DJANGO_DEBUG"] = "true" if debug else "false"
    return env


# The queues `make run`'s consultation worker consumes (settings.CELERY_TASK_QUEUES but
# "reports"): PDFs go to a worker of their own, so that they never hold a slot a consultation
# is waiting for. Celery has no per-queue slots within one worker: a prefork worker that
# consumed "reports" too would hand its next free process to whichever message came first,
# and two PDF requests (3-5 s of CPU each) would hold both of the default two.
CONSULTATION_QUEUES = ("consultations", "celery")
REPORT_QUEUES = ("reports",)


def worker_argv(concurrency: int, *, queues: Sequence[str] = CONSULTATION_QUEUES) -> list[str]:
    """The Celery worker's command line (the reliability tests start the same one)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "mdtboard",
        "worker",
        "--loglevel",
        "INFO",
        "--concurrency",
        str(concurrency),
        "--queues",
        ",".join(queues),
    ]


def report_worker_argv() -> list[str]:
    """The PDF worker: one process (a second PDF waits for the first rather than competing with
    consultations for the two cores), named apart from the consultation worker (two workers
    called celery@host would shadow each other's replies to pings and inspections)."""
    return [*worker_argv(1, queues=REPORT_QUEUES), "--hostname", "reports@%h"]


def daphne_argv(host: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mdtboard.webserver",
        "-b",
        host,
        "-p",
        str(port),
        "--access-log",
        "-",
        "mdtboard.asgi:application",
    ]


# A worker that crashes is started again, at most this many times in RESTART_WINDOW_S: one
# that keeps crashing has a cause a restart will not fix, and the stack stops saying so.
MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0


@dataclass
class Child:
    """A process of the stack; ``restart`` says whether the supervisor starts it again when
    it exits (the worker: its runs resume from their journal) or stops the stack (the web
    server: one that exits has a port or configuration problem a restart will not fix)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    restart: bool = False
    popen: subprocess.Popen[bytes] | None = None
    restarts: deque[float] = field(default_factory=deque)

    def start(self) -> None:
        self.popen = subprocess.Popen(self.argv, env=self.env)  # noqa: S603 - our own argv

    def exit_code(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def may_restart(self, now: float) -> bool:
        """Whether a restart now stays within MAX_RESTARTS per RESTART_WINDOW_S (and counts
        it if so)."""
        while self.restarts and now - self.restarts[0] >= RESTART_WINDOW_S:
            self.restarts.popleft()
        if not self.restart or len(self.restarts) >= MAX_RESTARTS:
            return False
        self.restarts.append(now)
        return True


class Command(BaseCommand):
    help = "Run the whole stack (web + workers) in the foreground; Ctrl-C stops it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes")
        parser.add_argument(
            "--debug",
            action="store_true",
            help="serve Django's debug pages (every URL, tracebacks with local values); only on "
            "a machine nobody else can reach",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        vector_search_check()
        call_command("seed_demo")
        env = child_environment(os.environ, debug=options["debug"])
        # In a child process: embedding loads a ~500 MB model that this long-lived parent
        # should not keep in memory.
        seeded = subprocess.run([sys.executable, "manage.py", "load_kb_seed"], env=env)
        if seeded.returncode != 0:
            vector_search_check()  # names a dead database server plainly, if that was it
            raise CommandError("loading the seed knowledge base failed (see above)")
        host, port = options["host"], options["port"]
        children = [
            Child("web server", daphne_argv(host, port), env),
            Child("worker", worker_argv(options["concurrency"]), env, restart=True),
            Child("report worker", report_worker_argv(), env, restart=True),
        ]
        for child in children:
            child.start()
        self.stdout.write(self.style.SUCCESS(f"\nmdtboard is running at http://{host}:{port}/"))
        self.stdout.write(
            "Press Ctrl-C to stop the web server, the workers and embedded services.\n"
        )

        stopping = False

        def _stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        try:
            self.supervise(children, stopping=lambda: stopping)
        finally:
            self._shutdown(children)

    def supervise(
        self, children: list[Child], *, stopping: Callable[[], bool], poll_s: float = 0.3
    ) -> None:
        """Watch the children until Ctrl-C; restart a crashed worker (within its budget), and
        return when a child exits that may not be restarted."""
        while not stopping():
            for child in children:
                code = child.exit_code()
                if code is None:
                    continue
                if not child.may_restart(time.monotonic()):
                    why = (
                        f" {MAX_RESTARTS + 1} times within {RESTART_WINDOW_S:.0f} s"
                        if child.restart
                        else ""
                    )
                    self.stderr.write(f"The {child.name} exited (code {code}){why}; stopping.")
                    return
                self.stderr.write(
                    self.style.WARNING(
                        f"The {child.name} exited (code {code}); starting it again "
                        f"(restart {len(child.restarts)} of at most {MAX_RESTARTS} within "
                        f"{RESTART_WINDOW_S:.0f} s). Interrupted consultations resume."
                    )
                )
                child.start()
            time.sleep(poll_s)

    def _shutdown(self, children: list[Child]) -> None:
        self._stop_children(children)
        stopped = embedded.stop_started(Path(settings.VAR_DIR))
        self.stdout.write(
            "Stopped web server and workers"
            + (f", embedded {' and '.join(stopped)}" if stopped else "")
            + ". Data is kept under var/."
        )

    def _stop_children(self, children: list[Child]) -> None:
        running = [child.popen for child in children if child.popen is not None]
        for popen in running:
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)  # Celery: warm shutdown, finishes the turn.
        deadline = time.monotonic() + 30
        for popen in running:
            try:
                popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                popen.kill()
