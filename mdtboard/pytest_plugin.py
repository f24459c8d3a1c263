"""pytest plugin, loaded early (``-p mdtboard.pytest_plugin`` in pyproject's addopts): starts
the embedded servers when pytest imports it, before pytest-django loads the settings (which
happens before any conftest.py)."""

from __future__ import annotations

from mdtboard import bootstrap

bootstrap.embedded_servers()
