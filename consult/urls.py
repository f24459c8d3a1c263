from __future__ import annotations

from django.urls import path

from consult import views, views_fhir
from consult.review import views as review_views

app_name = "consult"

urlpatterns = [
    path("patients/", views.patient_list, name="patient-list"),
    path("patients/<int:pk>/timeline/", views.patient_timeline_view, name="patient-timeline"),
    path("dossiers/", views.dossier_list, name="dossier-list"),
    path("dossiers/new/", views.dossier_create_view, name="dossier-create"),
    path("dossiers/import/", views.dossier_import, name="dossier-import"),
    path("dossiers/<int:pk>/", views.dossier_detail, name="dossier-detail"),
    path("dossiers/<int:pk>/edit/<slug:section>/", views.dossier_edit, name="dossier-edit"),
    path(
        "dossiers/<int:pk>/edit/<slug:section>/check/",
        views.dossier_check_field,
        name="dossier-check-field",
    ),
    path("dossiers/<int:pk>/submit/", views.dossier_submit_view, name="dossier-submit"),
    path("dossiers/<int:pk>/recompute/", views.dossier_recompute_view, name="dossier-recompute"),
    path("dossiers/<int:pk>/export.json", views.dossier_export_view, name="dossier-export"),
    path(
        "dossiers/<int:pk>/export.fhir.json",
        views_fhir.dossier_export_fhir_view,
        name="dossier-export-fhir",
    ),
    path("dossiers/import/fhir/", views_fhir.fhir_import_confirm, name="fhir-import-confirm"),
    path("dossiers/import/fhir-server/", views_fhir.fhir_server_import, name="fhir-server-import"),
    path("schema/mdtboard.case-1.json", views.case_schema, name="case-schema"),
    path("dossiers/<int:pk>/consult/", views.consultation_start_view, name="consultation-start"),
    path("consultations/<int:pk>/", views.consultation_board, name="consultation-board"),
    path(
        "consultations/<int:pk>/cancel/", views.consultation_cancel_view, name="consultation-cancel"
    ),
    path("consultations/<int:pk>/plan/", review_views.plan_detail, name="plan-detail"),
    path("consultations/<int:pk>/plan.json", views.plan_json, name="plan-json"),
    path(
        "consultations/<int:pk>/careplan.fhir.json",
        views_fhir.plan_careplan_view,
        name="plan-careplan",
    ),
]
