"""Create pgvector's ``vector`` extension before any model uses a vector column."""

from __future__ import annotations

from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [VectorExtension()]
