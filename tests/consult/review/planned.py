"""A completed consultation with a plan, made without running the board: the dossier is a
real public case, submitted as a clinician would; the plan is the guideline engine's, from
the seed knowledge base in memory. For tests of what happens to a plan afterwards."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from django.utils import timezone

from tests.fixtures.seed import seed_bundle


def planned(
    clinician: Any,
    team: Any,
    case: str = "pub-hcc-01.json",
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    from consult.evaluation import plan_offline
    from consult.models import Consultation, Plan
    from consult.services.consultations import consultation_start
    from mdtboard.audit.hashing import payload_hash
    from tests.fixtures.consultations import submitted

    dossier = submitted(clinician, team, case)
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    plan = copy.deepcopy(plan_offline(consultation.snapshot.data, seed_bundle()))
    if edit is not None:
        edit(plan)
    Consultation.objects.filter(pk=consultation.pk).update(
        status="completed", started_at=timezone.now(), finished_at=timezone.now()
    )
    Plan.objects.create(consultation=consultation, payload=plan, content_hash=payload_hash(plan))
    return Consultation.objects.get(pk=consultation.pk)
