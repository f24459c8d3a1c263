"""Builders for rating tests: comparator plans entered through the service, studies set up
through the service (the finished consultations they compare come from
``tests.fixtures.consultations.completed``)."""

from __future__ import annotations

from typing import Any

from consult.models import Consultation
from consult.rating.models import Study
from consult.rating.rubric import DIMENSION_KEYS
from consult.rating.services import StudySpec, comparator_create, study_create

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
