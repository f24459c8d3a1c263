"""Production settings refuse weak secrets, wildcard hosts and a mail backend that mails nobody."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.stack import REPO

pytestmark = pytest.mark.slow

GOOD = {
    "DJANGO_SECRET_KEY": "k3Y-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN",
    "AUDIT_HMAC_KEY": "audit-" + "ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210",
    # Given URLs, importing the settings connects to nothing (no embedded servers start).
    "DATABASE_URL": "postgres://app@db.invalid/mdtboard",
    "REDIS_URL": "redis://redis.invalid:6379",
    "DJANGO_ALLOWED_HOSTS": "mdtboard.example.org",
    "EMAIL_URL": "smtp+tls://mdtboard:pw@smtp.example.org:587",
}


def _import_production(**overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "AUDIT_"))}
    env.update(GOOD)
    env.update(overrides)
    env["MDTBOARD_VAR_DIR"] = str(REPO / "var")
    return subprocess.run(
        [sys.executable, "-c", "import mdtboard.settings.production"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_production_settings_accept_a_sound_configuration() -> None:
    result = _import_production()
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"DJANGO_SECRET_KEY": "short-but-set"}, "DJANGO_SECRET_KEY is too weak"),
        ({"DJANGO_SECRET_KEY": "a" * 60}, "DJANGO_SECRET_KEY is too weak"),
        ({"AUDIT_HMAC_KEY": ""}, "AUDIT_HMAC_KEY must be set"),
        ({"AUDIT_HMAC_KEY": "short"}, "AUDIT_HMAC_KEY must be at least"),
        ({"AUDIT_HMAC_KEY": GOOD["DJANGO_SECRET_KEY"]}, "different from DJANGO_SECRET_KEY"),
        ({"DJANGO_ALLOWED_HOSTS": "*"}, "not a wildcard"),
        ({"DJANGO_ALLOWED_HOSTS": "mdtboard.example.org,*"}, "not a wildcard"),
        ({"EMAIL_URL": "consolemail://"}, "EMAIL_URL must be a real mail server"),
        ({"AUDIT_ANCHOR_PATH": "off"}, "AUDIT_ANCHOR_PATH=off"),
        ({"AUDIT_ANCHOR_PATH": "OFF"}, "AUDIT_ANCHOR_PATH=off"),
    ],
)
def test_production_settings_refuse_weak_configuration(
    overrides: dict[str, str], message: str
) -> None:
    # when production settings are loaded with a weak value
    result = _import_production(**overrides)
    # then the process refuses to start and says which setting is wrong
    assert result.returncode != 0
    assert message in result.stderr
