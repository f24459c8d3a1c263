"""Pages of rating studies: comparator plans (clinicians), the rater's queue and packets
(raters), study set-up, analytics and export (administrators)."""

from __future__ import annotations

import csv
from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from consult.rating import selectors
from consult.rating.analytics import study_analytics, study_blinding_check, study_ratings_rows
from consult.rating.blinding import blind_plan, similarity_words
from consult.rating.forms import (
    FORM_CHOICES,
    ComparatorImportForm,
    StudyForm,
    entry_from_plan,
    entry_from_post,
    minutes_value,
    plan_from_entry,
)
from consult.rating.llm_rater import llm_rater_available, study_llm_rate_enqueue
from consult.rating.models import StudyStatus
from consult.rating.rubric import DIMENSIONS, GUESS_CHOICES, POSITIONS, PREFERENCE_CHOICES
from consult.rating.services import (
    LOCKED,
    ComparatorInvalid,
    RatingInvalid,
    RatingLocked,
    RatingServiceError,
    StudyInvalid,
    StudySpec,
    assignment_open,
    comparator_create,
    comparator_from_mdt_decision,
    comparator_import,
    rating_clear,
    rating_submit,
    score_field,
    study_allocation_reproduces,
    study_close,
    study_create,
)
from consult.review import selectors as review_selectors
from mdtboard.accounts.roles import Role, role_required
from mdtboard.audit.services import audit_record
from mdtboard.core.http import AuthedRequest

# --- comparator plans (clinicians of the dossier's team, administrators) -----------------------


@require_GET
@role_required(Role.CLINICIAN, Role.ADMIN)
def comparator_list(request: AuthedRequest) -> HttpResponse:
    dossiers = selectors.comparator_dossiers(user=request.user)
    return render(request, "rating/comparator_list.html", {"dossiers": dossiers[:500]})


@require_http_methods(["GET", "POST"])
def comparator_edit(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.comparator_dossier_get(user=request.user, pk=pk)
    current = selectors.comparator_current(dossier=dossier)
    errors: list[str] = []
    if request.method == "POST":
        entry = entry_from_post(request.POST)
        plan, errors = plan_from_entry(entry)
        minutes, problem = minutes_value(entry.minutes)
        if problem:
            errors.append(problem)
        if not errors:
            try:
                comparator = comparator_create(
                    actor=request.user,
                    dossier=dossier,
                    plan=plan,
                    minutes_to_write=minutes,
                    attested_blind=entry.attested_blind,
                )
            except ComparatorInvalid as exc:
                errors = [_plan_error_text(e.path, e.message) for e in exc.errors]
            except RatingServiceError as exc:
                errors = [str(exc)]
            else:
                messages.success(request, f"Comparator plan saved as version {comparator.number}.")
                return redirect("rating:comparator-detail", pk=comparator.pk)
    else:
        entry = entry_from_plan(current.payload if current else None)
        if current and current.minutes_to_write:
            entry.minutes = str(current.minutes_to_write)
    context = {
        "dossier": dossier,
        "current": current,
        "entry": entry,
        "choices": FORM_CHOICES,
        "errors": errors,
    }
    return render(request, "rating/comparator_edit.html", context, status=422 if errors else 200)


# Where the entry form's fields land in the document, said the way the form says it.
_FORM_PLACES = {
    "$.recommendation.components": "Treatments",
    "$.recommendation.intent": "Intent",
    "$.monitoring": "Follow-up",
    "$.safety.notes": "Precautions",
    "$.rejected_options": "Not advised",
    "$.needs_data": "Information still needed",
}


def _plan_error_text(path: str, message: str) -> str:
    for prefix, place in _FORM_PLACES.items():
        if path.startswith(prefix):
            rest = path.removeprefix(prefix)
            if rest.startswith("["):
                index, _, field = rest[1:].partition("]")
                if index.isdigit():
                    field = field.lstrip(".") or "entry"
                    return f"{place}, entry {int(index) + 1}, {field.replace('_', ' ')}: {message}"
            return f"{place}: {message}"
    return f"{path}: {message}"


@require_http_methods(["GET", "POST"])
def comparator_import_view(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.comparator_dossier_get(user=request.user, pk=pk)
    form = ComparatorImportForm(request.POST or None, request.FILES or None)
    errors: list[tuple[str, str]] = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data.get("file")
        raw = upload.read(300 * 1024) if upload else form.cleaned_data["text"].encode("utf-8")
        try:
            comparator = comparator_import(
                actor=request.user,
                dossier=dossier,
                raw=raw,
                minutes_to_write=form.cleaned_data.get("minutes"),
            )
        except ComparatorInvalid as exc:
            errors = [(e.path, e.message) for e in exc.errors]
        except RatingServiceError as exc:
            errors = [("$", str(exc))]
        else:
            messages.success(request, f"Comparator plan imported as version {comparator.number}.")
            return redirect("rating:comparator-detail", pk=comparator.pk)
    status = 422 if errors or form.errors else 200
    return render(
        request,
        "rating/comparator_import.html",
        {"dossier": dossier, "form": form, "errors": errors},
        status=status,
    )


@require_GET
def comparator_detail(request: AuthedRequest, pk: int) -> HttpResponse:
    comparator = selectors.comparator_get(user=request.user, pk=pk)
    audit_record(action="comparator.view", actor=request.user, obj=comparator)
    return render(
        request,
        "rating/comparator_detail.html",
        {
            "comparator": comparator,
            "dossier": comparator.dossier,
            "plan": blind_plan(comparator.payload),
            "versions": selectors.comparator_versions(dossier=comparator.dossier),
        },
    )


@require_http_methods(["GET", "POST"])
def decision_comparator(request: AuthedRequest, pk: int) -> HttpResponse:
    """The team's recorded decision as the dossier's comparator plan: a fragment of the plan
    page (GET) and its button (POST). Review does not know rating; rating asks review."""
    consultation = review_selectors.plan_consultation_get(user=request.user, pk=pk)
    back = reverse("consult:plan-detail", kwargs={"pk": pk}) + "#comparator"
    if request.method == "POST":
        before = selectors.comparator_current(dossier=consultation.dossier)
        try:
            comparator = comparator_from_mdt_decision(actor=request.user, consultation=consultation)
        except ComparatorInvalid as exc:
            messages.error(
                request,
                "The decided plan cannot be used as a comparator: "
                + "; ".join(str(e) for e in exc.errors),
            )
        except RatingServiceError as exc:
            messages.error(request, str(exc))
        else:
            if before is not None and before.pk == comparator.pk:
                messages.info(
                    request,
                    "The team's decision is already the comparator plan "
                    f"(version {comparator.number}).",
                )
            else:
                messages.success(
                    request,
                    f"The team's decision is now comparator plan version {comparator.number}; "
                    "it is not independent of the system's plan, so studies leave it out "
                    "unless an administrator includes it.",
                )
        return redirect(back)
    decided = review_selectors.mdt_decision_get(consultation=consultation)
    current = selectors.comparator_current(dossier=consultation.dossier)
    return render(
        request,
        "rating/partials/_decision_comparator.html",
        {
            "consultation": consultation,
            "decided": decided,
            "comparator": current,
            "is_decision": bool(current and decided and current.source_ref == decided.source_ref),
        },
    )


# --- raters ----------------------------------------------------------------------------------


@require_GET
@role_required(Role.RATER)
def rater_queue(request: AuthedRequest) -> HttpResponse:
    assignments = selectors.rater_queue(user=request.user)
    return render(request, "rating/queue.html", {"assignments": assignments})


def _rating_rows(chosen: dict[str, str], errors: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for dimension in DIMENSIONS:
        cells = []
        for position in POSITIONS:
            name = score_field(position, dimension.key)
            cells.append(
                {
                    "position": position,
                    "name": name,
                    "chosen": chosen.get(name, ""),
                    "error": errors.get(name, ""),
                }
            )
        rows.append({"dimension": dimension, "cells": cells})
    return rows


@require_http_methods(["GET", "POST"])
@role_required(Role.RATER)
def packet(request: AuthedRequest, pk: int) -> HttpResponse:
    assignment = selectors.assignment_get(user=request.user, pk=pk)
    rating = selectors.assignment_rating(assignment=assignment)
    errors: dict[str, str] = {}
    chosen: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        if rating is not None:
            status = 409
            messages.error(request, LOCKED)
        else:
            try:
                rating_submit(actor=request.user, assignment=assignment, data=request.POST)
            except RatingInvalid as exc:
                errors, status = exc.errors, 422
                chosen = {k: str(v) for k, v in request.POST.items() if k != "csrfmiddlewaretoken"}
            except RatingLocked as exc:
                messages.error(request, str(exc))
                status = 409
            except RatingServiceError as exc:
                messages.error(request, str(exc))
                status = 409
            else:
                messages.success(
                    request, f"Packet {assignment.order} submitted; your rating is locked."
                )
                return redirect("rating:queue")
            rating = selectors.assignment_rating(assignment=assignment)
    elif rating is None:
        assignment_open(actor=request.user, assignment=assignment)
    else:
        audit_record(action="rating.view_own", actor=request.user, obj=rating)
    if rating is not None:
        chosen = {score_field(s.position, s.dimension): str(s.value) for s in rating.scores.all()}
        chosen |= {"preference": rating.preference, "system_guess": rating.system_guess}
    context = {
        "assignment": assignment,
        "view": selectors.packet_view(assignment=assignment),
        "rating": rating,
        "rows": _rating_rows(chosen, errors),
        "errors": errors,
        "chosen": chosen,
        "preference_choices": PREFERENCE_CHOICES,
        "guess_choices": GUESS_CHOICES,
        "scale": (1, 2, 3, 4, 5),
        "locked": rating is not None,
        "closed": assignment.study.status != StudyStatus.OPEN,
    }
    return render(request, "rating/packet.html", context, status=status)


# --- studies (administrators) ----------------------------------------------------------------


@require_GET
@role_required(Role.ADMIN)
def study_list(request: AuthedRequest) -> HttpResponse:
    return render(
        request, "rating/study_list.html", {"studies": selectors.study_list(user=request.user)}
    )


def _candidate_label(candidate: selectors.Candidate) -> str:
    c = candidate.consultation
    finished = c.finished_at.strftime("%Y-%m-%d %H:%M") if c.finished_at else ""
    label = (
        f"{c.dossier.case_id} ({c.dossier.get_cancer_type_display()}, "
        f"{c.dossier.patient.team.name}) · {c.get_engine_display().split(' (')[0]} plan "
        f"of {finished} · comparator v{candidate.comparator.number}, "
        f"{candidate.comparator.provenance}"
    )
    if candidate.similarity is not None:
        label += f" · the plans read {candidate.similarity:.0%} alike"
        alike = similarity_words(candidate.similarity)
        if alike:
            label += f" ({alike})"
    return label


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def study_create_view(request: AuthedRequest) -> HttpResponse:
    candidates = selectors.study_candidates(user=request.user)
    raters = list(selectors.rater_choices())
    form = StudyForm(
        request.POST or None,
        consultations=[(c.consultation.pk, _candidate_label(c)) for c in candidates],
        raters=[(r.pk, f"{r} <{r.email}>") for r in raters],
        llm_available=llm_rater_available(),
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = study_create(
                actor=request.user,
                spec=StudySpec(
                    name=data["name"],
                    description=data["description"],
                    consultation_ids=data["consultations"],
                    rater_ids=data["raters"],
                    raters_per_packet=data["raters_per_packet"],
                    block_sizes=data["block_sizes"],
                    llm_arm=bool(data.get("llm_arm")),
                    include_dependent=bool(data.get("include_dependent")),
                ),
            )
        except StudyInvalid as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"Study created: {study.packets.count()} packets, randomised."
            )
            return redirect("rating:study-detail", pk=study.pk)
    status = 422 if form.errors else 200
    context = {
        "form": form,
        "candidates": candidates,
        "raters": raters,
        "dependent": [c for c in candidates if not c.independent],
        "alike": [c for c in candidates if similarity_words(c.similarity)],
    }
    return render(request, "rating/study_form.html", context, status=status)


@require_GET
@role_required(Role.ADMIN)
def study_detail(request: AuthedRequest, pk: int) -> HttpResponse:
    study = selectors.study_get(user=request.user, pk=pk)
    audit_record(action="study.view", actor=request.user, obj=study)
    return render(
        request,
        "rating/study_detail.html",
        {
            "study": study,
            "progress": selectors.study_progress(study=study),
            "packets": study.packets.select_related("consultation__dossier").order_by("sequence"),
            "reproduces": study_allocation_reproduces(study=study),
            "llm_available": llm_rater_available(),
            "llm_count": study.llm_ratings.count(),
            "flagged": selectors.study_flagged_ratings(study=study),
            "blinding_check": study_blinding_check(study=study),
        },
    )


@require_POST
@role_required(Role.ADMIN)
def rating_clear_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Clear a rating flagged as too fast, so that the board may learn from it."""
    study = selectors.study_get(user=request.user, pk=pk)
    rating_pk = request.POST.get("rating", "")
    if not rating_pk.isdigit():
        messages.error(request, "Choose the rating to clear.")
        return redirect("rating:study-detail", pk=pk)
    rating = selectors.study_rating_get(user=request.user, study=study, pk=int(rating_pk))
    try:
        rating_clear(actor=request.user, rating=rating, note=request.POST.get("note", ""))
    except RatingServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Rating cleared: the board may learn from it.")
    return redirect("rating:study-detail", pk=pk)


@require_POST
@role_required(Role.ADMIN)
def study_close_view(request: AuthedRequest, pk: int) -> HttpResponse:
    study = selectors.study_get(user=request.user, pk=pk)
    study_close(actor=request.user, study=study)
    messages.success(request, "The study is closed; no more ratings are taken.")
    return redirect("rating:study-detail", pk=pk)


@require_POST
@role_required(Role.ADMIN)
def study_llm_view(request: AuthedRequest, pk: int) -> HttpResponse:
    study = selectors.study_get(user=request.user, pk=pk)
    try:
        study_llm_rate_enqueue(actor=request.user, study=study)
    except RatingServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, "The LLM rater is scoring the packets; reload the analytics in a while."
        )
    return redirect("rating:study-detail", pk=pk)


@require_GET
@role_required(Role.ADMIN)
def study_analytics_view(request: AuthedRequest, pk: int) -> HttpResponse:
    study = selectors.study_get(user=request.user, pk=pk)
    audit_record(action="study.analytics_view", actor=request.user, obj=study)
    return render(
        request,
        "rating/study_analytics.html",
        {"study": study, "a": study_analytics(study=study)},
    )


@require_GET
@role_required(Role.ADMIN)
def study_export(request: AuthedRequest, pk: int) -> HttpResponse:
    """Raw ratings with the arms unblinded: for the administrator's own analysis."""
    study = selectors.study_get(user=request.user, pk=pk)
    audit_record(action="study.export", actor=request.user, obj=study, payload={"format": "csv"})
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-ratings.csv"'
    csv.writer(response).writerows(study_ratings_rows(study=study))
    return response
