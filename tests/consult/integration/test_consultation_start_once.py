"""Issue 25: "Start consultation" is idempotent per form: the same form sent twice, or twenty
times at once, starts one consultation (with an LLM, each one costs tokens)."""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse

from consult.models import Consultation
from consult.services.consultations import ConsultationError, consultation_start
from tests.fixtures.consultations import submitted


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_posts_of_one_form_start_one_consultation(
    clinician: Any, team: Any
) -> None:
    # given a submitted dossier and one "Start consultation" form, sent 20 times at once
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    key = uuid.uuid4()
    start = threading.Barrier(20)
    started: list[Any] = []

    def send() -> None:
        try:
            start.wait()
            started.append(
                consultation_start(
                    actor=clinician, dossier=dossier, enqueue=False, idempotency_key=key
                ).pk
            )
        except Exception as exc:  # noqa: BLE001 - recorded and asserted below
            started.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then one consultation exists, and every request was answered with it
    assert Consultation.objects.count() == 1
    assert started == [Consultation.objects.get().pk] * 20
    # while a new form (a new key) starts a new one, as a clinician who means it expects
    consultation_start(actor=clinician, dossier=dossier, enqueue=False, idempotency_key=None)
    assert Consultation.objects.count() == 2


@pytest.mark.django_db
def test_the_dossier_page_form_carries_its_key_and_a_resend_opens_the_same_board(
    client: Any, clinician: Any, colleague: Any, team: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consult.services import consultations

    monkeypatch.setattr(consultations, "_enqueue", lambda consultation_id: None)
    dossier = submitted(clinician, team, "pub-hcc-01.json")
    client.force_login(clinician)
    page = client.get(reverse("consult:dossier-detail", args=[dossier.pk])).content.decode()
    key = re.search(r'name="key" value="([0-9a-f-]{36})"', page)
    assert key is not None
    form = {"key": key.group(1), "engine": "guideline", "max_rounds": "3"}
    url = reverse("consult:consultation-start", args=[dossier.pk])
    first, again = client.post(url, form), client.post(url, form)
    assert first["Location"] == again["Location"]
    assert Consultation.objects.count() == 1
    # the same key from another person is not theirs to reuse
    with pytest.raises(ConsultationError, match="already used"):
        consultation_start(
            actor=colleague, dossier=dossier, enqueue=False, idempotency_key=uuid.UUID(form["key"])
        )
