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
    copy_of: str = "",
) -> Any:
    """``copy_of`` makes it another patient with the same findings (its own pseudonym and
    case id), for tests that need the same case several times."""
    from consult.evaluation import plan_offline
    from consult.models import Consultation, Plan
    from consult.services.consultations import consultation_start
    from mdtboard.audit.hashing import payload_hash
    from tests.fixtures.consultations import submitted

    dossier = (
        submitted_copy(clinician, team, case, copy_of)
        if copy_of
        else submitted(clinician, team, case)
    )
    consultation = consultation_start(actor=clinician, dossier=dossier, enqueue=False)
    plan = copy.deepcopy(plan_offline(consultation.snapshot.data, seed_bundle()))
    if edit is not None:
        edit(plan)
    Consultation.objects.filter(pk=consultation.pk).update(
        status="completed", started_at=timezone.now(), finished_at=timezone.now()
    )
    Plan.objects.create(consultation=consultation, payload=plan, content_hash=payload_hash(plan))
    return Consultation.objects.get(pk=consultation.pk)


def submitted_copy(clinician: Any, team: Any, case: str, suffix: str) -> Any:
    import json

    from consult.services.dossiers import case_import, dossier_submit
    from tests.consult.integration.test_consultations import PUBLIC_CASES

    data = json.loads((PUBLIC_CASES / case).read_text())
    data["case_id"] = f"{data['case_id']}-{suffix}"
    data["patient"]["pseudonym"] = f"{data['patient']['pseudonym']}-{suffix}"
    result = case_import(
        actor=clinician, team=team, raw=json.dumps(data).encode(), filename=f"{suffix}.json"
    )
    assert result.dossier is not None, result.errors
    dossier_submit(actor=clinician, dossier=result.dossier)
    return result.dossier
