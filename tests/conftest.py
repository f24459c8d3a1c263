"""Fixtures shared by every test: personas, real processes, a browser, and no internet."""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.stack import REPO, DaphneHandle, WorkerHandle

SCREENSHOT_DIR = REPO / "var" / "screenshots"


# --- no internet --------------------------------------------------------------------------------
_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise RuntimeError(f"test tried to reach the network: {address!r}")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_outbound_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection that is not loopback or a unix socket fails the test."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


# --- database roles: the owner builds the test database, the app's role runs the tests --------
@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings: None) -> None:
    """The test database is created, migrated and at the end dropped by the owner, as
    `migrate` is in production (mdtboard.core.dbroles)."""
    from mdtboard.core.dbroles import connection_use_owner

    connection_use_owner()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Every test then runs as the app's ordinary role, as web and worker do (and the Daphne
    and worker processes the tests start do too): a test that needs more than the app may do
    fails here as it would in production. ``flush`` switches to the owner by itself."""
    from mdtboard.core.dbroles import connection_use_app, connection_use_owner

    with django_db_blocker.unblock():
        connection_use_app()
    yield
    with django_db_blocker.unblock():
        connection_use_owner()


# --- one channel layer per test -------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Iterator[None]:
    """Each test gets its own channel layer object. channels-redis binds a layer's receive state
    (lock, count, event loop) to the loop that first receives on it; a consumer of an earlier
    test whose loop ended mid-receive left that state behind, and every later in-process socket
    died with "Two event loops are trying to receive() on one channel layer at once!". A server
    process has one loop for its life; tests have one per test."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


# --- a finished consultation ---------------------------------------------------------------------
@pytest.fixture
def finished(clinician: Any, team: Any) -> Any:
    """A guideline consultation on pub-hcc-03 (BCLC C, untreated varices), run to its plan;
    for tests of the board, its socket and its pages (they need transaction=True: the engine
    writes from asgiref's worker thread)."""
    from consult.services.consultations import consultation_run, consultation_start
    from tests.consult.integration.test_consultations import load_seed, submitted

    load_seed()
    dossier = submitted(clinician, team, "pub-hcc-03.json")
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    consultation_run(consultation_id=consultation.pk)
    return consultation


# --- htmx requests -------------------------------------------------------------------------------
# An ordinary htmx request (it swaps a fragment), and the one htmx 2 sends when the Back button
# reaches a page missing from its history cache (it replaces the whole page).
HTMX = {"HX-Request": "true"}
HISTORY_RESTORE = {"HX-Request": "true", "HX-History-Restore-Request": "true"}


# --- personas -----------------------------------------------------------------------------------
PASSWORD = "correct horse battery staple"


# The authenticator-app secret of every persona whose role requires two-factor (base32).
TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


def totp_code(secret: str = TOTP_SECRET) -> str:
    """The code an authenticator app shows now for ``secret``."""
    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def login(page: Any, base: str, email: str) -> None:
    """Sign in through the real login page, as a person would (with the code from their
    authenticator app when they have one)."""
    from allauth.mfa.models import Authenticator

    page.goto(base + "/accounts/login/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    if Authenticator.objects.filter(user__email=email, type=Authenticator.Type.TOTP).exists():
        page.get_by_placeholder("Code").fill(totp_code())
        page.get_by_role("button", name="Sign In").click()
    page.wait_for_selector("h1:has-text('Welcome')")


@pytest.fixture
def team(db: None) -> Any:
    from mdtboard.accounts.services import team_get_or_create

    return team_get_or_create(name="Hepatobiliary MDT")


@pytest.fixture
def other_team(db: None) -> Any:
    from mdtboard.accounts.services import team_get_or_create

    return team_get_or_create(name="Thoracic MDT")


def make_user(role: str, email: str, teams: list[Any], *, two_factor: bool | None = None) -> Any:
    """A user of ``role``. Like their colleagues in production, users of a role that requires
    two-factor (settings.MFA_REQUIRED_ROLES) have set up an authenticator app with
    TOTP_SECRET, unless ``two_factor`` says otherwise."""
    from allauth.mfa.totp.internal.auth import TOTP
    from django.conf import settings

    from mdtboard.accounts.roles import Role
    from mdtboard.accounts.services import user_create

    user = user_create(
        email=email,
        role=Role(role),
        password=PASSWORD,
        display_name=email.split("@")[0],
        teams=teams,
    )
    if two_factor is None:
        two_factor = role in settings.MFA_REQUIRED_ROLES
    if two_factor:
        TOTP.activate(user, TOTP_SECRET)
    return user


@pytest.fixture
def clinician(team: Any) -> Any:
    """The owner persona: a clinician of the patient's team."""
    return make_user("clinician", "owner@hospital.test", [team])


@pytest.fixture
def colleague(team: Any) -> Any:
    """Another clinician of the same team."""
    return make_user("clinician", "colleague@hospital.test", [team])


@pytest.fixture
def outsider(other_team: Any) -> Any:
    """A clinician of another team."""
    return make_user("clinician", "outsider@hospital.test", [other_team])


@pytest.fixture
def rater(db: None) -> Any:
    return make_user("rater", "rater@hospital.test", [])


@pytest.fixture
def curator(db: None) -> Any:
    return make_user("curator", "curator@hospital.test", [])


@pytest.fixture
def admin_user(db: None) -> Any:
    return make_user("admin", "admin@hospital.test", [])


@pytest.fixture
def group_admin(db: None) -> Any:
    """An administrator by the role alone: put in the admin group (as through the Django
    admin's user page), neither superuser nor staff."""
    from mdtboard.accounts.models import User

    user = make_user("admin", "group-admin@hospital.test", [])
    User.objects.filter(pk=user.pk).update(is_superuser=False, is_staff=False)
    return User.objects.get(pk=user.pk)


@pytest.fixture(params=["admin_user", "group_admin"])
def any_admin(request: pytest.FixtureRequest) -> Any:
    """Each kind of administrator in turn: one notion of admin means they may do the same."""
    return request.getfixturevalue(request.param)


# --- real processes -----------------------------------------------------------------------------
def _test_database_name() -> str:
    from django.conf import settings

    return str(settings.DATABASES["default"]["NAME"])


class _Switch:
    """The session stub's responder; a test swaps in its own and the fixture restores it."""

    def __init__(self) -> None:
        from tests.consult.llm_responder import clinical_responder

        self.default = clinical_responder()
        self.responder = self.default

    def __call__(self, request: Any) -> Any:
        return self.responder(request)


@pytest.fixture(scope="session")
def llm_stub() -> Iterator[Any]:
    """One OpenAI-compatible stub on loopback for the whole session: the worker is started
    pointing at it, so LLM-mode consultations run through real HTTP and the real SDK."""
    from tests.llm_stub import StubLLM

    switch = _Switch()
    stub = StubLLM(switch).start()
    stub.switch = switch  # type: ignore[attr-defined]
    yield stub
    stub.stop()


@pytest.fixture
def llm_env(llm_stub: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """LLM mode in this process too (the worker has it from the start)."""
    for key, value in llm_stub.env().items():
        monkeypatch.setenv(key, value)
    yield llm_stub
    llm_stub.switch.responder = llm_stub.switch.default


@pytest.fixture(scope="session")
def celery_worker_proc(
    django_db_setup: None, django_db_blocker: Any, llm_stub: Any
) -> Iterator[WorkerHandle]:
    from mdtboard.celery import app

    # Tasks an earlier session or test left in the test broker refer to rows that are gone
    # (and ids a fresh test database hands out again): the worker starts on an empty queue.
    app.control.purge()
    handle = WorkerHandle(_test_database_name(), llm_stub.env())
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def daphne(django_db_setup: None, django_db_blocker: Any, llm_stub: Any) -> Iterator[DaphneHandle]:
    handle = DaphneHandle(_test_database_name(), llm_stub.env())
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def daphne_server(daphne: DaphneHandle) -> str:
    return daphne.url


# --- browser ------------------------------------------------------------------------------------
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


# Module scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, which would break asyncio in every test that runs after it.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("MDTBOARD_CHROMIUM", "/usr/bin/chromium")
    if not Path(executable).exists():
        pytest.fail(f"Chromium not found at {executable}: run `make chromium` (as root) first")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def screenshot_dir() -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR


# Playwright's sync API runs an event loop in this thread; the tests' own ORM calls between
# browser steps are ordinary synchronous code, so Django's async-safety guard does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
