"""``manage.py rating_demo [--cases DIR] [--study NAME]``: everything a rating study over the
public cases needs, for trying it out: each case imported for the demo clinician's team of its
cancer type, a guideline consultation run to its plan, and its comparator: the independent human
plan shipped in ``consult/rating/demo_comparators/`` (written without seeing the system's plans),
or else a stand-in built from the case file's ``expected`` block; with ``--study``, the study
itself over every demo rater."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from clinical.vocab import PLAN_FORMAT
from consult.models import ConsultationStatus, LesionDossier, Plan
from consult.rating.analytics import study_blinding_check
from consult.rating.models import ComparatorSource, Study
from consult.rating.selectors import rater_choices
from consult.rating.services import (
    RatingServiceError,
    StudySpec,
    comparator_create,
    comparator_for_study,
    study_create,
)
from consult.services.batch import case_run
from consult.services.dossiers import DossierError
from knowledge.models import UnitVersion
from mdtboard.accounts.models import Team, User

CLINICIAN = "clinician@demo.mdtboard.test"
ADMIN = "admin@demo.mdtboard.test"
TEAM_BY_CANCER = {
    "hcc": "Hepatobiliary MDT",
    "lung_adenocarcinoma": "Thoracic MDT",
    "breast": "Breast MDT",
    "lymphoma": "Lymphoma MDT",
}
# Words of an expectation, to the modality the plan format needs.
_MODALITIES = (
    (("resection", "hepatectomy", "lobectomy", "surgery", "mastectomy", "conserving"), "surgery"),
    (("ablation",), "ablation"),
    (("tace", "chemoembol", "radioembol"), "locoregional"),
    (("radiotherapy", "sbrt", "radiation", "srs", "stereotactic"), "radiotherapy"),
    (("transplant",), "transplant"),
    (("entecavir", "tenofovir", "antiviral"), "antiviral"),
    (("watch", "surveillance", "observation"), "surveillance"),
    (("referral", "counselling", "fertility"), "referral"),
)


def _modality(terms: list[str]) -> str:
    text = " ".join(terms).casefold()
    for words, modality in _MODALITIES:
        if any(w in text for w in words):
            return modality
    return "systemic"


# How a tumor board writes an item of each kind, around the words the expectation names.
_PHRASES = {
    "surgery": "{terms}",
    "ablation": "Percutaneous {terms}",
    "locoregional": "Selective {terms}",
    "radiotherapy": "{terms}",
    "transplant": "{terms} assessment",
    "antiviral": "{terms} prophylaxis",
    "surveillance": "{terms} with clinical review",
    "referral": "Referral: {terms} preservation",
    "systemic": "{terms}",
}


def _term(term: str) -> str:
    """An expectation's word as a plan writes it ("pet" is PET, "ct" CT)."""
    return term.upper() if len(term) <= 4 else term


def _item(group: list[str], modality: str) -> str:
    """The item a tumor board writes for an expectation: the option it names first (a board
    names the option it chose, not every one that would satisfy the expectation)."""
    text = _PHRASES[modality].format(terms=_term(group[0]))
    return text[0].upper() + text[1:]


def _pathway(groups: list[list[str]]) -> list[dict[str, Any]]:
    """The expectation's groups as a board's pathway: the drugs it names together as one
    regimen (a board writes "trastuzumab with pertuzumab", not two steps), then each other
    kind of step."""
    drugs = [g for g in groups if _modality(g) == "systemic"]
    steps = []
    if drugs:
        names = " with ".join(_term(g[0]) for g in drugs)
        steps.append({"modality": "systemic", "description": _item([names], "systemic")})
    steps += [
        {"modality": _modality(g), "description": _item(g, _modality(g))}
        for g in groups
        if _modality(g) != "systemic"
    ]
    return [{"role": "primary", **step} for step in steps]


def comparator_from_expected(expected: dict[str, Any]) -> dict[str, Any] | None:
    """A short ``mdtboard.plan/1`` from an evaluation file's expectations (FORMAT.md §3):
    what the case's authors said the pathway must contain, must not contain, and must watch,
    each item worded the way a tumor board writes one. A demonstration stand-in for the plan
    a tumor board would write, made without the system's plan, nothing more."""
    groups = [list(g) for g in expected.get("primary_all") or []]
    seen = {t.casefold() for g in groups for t in g}
    groups += [
        list(g)
        for g in expected.get("recommend_all") or []
        if not any(t.casefold() in seen for t in g)
    ]
    if not groups:
        return None
    return {
        "format": PLAN_FORMAT,
        "recommendation": {
            "summary": "",
            "intent": None,
            "components": _pathway(groups)
            # A board writes the checks that must come first as steps of the pathway.
            + [
                {
                    "role": "primary",
                    "modality": "supportive",
                    "description": f"Baseline {_term(g[0])} assessment before treatment",
                }
                for g in expected.get("safety_any") or []
            ],
        },
        "rejected_options": [
            {"option": term.capitalize(), "reason": "not advised for this patient"}
            for term in expected.get("recommend_none") or []
        ],
        "safety": {
            "notes": [
                f"Baseline {_term(g[0])} assessment before treatment"
                for g in expected.get("safety_any") or []
            ]
        },
        "monitoring": [
            {
                "phase": "intermediate_3_12m",
                "what": f"{_term(g[0])} response assessment",
                "interval": "every 3 months",
                "anchor": "other",
            }
            for g in expected.get("monitoring_any") or []
        ],
        "needs_data": [],
    }


# Human MDT plans for the public cases, written without seeing the system's plans (README there).
DEMO_COMPARATORS = Path(__file__).resolve().parents[2] / "demo_comparators"


def _default_cases() -> Path:
    shared = os.environ.get("MDTBOARD_SHARED_DIR") or settings.BASE_DIR.parent / "shared"
    return Path(shared) / "cases" / "public"


class Command(BaseCommand):
    help = (
        "Prepare a rating study over the public cases: import them, run guideline "
        "consultations, add their independent comparator plans (and the study)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cases", type=Path, default=None)
        parser.add_argument("--study", default="", help="also create a study of this name")
        parser.add_argument("--raters-per-packet", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        folder: Path = options["cases"] or _default_cases()
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if not files:
            raise CommandError(f"{folder}: no case files (*.json)")
        clinician = User.objects.filter(email=CLINICIAN).first()
        if clinician is None:
            raise CommandError("The demo users are missing: run `make run` or `seed_demo` first.")
        if not UnitVersion.objects.filter(status="published").exists():
            raise CommandError("The knowledge base is empty: run `manage.py load_kb_seed` first.")
        consultation_ids = []
        for path in files:
            consultation_id = self._case(path, clinician)
            if consultation_id is not None:
                consultation_ids.append(consultation_id)
        if options["study"]:
            self._study(options["study"], consultation_ids, options["raters_per_packet"])
        else:
            self.stdout.write(
                f"\n{len(consultation_ids)} cases ready. Sign in as {ADMIN} and choose "
                "Rating studies → New study, or run again with --study NAME."
            )

    def _case(self, path: Path, clinician: User) -> int | None:
        raw = path.read_bytes()
        document = json.loads(raw)
        team = Team.objects.filter(name=TEAM_BY_CANCER.get(document.get("cancer_type"), "")).first()
        team = team or clinician.teams.first()
        if team is None:
            raise CommandError(f"{CLINICIAN} belongs to no team.")
        dossier = LesionDossier.objects.filter(
            patient__team=team, case_id=document.get("case_id")
        ).first()
        plan = (
            Plan.objects.filter(
                consultation__dossier=dossier, consultation__status=ConsultationStatus.COMPLETED
            )
            .select_related("consultation__dossier")
            .order_by("-created_at")
            .first()
            if dossier
            else None
        )
        if plan is None:
            try:
                consultation = case_run(
                    raw=raw, filename=path.name, engine="guideline", actor=clinician, team=team
                )
            except DossierError as exc:
                self.stderr.write(f"{path.name}: not imported: {exc}")
                return None
            if consultation.status != ConsultationStatus.COMPLETED:
                self.stderr.write(f"{path.name}: consultation {consultation.status}")
                return None
            dossier, consultation_id = consultation.dossier, consultation.pk
            self.stdout.write(f"{path.name}: consultation {consultation_id} finished")
        else:
            dossier = plan.consultation.dossier
            consultation_id = plan.consultation_id
            self.stdout.write(f"{path.name}: consultation {consultation_id} (kept)")
        # A comparator made from the team's decision on the system's plan is not independent:
        # the study pairs the plan with the stand-in below, never with it.
        if comparator_for_study(dossier=dossier) is None:
            written = DEMO_COMPARATORS / f"{document.get('case_id')}.json"
            if written.is_file():
                comparator_create(
                    actor=clinician,
                    dossier=dossier,
                    plan=json.loads(written.read_bytes()),
                    source=ComparatorSource.IMPORTED,
                    source_ref=f"demo_comparators/{written.name}: written without the system plan",
                )
                self.stdout.write(f"{path.name}: comparator plan written by an oncologist")
                return consultation_id
            comparator = comparator_from_expected(document.get("expected") or {})
            if comparator is None:
                self.stderr.write(f"{path.name}: no expected block; enter its comparator by hand")
                return None
            comparator_create(
                actor=clinician,
                dossier=dossier,
                plan=comparator,
                source=ComparatorSource.DEMO,
                source_ref=f"{path.name}#expected",
            )
            self.stdout.write(f"{path.name}: comparator plan built from its expected block")
        return consultation_id

    def _study(self, name: str, consultation_ids: list[int], per_packet: int) -> None:
        admin = User.objects.filter(email=ADMIN).first()
        if admin is None:
            raise CommandError(f"{ADMIN} is missing: run `make run` or `seed_demo` first.")
        raters = list(rater_choices())
        if Study.objects.filter(name=name).exists():
            raise CommandError(f"A study named {name!r} exists already.")
        try:
            study = study_create(
                actor=admin,
                spec=StudySpec(
                    name=name,
                    description="Demo over the public cases; independent human comparator plans.",
                    consultation_ids=consultation_ids,
                    rater_ids=[r.pk for r in raters],
                    raters_per_packet=per_packet or len(raters),
                ),
            )
        except RatingServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"\nStudy {study.name!r}: {study.packets.count()} packets for "
            f"{len(raters)} raters ({', '.join(r.email for r in raters)})."
        )
        check = study_blinding_check(study=study)
        if check is not None:
            self.stdout.write(f"Blinding check (length and wording): {check.line()}")
