"""The memory pages: administrators only, CSRF on every change, edits and retirements
audited."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from consult import learning
from consult.review import services
from knowledge.memory.models import ExperienceEntry
from mdtboard.audit.models import AuditEvent
from tests.consult.review.planned import planned

pytestmark = pytest.mark.django_db


def _entry(clinician: Any, team: Any) -> ExperienceEntry:
    consultation = planned(clinician, team, "pub-hcc-01.json")
    review = services.review_decide(
        actor=clinician,
        consultation=consultation,
        decision="accept",
        reason="",
        idempotency_key=uuid.uuid4(),
        base_version=1,
    )
    return ExperienceEntry.objects.get(pk=learning.experience_from_review(review_id=review.pk))


@pytest.mark.parametrize("persona", ["clinician", "curator", "rater"])
def test_memory_pages_are_refused_to_other_roles(
    request: pytest.FixtureRequest, persona: str, client: Client, team: Any
) -> None:
    client.force_login(request.getfixturevalue(persona))
    for url in (reverse("memory:home"), reverse("memory:evolution")):
        assert client.get(url).status_code == 403
    assert client.post(reverse("memory:prune")).status_code == 403
    assert client.post(reverse("memory:propose")).status_code == 403


def test_admin_browses_edits_and_retires_an_entry(
    client: Client, clinician: Any, team: Any, admin_user: Any
) -> None:
    entry = _entry(clinician, team)
    client.force_login(admin_user)
    page = client.get(reverse("memory:home")).content.decode()
    assert f'id="entry-{entry.pk}"' in page
    assert "1 CorrectKB, 0 ChainKB" in page
    # when the admin corrects the key reasoning
    data = {name: getattr(entry, name) for name in ("case_summary", "question", "plan")}
    data["key_reasoning"] = "Resection for a single lesion with preserved liver function."
    response = client.post(reverse("memory:entry", args=[entry.pk]), data)
    assert response.status_code == 302
    entry.refresh_from_db()
    assert entry.key_reasoning.startswith("Resection for a single lesion")
    edit = AuditEvent.objects.get(action="memory.entry.edit", actor=admin_user)
    assert edit.payload == {"fields": ["key_reasoning"]}
    # and retires it
    client.post(reverse("memory:entry-retire", args=[entry.pk]), {"reason": "Outdated"})
    entry.refresh_from_db()
    assert entry.status == "retired"
    assert entry.retired_reason == "Outdated"


def test_changes_without_a_csrf_token_are_refused(
    clinician: Any, team: Any, admin_user: Any
) -> None:
    entry = _entry(clinician, team)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    response = browser.post(reverse("memory:entry-retire", args=[entry.pk]), {"reason": "x"})
    assert response.status_code == 403
    entry.refresh_from_db()
    assert entry.status == "active"


def test_llm_text_in_an_entry_is_escaped(
    client: Client, clinician: Any, team: Any, admin_user: Any
) -> None:
    entry = _entry(clinician, team)
    ExperienceEntry.objects.filter(pk=entry.pk).update(case_summary="<script>alert(1)</script>")
    client.force_login(admin_user)
    page = client.get(reverse("memory:home")).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;" in page
