"""Record each row's hash scheme: existing rows keep plain SHA-256 (1), new rows are HMAC (2).

Adding a column with a constant default rewrites no row, so the append-only trigger is not
involved and the existing chain verifies unchanged.
"""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_append_only")]
    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="hash_scheme",
            field=models.PositiveSmallIntegerField(default=1),
        ),
    ]
