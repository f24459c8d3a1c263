"""Submitted snapshots are what consultations deliberated on: the database keeps them intact."""

from __future__ import annotations

from django.db import migrations

from mdtboard.core.dbtriggers import append_only


class Migration(migrations.Migration):
    dependencies = [("consult", "0001_initial")]
    operations = [append_only("consult_dossiersnapshot")]
