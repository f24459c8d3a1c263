"""``manage.py runstack``: what ``make run`` runs. Prepares the database, starts Daphne and a
Celery worker, prints the URL and demo logins, and on Ctrl-C stops everything it started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from mdtboard import embedded


class Command(BaseCommand):
    help = "Run the whole stack (web + worker) in the foreground; Ctrl-C stops it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("seed_demo")
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ["DJANGO_SETTINGS_MODULE"]}
        # In a child process: embedding loads a ~500 MB model that this long-lived parent
        # should not keep in memory.
        subprocess.run([sys.executable, "manage.py", "load_kb_seed"], env=env, check=True)
        host, port = options["host"], options["port"]
        children = [
            subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter and our modules
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    host,
                    "-p",
                    str(port),
                    "--access-log",
                    "-",
                    "mdtboard.asgi:application",
                ],
                env=env,
            ),
            subprocess.Popen(  # noqa: S603 - fixed argv: this interpreter and our modules
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "mdtboard",
                    "worker",
                    "--loglevel",
                    "INFO",
                    "--concurrency",
                    str(options["concurrency"]),
                ],
                env=env,
            ),
        ]
        self.stdout.write(self.style.SUCCESS(f"\nmdtboard is running at http://{host}:{port}/"))
        self.stdout.write(
            "Press Ctrl-C to stop the web server, the worker and embedded services.\n"
        )

        stopping = False

        def _stop(signum: int, frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        try:
            while not stopping:
                exited = [child for child in children if child.poll() is not None]
                if exited:
                    self.stderr.write(f"a process exited (code {exited[0].returncode}); stopping")
                    break
                time.sleep(0.3)
        finally:
            self._shutdown(children)

    def _shutdown(self, children: list[subprocess.Popen[bytes]]) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)  # Celery: warm shutdown, finishes the turn.
        deadline = time.monotonic() + 30
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        stopped = embedded.stop_started(Path(settings.VAR_DIR))
        self.stdout.write(
            "Stopped web server and worker"
            + (f", embedded {' and '.join(stopped)}" if stopped else "")
            + ". Data is kept under var/."
        )
