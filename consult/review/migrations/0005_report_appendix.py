"""A PDF report records the appendix sections its clinician chose after the two-page summary
(issue 24); reports made before it had none chosen."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0004_memory_entry_refs"),
    ]

    operations = [
        migrations.AddField(
            model_name="planreport",
            name="appendix",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
