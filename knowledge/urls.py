"""Curator pages under /kb/."""

from __future__ import annotations

from django.urls import path, register_converter

from knowledge import views


class KeyConverter:
    """A unit or source key as bundle.KEY_PATTERN defines it (dots allowed, no slashes)."""

    regex = r"[a-z0-9][a-z0-9._-]{1,79}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(KeyConverter, "kbkey")

app_name = "knowledge"

version = "units/<kbkey:key>/v<int:number>/"

urlpatterns = [
    path("units/", views.unit_list, name="unit-list"),
    path("evidence/<int:version_id>/", views.evidence, name="evidence"),
    # Before the unit pages: "new" is a valid key, but this page wins.
    path("units/new/", views.unit_create, name="unit-create"),
    path("units/<kbkey:key>/", views.unit_detail, name="unit-detail"),
    path("units/<kbkey:key>/edit/", views.unit_edit, name="unit-edit"),
    path("units/<kbkey:key>/diff/", views.unit_diff, name="unit-diff"),
    path(version + "submit/", views.version_submit_view, name="version-submit"),
    path(version + "publish/", views.version_publish_view, name="version-publish"),
    path(version + "hotfix/", views.version_hotfix_view, name="version-hotfix"),
    path(version + "retire/", views.version_retire_view, name="version-retire"),
    path("review/", views.review_queue, name="review-queue"),
    path(
        "requests/<int:pk>/<str:decision>/",
        views.approval_decide,
        name="approval-decide",
    ),
    path("sources/", views.source_list, name="source-list"),
    path("sources/new/", views.source_create, name="source-create"),
    path("sources/<kbkey:key>/edit/", views.source_edit, name="source-edit"),
    path("bundle/", views.bundle_page, name="bundle"),
    path("bundle/mdtboard-kb.json", views.bundle_export_json, name="bundle-export-json"),
    path("bundle/mdtboard-kb.yaml", views.bundle_export_yaml, name="bundle-export-yaml"),
    path("diagnostics/", views.diagnostics, name="diagnostics"),
    path("coverage/", views.coverage, name="coverage"),
    path("ingest/", views.ingest, name="ingest"),
    path("ingest/draft/", views.ingest_draft, name="ingest-draft"),
]
