"""Django's own cap on form fields (DATA_UPLOAD_MAX_MEMORY_SIZE), behind the server's cap."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.urls import reverse

from consult.models import LesionDossier, Patient

pytestmark = pytest.mark.django_db


def test_a_form_field_over_two_mebibytes_is_refused_before_the_view_reads_it(client: Any) -> None:
    # given an anonymous sign-in form whose field holds 2.3 MiB: under the server's request
    # cap (64 MiB) and under Django's default field cap (2.5 MB), over ours (2 MiB)
    field = "x" * (2 * 1024 * 1024 + 300 * 1024)
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE < len(field) < settings.MAX_REQUEST_BYTES
    # when it is posted
    response = client.post(reverse("account_login"), {"login": field, "password": "x"})
    # then Django refuses the request as bad rather than holding it in memory
    assert response.status_code == 400


def test_a_large_field_in_a_clinician_form_saves_nothing(
    clinician: Any, team: Any, client: Any
) -> None:
    # given a signed-in clinician filing a new dossier whose pseudonym field is 2.3 MiB
    client.force_login(clinician)
    field = "x" * (2 * 1024 * 1024 + 300 * 1024)
    # when it is posted
    response = client.post(reverse("consult:dossier-create"), {"pseudonym": field, "team": team.pk})
    # then the request is refused and nothing is saved
    assert response.status_code == 400
    assert not Patient.objects.exists()
    assert not LesionDossier.objects.exists()
