"""Issue 26, finding 5: the patient and dossier lists and the dossier edit pages are audited."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from mdtboard.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _last(action: str, user: Any) -> AuditEvent:
    event = AuditEvent.objects.filter(action=action, actor=user).order_by("-id").first()
    assert event is not None, f"no {action} event for {user}"
    return event


def test_lists_record_the_ids_they_showed(
    client: Any, dossier: Any, colleague: Any, outsider: Any
) -> None:
    # given a colleague of the dossier's team
    client.force_login(colleague)
    # when they open the patient list and the dossier list
    assert client.get(reverse("consult:patient-list")).status_code == 200
    assert client.get(reverse("consult:dossier-list")).status_code == 200
    # then each read is on the log with the ids it showed, and no patient data
    patients = _last("patient.list", colleague)
    assert dossier.patient_id in patients.payload["ids"]
    assert set(patients.payload) == {"ids", "count"}
    dossiers = _last("dossier.list", colleague)
    assert dossiers.payload["ids"] == [dossier.pk]
    # and a clinician of another team is recorded as having seen none of them
    client.force_login(outsider)
    client.get(reverse("consult:dossier-list"))
    assert _last("dossier.list", outsider).payload == {"ids": [], "count": 0}


def test_opening_a_dossier_edit_page_is_audited_with_its_section(
    client: Any, dossier: Any, clinician: Any
) -> None:
    client.force_login(clinician)
    url = reverse("consult:dossier-edit", kwargs={"pk": dossier.pk, "section": "patient"})
    assert client.get(url).status_code == 200
    event = _last("dossier.edit_view", clinician)
    assert (event.object_id, event.payload) == (str(dossier.pk), {"section": "patient"})
