#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

from __future__ import annotations

import os
import sys

NOT_MIGRATED = (
    "The database has no mdtboard tables yet: run `make run` or `python manage.py migrate` first.\n"
)


def _undefined_table(exc: BaseException | None) -> bool:
    """Whether the error (or one it was raised from) is PostgreSQL's "relation does not
    exist" (SQLSTATE 42P01): a command ran before the migrations did."""
    while exc is not None:
        if getattr(exc, "sqlstate", None) == "42P01":
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mdtboard.settings.local")
    from django.core.management import execute_from_command_line

    from mdtboard.bootstrap import embedded_servers

    embedded_servers()

    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:
        if not _undefined_table(exc):
            raise
        sys.stderr.write(NOT_MIGRATED)
        sys.exit(1)


if __name__ == "__main__":
    main()
