"""Make the audit table append-only in the database itself, whatever the application does."""

from __future__ import annotations

from django.db import migrations

from mdtboard.core.dbtriggers import append_only


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]
    operations = [append_only("audit_auditevent")]
