from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from mdtboard.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    list_display = ("id", "created_at", "actor_label", "action", "object_type", "object_id")
    # Newest first: an auditor starts from what just happened.
    ordering = ("-id",)
    list_filter = (
        "action",
        ("actor", admin.RelatedOnlyFieldListFilter),
        "created_at",
        "object_type",
    )
    date_hierarchy = "created_at"
    search_fields = ("actor_label", "action", "object_type", "object_id")
    list_select_related = ("actor",)
    show_full_result_count = False  # COUNT(*) over a large log on every page is slow

    # Read-only everywhere: the log is append-only.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
