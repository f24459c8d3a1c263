"""A new user's first minutes, in a real browser against Daphne and a real worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from consult.broadcasts import user_notify
from tests.fixtures.personas import PASSWORD
from tests.stack import in_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_clinician_logs_in_through_the_real_login_page(
    daphne_server: str, celery_worker_proc: Any, page: Any, clinician: Any, screenshot_dir: Path
) -> None:
    # (the page records when htmx has opened its WebSocket, so the test need not guess)
    page.add_init_script(
        "document.addEventListener('htmx:wsOpen', () => { window.mdtboardSocketOpen = true; })"
    )
    # given a visitor who opens the app
    page.goto(daphne_server + "/")
    # then they are sent to the login page
    assert "/accounts/login/" in page.url
    page.screenshot(path=str(screenshot_dir / "login.png"), full_page=True)
    # when they log in with a wrong password, they are told so and stay on the page
    page.get_by_label("Email").fill(clinician.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign In").click()
    page.wait_for_selector("text=not correct")
    # when they log in correctly
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    # then the home page greets them with their role and team
    page.wait_for_selector("h1:has-text('Welcome')")
    assert page.locator(".role-tag").inner_text() == "Clinician"
    assert "Hepatobiliary MDT" in page.content()
    # and a notice pushed over the WebSocket (Daphne + channels-redis) appears on the page
    page.wait_for_function("() => window.mdtboardSocketOpen === true")
    # (from another thread: Playwright's event loop owns this one)
    in_thread(user_notify, user_id=clinician.pk, level="success", text="Consultation finished")
    page.wait_for_selector(".notice:has-text('Consultation finished')", timeout=10_000)
    page.screenshot(path=str(screenshot_dir / "home.png"), full_page=True)
    # and the health endpoint sees the worker the stack started
    health = page.request.get(daphne_server + "/healthz")
    assert health.status == 200
    assert health.json()["checks"]["worker"]["ok"] is True
