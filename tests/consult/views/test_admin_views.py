"""The clinical pages as an administrator sees them, whichever kind: a superuser, or someone
only put in the admin group. Administrators belong to no team, see every team's cases, may
file a case for any team and may stop any consultation."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from consult.models import ConsultationStatus, LesionDossier
from consult.services.consultations import consultation_start
from consult.services.dossiers import dossier_submit

pytestmark = pytest.mark.django_db


def test_admin_sees_every_team_and_files_a_dossier_for_any_team(
    client: Any, any_admin: Any, dossier: LesionDossier, other_team: Any
) -> None:
    # given an administrator in no team, and a dossier of the hepatobiliary team
    client.force_login(any_admin)
    # when they open the dossier list
    listing = client.get(reverse("consult:dossier-list")).content.decode()
    # then they see the team's dossier
    assert "pub-hcc-01" in listing
    # when they file a new case for the thoracic team
    response = client.post(
        reverse("consult:dossier-create"),
        {
            "team": other_team.pk,
            "pseudonym": "LUNG-A1",
            "cancer_type": "lung_adenocarcinoma",
            "question": "Adjuvant therapy?",
        },
    )
    # then the dossier is created in that team and they go on to fill it in
    created = LesionDossier.objects.get(patient__pseudonym="LUNG-A1")
    assert created.patient.team == other_team
    assert response["Location"] == reverse("consult:dossier-edit", args=[created.pk, "patient"])


def test_admin_stops_a_consultation_someone_else_started(
    client: Any, any_admin: Any, clinician: Any, dossier: LesionDossier
) -> None:
    # given a consultation a clinician started, still queued
    dossier_submit(actor=clinician, dossier=dossier)
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    board_url = reverse("consult:consultation-board", args=[consultation.pk])
    client.force_login(any_admin)
    # when an administrator opens its board
    board = client.get(board_url).content.decode()
    # then they are offered to cancel it
    assert "Cancel consultation" in board
    # when they cancel it
    response = client.post(
        reverse("consult:consultation-cancel", args=[consultation.pk]), follow=True
    )
    # then it stops, and the board says the cancellation was requested
    consultation.refresh_from_db()
    assert consultation.status == ConsultationStatus.CANCELLED
    assert "Cancellation requested" in response.content.decode()
