"""Existing experience-memory entries get the case (dossier) and the person whose judgement
they record, read from the review or rating they came from (knowledge/memory's 0002 added the
fields; the knowledge app never reads consult, so the consult side fills them)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def backfill(apps: Any, schema_editor: Any) -> None:
    entry_model = apps.get_model("memory", "ExperienceEntry")
    review_model = apps.get_model("review", "ClinicianReview")
    rating_model = apps.get_model("rating", "Rating")
    for entry in entry_model.objects.filter(case_ref__isnull=True):
        kind, _, number = entry.source_ref.partition(":")
        if not number.isdigit():
            continue
        if kind == "review":
            review = (
                review_model.objects.filter(pk=int(number))
                .values("consultation__dossier_id", "reviewer_id")
                .first()
            )
            if review is not None:
                entry.case_ref = review["consultation__dossier_id"]
                entry.judged_by_ref = review["reviewer_id"]
        elif kind == "rating":
            rating = (
                rating_model.objects.filter(pk=int(number))
                .values("assignment__packet__consultation__dossier_id", "assignment__rater_id")
                .first()
            )
            if rating is not None:
                entry.case_ref = rating["assignment__packet__consultation__dossier_id"]
                entry.judged_by_ref = rating["assignment__rater_id"]
        if entry.case_ref is not None:
            entry.save(update_fields=["case_ref", "judged_by_ref"])


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0003_review_state_machine"),
        ("rating", "0003_comparator_provenance_and_vetting"),
        ("memory", "0002_entry_case_and_judge_refs"),
    ]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
