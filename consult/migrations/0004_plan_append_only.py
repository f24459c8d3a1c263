"""A plan is what the board concluded: the database keeps it as written."""

from __future__ import annotations

from django.db import migrations

from mdtboard.core.dbtriggers import append_only


class Migration(migrations.Migration):
    dependencies = [("consult", "0003_consultations")]
    operations = [append_only("consult_plan")]
