"""``manage.py runcase FILE [--engine guideline|llm] [--format json|text] [--pdf OUT.pdf]``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consult.models import ConsultationStatus
from consult.review.models import PaperSize, ReportAppendix, ReportStatus
from consult.review.services import ReviewError, report_path, report_render, report_request
from consult.services.batch import case_run, cli_identity
from consult.services.consultations import ConsultationError
from consult.services.dossiers import DossierError


class Command(BaseCommand):
    help = "Import a case file, deliberate on it synchronously and print the plan."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--engine", choices=["guideline", "llm"], default="guideline")
        parser.add_argument("--format", choices=["json", "text"], default="text")
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument(
            "--pdf",
            type=Path,
            help="also write the plan's default PDF report (the two-page summary) to this file",
        )
        parser.add_argument("--paper", choices=PaperSize.values, default=PaperSize.A4)
        parser.add_argument(
            "--appendix",
            default="",
            help="appendix sections to add after the summary, comma-separated: "
            + ", ".join(ReportAppendix.values),
        )

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
        if options["pdf"]:
            self._pdf(consultation, options)
        if options["format"] == "json":
            self.stdout.write(json.dumps(plan, indent=2, ensure_ascii=False))
            return
        self.stdout.write(render_text(plan))

    def _pdf(self, consultation: Any, options: dict[str, Any]) -> None:
        """The plan's report, rendered here (no worker), written where asked."""
        target: Path = options["pdf"]
        appendix = [a.strip() for a in str(options["appendix"]).split(",") if a.strip()]
        actor, _ = cli_identity()
        try:
            report = report_request(
                actor=actor,
                consultation=consultation,
                paper=options["paper"],
                appendix=appendix,
                enqueue=False,
            )
        except ReviewError as exc:
            raise CommandError(str(exc)) from exc
        if report_render(report_id=report.pk) != ReportStatus.DONE:
            report.refresh_from_db()
            raise CommandError(f"the PDF report failed: {report.error}")
        report.refresh_from_db()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(report_path(report).read_bytes())
        self.stderr.write(f"PDF report written to {target} ({report.size_bytes} bytes)")


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
