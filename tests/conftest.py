"""The root of the test suite: every shared fixture is defined once in ``tests/fixtures/``
and loaded here; a test imports helpers from there, never from another test module."""

from __future__ import annotations

pytest_plugins = [
    "tests.fixtures.isolation",
    "tests.fixtures.personas",
    "tests.fixtures.seed",
    "tests.fixtures.consultations",
    "tests.fixtures.processes",
    "tests.fixtures.browser",
]
