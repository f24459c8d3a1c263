"""The append-only, hash-chained audit log."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    """One thing somebody did. Rows are never updated or deleted (a database trigger refuses).

    ``hash`` (an HMAC keyed from the environment) covers this row's fields and the previous
    row's hash, so editing or removing any row breaks every later link; ``audit_verify`` finds
    the first broken one, and compares the head with the anchor kept outside the database
    (``mdtboard.audit.anchor``) to find rows deleted at the head or a recomputed chain.
    """

    created_at = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        # Users who acted are deactivated, never deleted: the trail must keep naming them.
        on_delete=models.PROTECT,
        related_name="+",
    )
    actor_label = models.CharField(max_length=254, blank=True)
    action = models.CharField(max_length=80, db_index=True)
    object_type = models.CharField(max_length=80, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    payload = models.JSONField(default=dict, blank=True)
    payload_hash = models.CharField(max_length=64)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # 1: plain SHA-256 (rows from before the key), 2: HMAC-SHA256 keyed by AUDIT_HMAC_KEY.
    hash_scheme = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.action} {self.object_type}:{self.object_id}"
