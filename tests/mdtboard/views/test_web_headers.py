"""Content-Security-Policy: sent on every page, and no template needs an inline script."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.urls import reverse

from tests.stack import REPO

pytestmark = pytest.mark.django_db

# An executable inline script: <script> without src= (JSON data blocks are not executed).
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
_EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def _directives(header: str) -> dict[str, list[str]]:
    parts = (p.split() for p in header.split(";") if p.strip())
    return {p[0]: p[1:] for p in parts}


@pytest.mark.parametrize("signed_in", [False, True])
def test_every_page_carries_a_policy_without_inline_scripts(
    client: Any, clinician: Any, signed_in: bool
) -> None:
    # given a visitor, or a signed-in clinician
    if signed_in:
        client.force_login(clinician)
    url = reverse("core:home") if signed_in else reverse("account_login")
    # when they open a page
    response = client.get(url)
    # then the browser is told to run scripts from this site only, and never inline
    assert response.status_code == 200
    policy = _directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-eval'" not in response["Content-Security-Policy"]


def test_error_pages_carry_the_policy_too(client: Any, clinician: Any) -> None:
    client.force_login(clinician)
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_no_template_has_an_inline_script_or_event_handler() -> None:
    # The policy forbids inline scripts: one in a template would silently stop working.
    offenders = []
    for path in sorted((REPO / "templates").rglob("*.html")):
        text = path.read_text()
        if _INLINE_SCRIPT.search(text) or _EVENT_HANDLER.search(text):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_patient_pages_are_kept_neither_in_the_cache_nor_in_htmx_history(
    client: Any, clinician: Any
) -> None:
    # given a clinician on the dossier list, whose filters push its URL into the history
    client.force_login(clinician)
    response = client.get(reverse("consult:dossier-list"))
    # then the browser may keep no copy: not in its cache, and not in htmx's history store,
    # which would otherwise keep the page in local storage (going back loads it anew)
    assert "no-store" in response["Cache-Control"]
    config = re.search(r'<meta name="htmx-config"\s+content=\'([^\']*)\'', response.text)
    assert config is not None
    assert json.loads(config.group(1)) == {"historyCacheSize": 0, "refreshOnHistoryMiss": True}
