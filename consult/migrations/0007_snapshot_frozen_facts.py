"""A snapshot keeps the facts derived from it when it was made (clinical.frozen), with the
version of the code that computed them, so that no page, report or export computes them again."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("consult", "0006_consultation_start_idempotency_key"),
    ]

    operations = [
        migrations.AddField(
            model_name="dossiersnapshot",
            name="facts",
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name="dossiersnapshot",
            name="facts_version",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="dossiersnapshot",
            name="facts_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="dossiersnapshot",
            name="facts_origin",
            field=models.CharField(
                choices=[
                    ("submission", "computed when the dossier was submitted"),
                    ("recompute", "recomputed at a clinician's request"),
                    ("backfill", "computed at an upgrade (the snapshot predates frozen facts)"),
                ],
                default="submission",
                max_length=16,
            ),
        ),
    ]
