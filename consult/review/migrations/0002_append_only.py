"""What the clinicians decided stays as decided: versions, reviews and sign-offs are
append-only in the database."""

from __future__ import annotations

from django.db import migrations

from mdtboard.core.dbtriggers import append_only


class Migration(migrations.Migration):
    dependencies = [("review", "0001_initial")]
    operations = [
        append_only("review_planversion"),
        append_only("review_clinicianreview"),
        append_only("review_signoff"),
    ]
