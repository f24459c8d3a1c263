"""mdtboard: a digital tumor board."""

from __future__ import annotations

__version__ = "0.1.0"

# Every process (web, worker, manage.py, benchmarks) must publish tasks through this app and
# its Redis broker, never through Celery's unconfigured default app.
from mdtboard.celery import app as celery_app

__all__ = ["__version__", "celery_app"]
