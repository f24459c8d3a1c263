"""Live sockets in a real browser come back after the server restarts, and say what the
notification socket cannot replay."""

from __future__ import annotations

from typing import Any

import pytest

from consult.broadcasts import user_notify
from tests.fixtures.browser import login
from tests.stack import in_thread

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

OPEN = "() => !!window.__wsOpen"


def test_notification_socket_reconnects_after_a_server_restart_and_says_what_may_be_missing(
    daphne: Any, page: Any, clinician: Any
) -> None:
    # given a signed-in clinician on a page with the live notification socket open
    page.add_init_script(
        "document.addEventListener('htmx:wsOpen', () => { window.__wsOpen = true; });"
        "document.addEventListener('htmx:wsClose', () => { window.__wsOpen = false; });"
    )
    login(page, daphne.url, clinician.email)
    page.wait_for_function(OPEN, timeout=15_000)
    # when the web server restarts under it
    daphne.restart(down_s=1.0)
    # then the socket comes back by itself, and the page says notices may have been missed
    page.wait_for_function(OPEN, timeout=60_000)
    page.wait_for_selector("#notices [data-reconnected]", timeout=10_000)
    assert "Notices sent in between may be missing" in page.inner_text("#notices")
    # and a notice sent now arrives
    in_thread(user_notify, user_id=clinician.pk, level="success", text="Back online")
    page.wait_for_selector("#notices >> text=Back online", timeout=15_000)
