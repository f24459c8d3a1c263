"""Administrator pages under /memory/."""

from __future__ import annotations

from django.urls import path

from knowledge.memory import views

app_name = "memory"

urlpatterns = [
    path("", views.memory_home, name="home"),
    path("entries/<int:pk>/", views.entry_detail, name="entry"),
    path("entries/<int:pk>/retire/", views.entry_retire, name="entry-retire"),
    path("prune/", views.prune_now, name="prune"),
    path("evolution/", views.evolution, name="evolution"),
    path("evolution/propose/", views.propose_now, name="propose"),
    path(
        "evolution/<str:kind>/<int:pk>/<str:action>/",
        views.version_decide,
        name="version-decide",
    ),
]
