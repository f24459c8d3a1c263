"""The root of the test suite: every shared fixture is defined once in ``tests/fixtures/``
and loaded here; a test imports helpers from there, never from another test module."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Property tests assert what inputs do, never how fast a loaded machine generates them: CI and
# the developer loop share two cores with workers and browsers, where Hypothesis's own timing
# checks (too_slow, the per-example deadline) fail tests that are otherwise green.
settings.register_profile("mdtboard", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mdtboard")

pytest_plugins = [
    "tests.fixtures.isolation",
    "tests.fixtures.markers",
    "tests.fixtures.personas",
    "tests.fixtures.seed",
    "tests.fixtures.consultations",
    "tests.fixtures.processes",
    "tests.fixtures.browser",
]
