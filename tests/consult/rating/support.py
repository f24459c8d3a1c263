"""Builders for rating tests: finished consultations with the guideline engine's real plan
(computed in memory over the seed knowledge base, so no worker thread is needed), comparator
plans entered through the service, studies set up through the service."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from django.utils import timezone

from consult.casefile.validate import parse_case_bytes
from consult.evaluation import plan_offline
from consult.models import Consultation, ConsultationStatus, Plan
from consult.rating.models import Study
from consult.rating.rubric import DIMENSION_KEYS
from consult.rating.services import StudySpec, comparator_create, study_create
from consult.services.dossiers import case_import, dossier_submit
from mdtboard.audit.hashing import payload_hash
from tests.fixtures.seed import seed_bundle
from tests.paths import PUBLIC_CASES

# A comparator plan as a tumor board might write it for pub-hcc-01 (HBV cirrhosis, BCLC A).
COMPARATOR = {
    "format": "mdtboard.plan/1",
    "engine": "human-mdt",  # dropped on the way in: a rater must never see it
    "recommendation": {
        "summary": "Resection with antiviral cover.",
        "intent": "curative",
        "components": [
            {
                "role": "primary",
                "modality": "surgery",
                "description": "Laparoscopic segmentectomy of segment VI",
            },
            {
                "role": "primary",
                "modality": "antiviral",
                "description": "Entecavir 0.5 mg daily, continued long term",
            },
            {
                "role": "alternative",
                "modality": "ablation",
                "description": "Microwave ablation of the lesion",
                "when": "if surgery is declined or the patient is unfit",
            },
        ],
    },
    "safety": {"notes": ["Check renal function before adjusting entecavir."]},
    "monitoring": [
        {
            "phase": "intermediate_3_12m",
            "what": "Multiphase liver MRI and AFP",
            "interval": "every 3 months for 2 years",
            "anchor": "mRECIST",
        }
    ],
}


def system_plan(case: dict[str, Any]) -> dict[str, Any]:
    """The guideline engine's plan for a case, as a consultation would have saved it. On a
    thread of its own: the engine runs an event loop, and a browser test already has one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(plan_offline, case, seed_bundle()).result()


def finished_consultation(
    clinician: Any, team: Any, name: str, *, plan: dict[str, Any] | None = None
) -> Consultation:
    """A submitted dossier from a public case file and a completed consultation with its
    plan (the engine's own, unless ``plan`` is given)."""
    path = PUBLIC_CASES / name
    result = case_import(actor=clinician, team=team, raw=path.read_bytes(), filename=path.name)
    assert result.dossier is not None, result.errors
    snapshot = dossier_submit(actor=clinician, dossier=result.dossier)
    started = timezone.now() - timedelta(minutes=3)
    consultation = Consultation.objects.create(
        snapshot=snapshot,
        dossier=result.dossier,
        status=ConsultationStatus.COMPLETED,
        engine="guideline",
        engine_label="guideline-engine",
        created_by=clinician,
        started_at=started,
        finished_at=started + timedelta(seconds=95),
    )
    parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
    document = plan if plan is not None else system_plan(parsed.canonical())
    Plan.objects.create(
        consultation=consultation, payload=document, content_hash=payload_hash(document)
    )
    return consultation


def with_comparator(clinician: Any, consultation: Consultation, **overrides: Any) -> Any:
    return comparator_create(
        actor=clinician,
        dossier=consultation.dossier,
        plan={**COMPARATOR, **overrides},
        minutes_to_write=25,
    )


def study_over(
    admin: Any,
    consultations: list[Consultation],
    raters: list[Any],
    *,
    per_packet: int | None = None,
    seed: int = 20261124,
    llm_arm: bool = False,
    name: str = "Pilot",
) -> Study:
    return study_create(
        actor=admin,
        spec=StudySpec(
            name=name,
            consultation_ids=[c.pk for c in consultations],
            rater_ids=[r.pk for r in raters],
            raters_per_packet=per_packet or len(raters),
            seed=seed,
            llm_arm=llm_arm,
        ),
    )


def answers(
    a: int | dict[str, int] = 4,
    b: int | dict[str, int] = 3,
    *,
    preference: str = "A",
    guess: str = "A",
    comment: str = "",
) -> dict[str, str]:
    """A complete rating form: every dimension of plan A scored ``a``, of plan B ``b``."""
    data = {"preference": preference, "system_guess": guess, "comment": comment}
    for position, value in (("A", a), ("B", b)):
        for key in DIMENSION_KEYS:
            score = value[key] if isinstance(value, dict) else value
            data[f"{position}-{key}"] = str(score)
    return data
