"""Intake pages: patients, dossiers by section, import/export of case files, the schema."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from clinical.calculators import derive_all
from clinical.frozen import FACTS_VERSION
from consult import selectors
from consult.casefile.fields import SECTIONS, get_field
from consult.casefile.schema import SCHEMA_PATH
from consult.casefile.validate import validate_case
from consult.forms import (
    ConsultationForm,
    DossierFilterForm,
    ImportForm,
    NewDossierForm,
    has_prior_therapies,
    html_name,
    prior_rows_for_display,
    section_fields,
    section_values,
    small_count,
    to_text,
)
from consult.journal.board import STATUS_LINE_KINDS
from consult.journal.selectors import consultation_board_get
from consult.labels import dose_fact_concerns, fact_label, value_words
from consult.models import DossierStatus
from consult.presenters import case_sections
from consult.review.selectors import dossier_signed_records, dossier_worklist
from consult.services.consultations import (
    ConsultationError,
    consultation_cancel,
    consultation_start,
    llm_available,
)
from consult.services.dossiers import (
    DossierError,
    case_import_uploads,
    dossier_create,
    dossier_export,
    dossier_submit,
    dossier_update,
    dossier_version,
    dossier_warnings,
    draft_case,
    snapshot_recompute,
)
from consult.services.fhir import FHIR_ALONE, fhir_upload_preview, upload_is_fhir
from consult.timeline import patient_timeline
from consult.views_fhir import render_preview
from knowledge.selectors import therapy_drugs
from mdtboard.accounts.roles import Role, role_required
from mdtboard.audit.services import audit_record
from mdtboard.core.http import AuthedRequest, vary_on_htmx, wants_fragment

SECTION_LABELS = {s.key: s.label for s in SECTIONS}
MAX_UPLOAD_FILES = 50


def _shown(value: Any) -> Any:
    """A derived value as a clinician reads it: a list of medications or declined treatments
    as words, not Python's brackets."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(value_words(v)) for v in value) or "none"
    return value_words(value)


# A list's audit row names at most this many of the ids it showed (and how many it showed).
_LISTED_IDS = 500


@require_GET
def patient_list(request: AuthedRequest) -> HttpResponse:
    form = DossierFilterForm(request.GET or None)
    cancer_type = form.cleaned_data.get("cancer_type", "") if form.is_valid() else ""
    patients = list(selectors.patient_list(user=request.user, cancer_type=cancer_type))
    # Who saw which patients listed (ids only): a list discloses as a page does (issue 26).
    audit_record(
        action="patient.list",
        actor=request.user,
        object_type="consult.patient",
        payload={"ids": [p.pk for p in patients[:_LISTED_IDS]], "count": len(patients)},
    )
    return render(request, "consult/patient_list.html", {"patients": patients, "form": form})


@require_GET
def patient_timeline_view(request: AuthedRequest, pk: int) -> HttpResponse:
    timeline = patient_timeline(user=request.user, pk=pk)
    audit_record(action="patient.timeline", actor=request.user, obj=timeline.patient)
    return render(request, "consult/patient_timeline.html", {"timeline": timeline})


@require_GET
@vary_on_htmx
def dossier_list(request: AuthedRequest) -> HttpResponse:
    form = DossierFilterForm(request.GET or None)
    filters: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    patient = request.GET.get("patient", "")
    dossiers = selectors.dossier_list(
        user=request.user,
        cancer_type=filters.get("cancer_type", ""),
        status=filters.get("status", ""),
        updated_from=filters.get("updated_from"),
        updated_to=filters.get("updated_to"),
        patient_id=small_count(patient),
    )
    shown = list(dossiers[:500])
    audit_record(
        action="dossier.list",
        actor=request.user,
        object_type="consult.lesiondossier",
        payload={"ids": [d.pk for d in shown[:_LISTED_IDS]], "count": len(shown)},
    )
    # The worklist of the next meeting: each case's consultation and where its review stands.
    worklist = dossier_worklist(dossiers=shown)
    template = "consult/dossier_list.html"
    if wants_fragment(request):
        template += "#dossier-table"
    return render(
        request,
        template,
        {"form": form, "rows": [(d, worklist.get(d.pk)) for d in shown]},
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.CLINICIAN, Role.ADMIN)
def dossier_create_view(request: AuthedRequest) -> HttpResponse:
    teams = selectors.teams_for(user=request.user)
    form = NewDossierForm(request.POST or None, teams=teams)
    if request.method == "POST" and form.is_valid():
        data = draft_case(
            cancer_type=form.cleaned_data["cancer_type"],
            pseudonym=form.cleaned_data["pseudonym"],
            question=form.cleaned_data["question"],
        )
        try:
            dossier = dossier_create(actor=request.user, team=form.cleaned_data["team"], data=data)
        except DossierError as exc:
            for error in exc.errors or []:
                form.add_error(None, error.message)
            if not exc.errors:
                form.add_error(None, str(exc))
        else:
            messages.success(request, "Dossier created. Fill in the sections, then submit it.")
            return redirect("consult:dossier-edit", pk=dossier.pk, section="patient")
    return render(request, "consult/dossier_new.html", {"form": form})


@require_GET
def dossier_detail(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    audit_record(action="dossier.view", actor=request.user, obj=dossier)
    # A submitted dossier shows the facts frozen with its snapshot (what the board deliberated
    # on); a draft, the facts its content gives now (nothing is frozen until it is submitted).
    frozen_in = selectors.dossier_frozen_snapshot(dossier=dossier)
    frozen = frozen_in.frozen if frozen_in is not None else None
    derived = frozen.derived if frozen is not None else derive_all(dossier.data)
    # Dose calculations only for drugs this cancer's guideline steps can give.
    drugs = therapy_drugs(cancer_type=dossier.cancer_type)
    context = {
        "dossier": dossier,
        "sections": case_sections(dossier.data),
        "derived": [
            (
                key,
                fact_label(f"derived.{key}"),
                fact,
                _shown(fact.value),
                [fact_label(path) for path in fact.inputs_missing],
            )
            for key, fact in derived.items()
            if dose_fact_concerns(key, drugs)
        ],
        "frozen_in": frozen_in,
        "facts_outdated": frozen is not None and not frozen.current,
        "facts_version": FACTS_VERSION,
        "warnings": dossier_warnings(dossier),
        "snapshots": dossier.snapshots.all(),
        "consultations": selectors.consultations_for_dossier(dossier=dossier),
        "signed": dossier_signed_records(dossier=dossier),
        "consultation_form": ConsultationForm(llm_available=llm_available()),
        "section_labels": SECTION_LABELS,
        "fhir_import": selectors.dossier_fhir_import(dossier=dossier),
    }
    return render(request, "consult/dossier_detail.html", context)


def _edit_context(
    dossier: Any,
    section: str,
    data: dict[str, Any],
    errors: dict[str, list[str]],
    general: list[str],
    post: Any = None,
) -> dict[str, Any]:
    cancer_type = str(data.get("cancer_type") or "other")
    fields = []
    for field in section_fields(section, cancer_type):
        name = html_name(field.path)
        holder = data if field.parent is None else (data.get(field.parent) or {})
        fields.append(
            {
                "field": field,
                "name": name,
                "text": post.get(name, "")
                if post is not None
                else to_text(field, holder.get(field.key)),
                "errors": errors.get(field.path, []),
            }
        )
    return {
        "dossier": dossier,
        "section": section,
        "section_label": SECTION_LABELS[section],
        "sections": SECTIONS,
        "fields": fields,
        "prior_rows": prior_rows_for_display(data) if has_prior_therapies(section) else None,
        "response_choices": get_field("diagnosis.prior_therapies[].best_response").choices,
        "stop_reason_choices": get_field("diagnosis.prior_therapies[].stop_reason").choices,
        "kind_choices": get_field("diagnosis.prior_therapies[].kind").choices,
        "intent_choices": get_field("diagnosis.prior_therapies[].intent").choices,
        "general_errors": general,
        "has_errors": bool(errors or general),
        # The version of the dossier this form was filled in against (kept across a failed
        # save, so that a stale form never overwrites a colleague's newer values).
        "base": post.get("base", "") if post is not None else dossier_version(dossier),
    }


def _errors_by_path(
    exc: DossierError, section: str, cancer_type: str
) -> tuple[dict[str, list[str]], list[str]]:
    shown = {f.path for f in section_fields(section, cancer_type)}
    by_path: dict[str, list[str]] = {}
    general: list[str] = []
    for error in exc.errors:
        path = error.path.removeprefix("$.").split("[")[0]
        if path in shown:
            by_path.setdefault(path, []).append(error.message)
        else:
            where = error.path.removeprefix("$.") or "case"
            general.append(f"{where}: {error.message}")
    if not exc.errors:
        general.append(str(exc))
    return by_path, general


@require_http_methods(["GET", "POST"])
def dossier_edit(request: AuthedRequest, pk: int, section: str) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    if section not in SECTION_LABELS:
        raise Http404("No such section")
    if request.method == "POST":
        data = section_values(dossier.data, section, dossier.cancer_type, request.POST)
        was_submitted = dossier.status == DossierStatus.SUBMITTED
        try:
            updated = dossier_update(
                actor=request.user, dossier=dossier, data=data, base=request.POST.get("base")
            )
        except DossierError as exc:
            errors, general = _errors_by_path(exc, section, dossier.cancer_type)
            context = _edit_context(dossier, section, data, errors, general, request.POST)
            return render(request, "consult/dossier_edit.html", context, status=422)
        messages.success(request, f"{SECTION_LABELS[section]} saved.")
        signed = dossier_signed_records(dossier=updated)
        if was_submitted and updated.status == DossierStatus.DRAFT and signed:
            # Say what happened to the signed record: nothing. The edit is a new version.
            last = signed[-1]
            messages.info(
                request,
                f"Version {last.snapshot_number} of this dossier was signed off (plan version "
                f"{last.plan_number}) and stays as it was. Your changes start version "
                f"{last.snapshot_number + 1}, a draft: submit it for a new consultation.",
            )
        return redirect(_next_section_url(dossier.pk, section, request.POST.get("then")))
    # The edit form shows the section's data: a read, audited as the dossier page is.
    audit_record(
        action="dossier.edit_view", actor=request.user, obj=dossier, payload={"section": section}
    )
    return render(
        request, "consult/dossier_edit.html", _edit_context(dossier, section, dossier.data, {}, [])
    )


def _next_section_url(pk: int, section: str, then: str | None) -> str:
    from django.urls import reverse

    keys = [s.key for s in SECTIONS]
    index = keys.index(section)
    if then == "next" and index + 1 < len(keys):
        return reverse("consult:dossier-edit", kwargs={"pk": pk, "section": keys[index + 1]})
    return reverse("consult:dossier-detail", kwargs={"pk": pk})


@require_POST
def dossier_check_field(request: AuthedRequest, pk: int, section: str) -> HttpResponse:
    """Inline validation while the clinician types: the errors of one field, given the whole
    section as currently typed (so cross-field checks apply). Nothing is saved."""
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    if section not in SECTION_LABELS:
        raise Http404("No such section")
    path = str(request.POST.get("_field", "")).replace("__", ".")
    try:
        get_field(path)
    except KeyError as exc:
        raise Http404("No such field") from exc

    data = section_values(dossier.data, section, dossier.cancer_type, request.POST)
    errors = [
        e.message
        for e in validate_case(data, filename=dossier.case_id)
        if e.path.removeprefix("$.") == path
    ]
    return render(request, "consult/partials/_field_errors.html", {"errors": errors})


@require_POST
def dossier_submit_view(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    try:
        snapshot = dossier_submit(actor=request.user, dossier=dossier)
    except DossierError as exc:
        for error in exc.errors:
            messages.error(request, f"{error.path.removeprefix('$.')}: {error.message}")
        return redirect("consult:dossier-detail", pk=pk)
    messages.success(
        request, f"Submitted as snapshot {snapshot.number} ({snapshot.content_hash[:12]})."
    )
    return redirect("consult:dossier-detail", pk=pk)


@require_POST
@role_required(Role.CLINICIAN, Role.ADMIN)
def dossier_recompute_view(request: AuthedRequest, pk: int) -> HttpResponse:
    """Compute the frozen facts again with today's calculators, as a new snapshot."""
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    try:
        snapshot = snapshot_recompute(actor=request.user, dossier=dossier)
    except DossierError as exc:
        messages.error(request, str(exc))
        return redirect("consult:dossier-detail", pk=pk)
    messages.success(
        request,
        f"Facts recomputed as snapshot {snapshot.number}; consultations on earlier snapshots "
        "keep the facts they were made with.",
    )
    return redirect("consult:dossier-detail", pk=pk)


@require_GET
def dossier_export_view(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    document = dossier_export(actor=request.user, dossier=dossier)
    response = HttpResponse(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n",
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{dossier.case_id}.json"'
    return response


@require_http_methods(["GET", "POST"])
@role_required(Role.CLINICIAN, Role.ADMIN)
def dossier_import(request: AuthedRequest) -> HttpResponse:
    teams = selectors.teams_for(user=request.user)
    form = ImportForm(request.POST or None, teams=teams)
    results = []
    if request.method == "POST" and form.is_valid():
        files = request.FILES.getlist("files")
        if not files:
            form.add_error(None, "Choose one or more case files (.json) to import.")
        elif len(files) > MAX_UPLOAD_FILES:
            form.add_error(None, f"Import at most {MAX_UPLOAD_FILES} files at a time.")
        elif any(upload_is_fhir(f) for f in files):
            # A FHIR record is mapped, not copied: it is reviewed before anything is saved.
            if len(files) > 1:
                form.add_error(None, FHIR_ALONE)
            else:
                preview = fhir_upload_preview(upload=files[0], as_of=form.cleaned_data["as_of"])
                return render_preview(request, preview, team=form.cleaned_data["team"])
        else:
            results = case_import_uploads(
                actor=request.user, team=form.cleaned_data["team"], uploads=files
            )
    status = 422 if any(not r.ok for r in results) else 200
    context = {"form": form, "results": results, "fhir_server": bool(settings.FHIR_SERVER_URL)}
    return render(request, "consult/dossier_import.html", context, status=status)


@login_not_required
@require_GET
def case_schema(request: HttpRequest) -> FileResponse:
    """The published JSON Schema of mdtboard.case/1, for tools that write case files."""
    return FileResponse(SCHEMA_PATH.open("rb"), content_type="application/schema+json")


# --- consultations -------------------------------------------------------------------------


@require_POST
def consultation_start_view(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    form = ConsultationForm(request.POST, llm_available=llm_available())
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, str(error))
        return redirect("consult:dossier-detail", pk=pk)
    try:
        consultation = consultation_start(
            actor=request.user,
            dossier=dossier,
            engine=form.cleaned_data["engine"],
            max_rounds=form.cleaned_data["max_rounds"],
            budget_short=form.cleaned_data.get("budget_short") or "stop",
            idempotency_key=form.cleaned_data["key"],
        )
    except ConsultationError as exc:
        messages.error(request, str(exc))
        return redirect("consult:dossier-detail", pk=pk)
    return redirect("consult:consultation-board", pk=consultation.pk)


@require_GET
@vary_on_htmx
def consultation_board(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.consultation_get(user=request.user, pk=pk)
    if not wants_fragment(request):
        # The open board's status poll (every 15 s) is the same viewing, recorded once.
        audit_record(action="consultation.board.view", actor=request.user, obj=consultation)
    # The status line polls every 15 s: it reads only the events that line shows.
    kinds = STATUS_LINE_KINDS if wants_fragment(request) else None
    board = consultation_board_get(consultation=consultation, kinds=kinds)
    board.status = consultation.status  # the row is the authority on queued/running
    board.started_at, board.finished_at = consultation.started_at, consultation.finished_at
    context = {
        "consultation": consultation,
        "board": board,
        "can_cancel": selectors.consultation_can_cancel(
            user=request.user, consultation_id=consultation.pk
        ),
        "worker_silent_s": selectors.consultation_worker_silence(consultation=consultation),
    }
    if wants_fragment(request):
        # The status line polls: a dead worker sends no events, so only a poll can tell.
        return render(request, "consult/board/_status.html", context)
    return render(request, "consult/board.html", context)


@require_POST
def consultation_cancel_view(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.consultation_get(user=request.user, pk=pk)
    try:
        consultation_cancel(actor=request.user, consultation=consultation)
    except ConsultationError as exc:
        messages.error(request, str(exc))
    else:
        messages.warning(request, "Cancellation requested; the board stops within seconds.")
    return redirect("consult:consultation-board", pk=pk)


@require_GET
def plan_json(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.consultation_get(user=request.user, pk=pk)
    plan = getattr(consultation, "plan", None)
    if plan is None:
        raise Http404("This consultation has no plan yet")
    audit_record(action="plan.export", actor=request.user, obj=plan, payload={"format": "json"})
    response = HttpResponse(
        json.dumps(plan.payload, indent=2, ensure_ascii=False) + "\n",
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{consultation.dossier.case_id}-plan-{consultation.pk}.json"'
    )
    return response
