"""What a rater submitted, and the comparator plans they scored, are kept as written."""

from __future__ import annotations

from django.db import migrations

from mdtboard.core.dbtriggers import append_only


class Migration(migrations.Migration):
    dependencies = [("rating", "0001_initial")]
    operations = [
        append_only("rating_comparatorplan"),
        append_only("rating_rating"),
        append_only("rating_score"),
        append_only("rating_llmrating"),
        append_only("rating_llmscore"),
    ]
