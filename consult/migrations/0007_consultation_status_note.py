from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("consult", "0006_consultation_start_idempotency_key"),
    ]

    operations = [
        migrations.AddField(
            model_name="consultation",
            name="status_note",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
