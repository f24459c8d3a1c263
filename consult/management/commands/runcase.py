"""``manage.py runcase FILE [--engine guideline|llm] [--format json|text]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.models import ConsultationStatus
from consult.services.batch import case_run
from consult.services.consultations import ConsultationError
from consult.services.dossiers import DossierError


class Command(BaseCommand):
    help = "Import a case file, deliberate on it synchronously and print the plan."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--engine", choices=["guideline", "llm"], default="guideline")
        parser.add_argument("--format", choices=["json", "text"], default="text")
        parser.add_argument("--rounds", type=int, default=3)

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            consultation = case_run(
                raw=path.read_bytes(),
                filename=str(path),
                engine=options["engine"],
                max_rounds=options["rounds"],
            )
        except DossierError as exc:
            raise CommandError("\n".join(str(e) for e in exc.errors) or str(exc)) from exc
        except (ConsultationError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if consultation.status != ConsultationStatus.COMPLETED:
            raise CommandError(
                f"consultation {consultation.pk} {consultation.status}: {consultation.error}"
            )
        plan = consultation.plan.payload
        if options["format"] == "json":
            self.stdout.write(json.dumps(plan, indent=2, ensure_ascii=False))
            return
        self.stdout.write(render_text(plan))


def render_text(plan: dict[str, Any]) -> str:
    lines = [
        f"Plan for {plan['case_id']} ({plan['engine']}, {plan['rounds']} round(s), "
        f"confidence {plan['confidence']})"
    ]
    staging = ", ".join(f"{k} {v}" for k, v in plan["staging"].items() if v is not None)
    lines += [
        f"Staging: {staging or 'not derivable'}",
        "",
        f"Recommendation ({plan['recommendation']['intent']}): {plan['recommendation']['summary']}",
    ]
    for component in plan["recommendation"]["components"]:
        lines.append(
            f"  - [{component['modality']}] {component['description']}"
            f"  [{', '.join(component['evidence'])}]"
        )
        lines += [f"      condition: {c}" for c in component.get("conditions", [])]
    for option in plan["rejected_options"]:
        lines.append(f"  x {option['option']}: {option['reason']}")
    lines.append("Safety:")
    for gate in plan["safety"]["gates"]:
        lines.append(f"  {gate['status'].upper():7} {gate['gate']}: {gate['detail']}")
    for flag in plan["safety"]["flags"]:
        lines.append(f"  {flag['severity'].upper():7} {flag['text']}")
    lines.append("Monitoring:")
    for item in plan["monitoring"]:
        lines.append(f"  {item['phase']}: {item['what']} — {item['interval']} ({item['anchor']})")
    if plan.get("needs_data"):
        lines.append("Data needed: " + "; ".join(plan["needs_data"]))
    lines.append(f"Evidence: {len(plan['evidence'])} unit(s)")
    return "\n".join(lines)
