"""Snapshots made before facts were frozen get them now, computed by the calculators of this
upgrade and marked ``backfill`` (the pages say so): the best that can be known of what was shown
then. Snapshots are append-only, so the trigger that refuses UPDATE is lifted for this one
statement per row and put back in the same transaction."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from clinical.frozen import freeze
from mdtboard.audit.hashing import payload_hash

TABLE = "consult_dossiersnapshot"
TRIGGER = f"{TABLE}_append_only"


def backfill(apps: Any, schema_editor: Any) -> None:
    snapshot_model = apps.get_model("consult", "DossierSnapshot")
    pending = snapshot_model.objects.filter(facts_version="").order_by("pk")
    if not pending.exists():
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {TABLE} DISABLE TRIGGER {TRIGGER}")
        try:
            for snapshot in pending.iterator():
                document = freeze(snapshot.data).to_json()
                snapshot_model.objects.filter(pk=snapshot.pk).update(
                    facts=document,
                    facts_version=document["version"],
                    facts_hash=payload_hash(document),
                    facts_origin="backfill",
                )
        finally:
            cursor.execute(f"ALTER TABLE {TABLE} ENABLE TRIGGER {TRIGGER}")


class Migration(migrations.Migration):
    dependencies = [
        ("consult", "0007_snapshot_frozen_facts"),
    ]

    operations = [
        # Nothing to undo: the columns go with 0007.
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
