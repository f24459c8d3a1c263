from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("consult", "0008_backfill_snapshot_facts"),
    ]

    operations = [
        migrations.AddField(
            model_name="consultation",
            name="status_note",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
