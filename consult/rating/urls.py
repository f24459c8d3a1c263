from __future__ import annotations

from django.urls import path

from consult.rating import views

app_name = "rating"

urlpatterns = [
    # raters
    path("queue/", views.rater_queue, name="queue"),
    path("packets/<int:pk>/", views.packet, name="packet"),
    # clinicians: the human comparator plan of a dossier
    path("comparators/", views.comparator_list, name="comparator-list"),
    path("comparators/<int:pk>/", views.comparator_detail, name="comparator-detail"),
    path("dossiers/<int:pk>/comparator/", views.comparator_edit, name="comparator-edit"),
    path(
        "dossiers/<int:pk>/comparator/import/",
        views.comparator_import_view,
        name="comparator-import",
    ),
    path(
        "consultations/<int:pk>/decision-comparator/",
        views.decision_comparator,
        name="decision-comparator",
    ),
    # administrators
    path("studies/", views.study_list, name="study-list"),
    path("studies/new/", views.study_create_view, name="study-create"),
    path("studies/<int:pk>/", views.study_detail, name="study-detail"),
    path("studies/<int:pk>/close/", views.study_close_view, name="study-close"),
    path("studies/<int:pk>/clear/", views.rating_clear_view, name="rating-clear"),
    path("studies/<int:pk>/llm/", views.study_llm_view, name="study-llm"),
    path("studies/<int:pk>/analytics/", views.study_analytics_view, name="study-analytics"),
    path("studies/<int:pk>/ratings.csv", views.study_export, name="study-export"),
]
