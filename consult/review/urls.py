from __future__ import annotations

from django.urls import path

from consult.review import views

app_name = "review"

urlpatterns = [
    path("consultations/<int:pk>/plan/v<int:number>/", views.plan_version, name="plan-version"),
    path(
        "consultations/<int:pk>/plan/v<int:number>.json",
        views.plan_version_json,
        name="plan-version-json",
    ),
    path("consultations/<int:pk>/record.json", views.case_record_json, name="case-record"),
    path("consultations/<int:pk>/review/decide/", views.review_decide, name="decide"),
    path("consultations/<int:pk>/review/amend/", views.plan_amend, name="amend"),
    path("consultations/<int:pk>/review/meeting/", views.meeting, name="meeting"),
    path("consultations/<int:pk>/review/sign-off/", views.sign_off, name="sign-off"),
    path("consultations/<int:pk>/review/reopen/", views.review_reopen, name="reopen"),
    path("consultations/<int:pk>/reports/", views.report_request, name="report-request"),
    path("reports/<int:pk>/", views.report_status, name="report-status"),
    path("reports/<int:pk>/download/", views.report_download, name="report-download"),
]
