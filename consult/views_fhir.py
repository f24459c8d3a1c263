"""FHIR pages: the review screen of a bundle before anything is saved, its confirmation, the
import from a FHIR server, and the FHIR downloads (dossier Bundle, signed plan CarePlan)."""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from consult import selectors
from consult.casefile.fields import FIELDS_BY_PATH, PSEUDONYM_MAX_LENGTH
from consult.fhir.server import ServerError, fetch_everything
from consult.labels import fact_label
from consult.presenters import display, toxicity_text
from consult.services.dossiers import DossierError
from consult.services.fhir import (
    PREVIEW_EXPIRED,
    FhirPreview,
    NotSigned,
    bundle_import_confirm,
    bundle_preview,
    dossier_export_fhir,
    plan_export_careplan,
    preview_state,
)
from mdtboard.accounts.models import Team
from mdtboard.accounts.roles import Role, role_required
from mdtboard.core.http import AuthedRequest

FHIR_JSON = "application/fhir+json; charset=utf-8"
# Rows of "not imported" shown on the page; the rest are counted (all are stored).
NOT_IMPORTED_SHOWN = 300


class FhirConfirmForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    pseudonym = forms.CharField(
        max_length=PSEUDONYM_MAX_LENGTH,
        help_text="Never a real name or hospital number. Derived from the record's patient id "
        "by a keyed hash, so the same patient gets the same pseudonym next time.",
    )
    question = forms.CharField(
        label="MDT question", widget=forms.Textarea(attrs={"rows": 2}), required=False
    )
    token = forms.CharField(widget=forms.HiddenInput)

    def __init__(self, *args: Any, teams: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams  # type: ignore[attr-defined]


class FhirServerForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    patient_id = forms.CharField(label="Patient id on the FHIR server", max_length=64)
    as_of = forms.DateField(
        label="Date of the MDT question",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Ages are computed on this date; results after it are not imported. "
        "Empty = today.",
    )

    def __init__(self, *args: Any, teams: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams  # type: ignore[attr-defined]


def _value_text(path: str, value: Any) -> str:
    if isinstance(value, dict):  # one prior therapy
        parts = [
            str(value.get("kind") or "kind not recorded"),
            str(value.get("intent") or ""),
            str(value.get("regimen") or ""),
            f"{value.get('start_date') or '?'} to {value.get('end_date') or 'ongoing'}",
        ]
        if value.get("line") is not None:
            parts.insert(0, f"line {value['line']}")
        if value.get("stop_reason"):
            parts.append(f"ended: {value['stop_reason']}")
        if value.get("toxicity"):
            parts.append(f"toxicity {toxicity_text(value['toxicity'])}")
        return " · ".join(p for p in parts if p)
    spec = FIELDS_BY_PATH.get(re.sub(r"\[\d+\]", "", path))
    if spec is None:
        return str(value)
    if isinstance(value, list):
        return ", ".join(map(str, value)) if value else "none"
    return display(spec, value)


def _label(path: str) -> str:
    spec = FIELDS_BY_PATH.get(re.sub(r"\[\d+\]", "", path))
    if spec is None:
        return path
    number = re.search(r"\[(\d+)\]", path)
    return f"{spec.label} {int(number.group(1)) + 1}" if number else spec.label


def review_context(
    *, filename: str, as_of: str, provenance: dict[str, Any], needs: list[Any], form: Any
) -> dict[str, Any]:
    rows = [
        {
            "id": re.sub(r"[^a-z0-9]+", "-", v["field"].lower()).strip("-"),
            "label": _label(v["field"]),
            "value": _value_text(v["field"], v["value"]),
            "source": v["source"],
            "others": [
                {"value": _value_text(v["field"], o["value"]), "source": o["source"]}
                for o in v["others"]
            ],
            "others_count": v.get("others_count", 0),
        }
        for v in provenance["values"]
    ]
    not_imported = provenance["not_imported"]
    total = int(provenance.get("not_imported_total", len(not_imported)))
    return {
        "filename": filename,
        "as_of": as_of,
        "entries": provenance.get("entries", 0),
        "rows": rows,
        "not_imported": not_imported[:NOT_IMPORTED_SHOWN],
        "not_imported_more": max(0, total - NOT_IMPORTED_SHOWN),
        "not_imported_count": total,
        "needs": [(fact_label(f"derived.{name}"), missing) for name, missing in needs],
        "form": form,
    }


def render_preview(
    request: AuthedRequest, preview: FhirPreview, *, team: Any = None
) -> HttpResponse:
    """The review screen of a bundle (or its errors): nothing is saved yet."""
    teams = selectors.teams_for(user=request.user)
    if not preview.ok or preview.mapping is None:
        context = {"filename": preview.filename, "errors": preview.errors}
        return render(request, "consult/fhir_review.html", context, status=422)
    mapping = preview.mapping
    form = FhirConfirmForm(
        initial={
            "team": team,
            "pseudonym": mapping.case["patient"]["pseudonym"],
            "question": mapping.case["question"],
            "token": preview.token,
        },
        teams=teams,
    )
    context = review_context(
        filename=preview.filename,
        as_of=preview.as_of.isoformat(),
        provenance=mapping.provenance(),
        needs=preview.needs_data,
        form=form,
    )
    return render(request, "consult/fhir_review.html", context)


@require_POST
@role_required(Role.CLINICIAN, Role.ADMIN)
def fhir_import_confirm(request: AuthedRequest) -> HttpResponse:
    teams = selectors.teams_for(user=request.user)
    form = FhirConfirmForm(request.POST, teams=teams)
    token = request.POST.get("token", "")
    try:
        state = preview_state(token)
    except signing.BadSignature:
        messages.error(request, PREVIEW_EXPIRED)
        return redirect("consult:dossier-import")
    if form.is_valid():
        try:
            dossier = bundle_import_confirm(
                actor=request.user,
                team=form.cleaned_data["team"],
                token=token,
                pseudonym=form.cleaned_data["pseudonym"],
                question=form.cleaned_data["question"],
            )
        except DossierError as exc:
            for error in exc.errors or []:
                form.add_error(None, f"{error.path}: {error.message}")
            if not exc.errors:
                form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                "Dossier saved from the FHIR record. Check the values marked missing, then "
                "submit it.",
            )
            return redirect("consult:dossier-detail", pk=dossier.pk)
    context = review_context(
        filename=state["filename"],
        as_of=state["as_of"],
        provenance=state["provenance"],
        needs=state.get("needs", []),
        form=form,
    )
    return render(request, "consult/fhir_review.html", context, status=422)


@require_http_methods(["GET", "POST"])
@role_required(Role.CLINICIAN, Role.ADMIN)
def fhir_server_import(request: AuthedRequest) -> HttpResponse:
    teams = selectors.teams_for(user=request.user)
    form = FhirServerForm(request.POST or None, teams=teams)
    configured = bool(settings.FHIR_SERVER_URL)
    if configured and request.method == "POST" and form.is_valid():
        patient_id = form.cleaned_data["patient_id"].strip()
        try:
            raw = fetch_everything(
                base_url=settings.FHIR_SERVER_URL,
                token=settings.FHIR_SERVER_TOKEN,
                patient_id=patient_id,
                timeout_s=settings.FHIR_SERVER_TIMEOUT_S,
            )
        except ServerError as exc:
            form.add_error("patient_id", str(exc))
        else:
            as_of: date | None = form.cleaned_data["as_of"]
            preview = bundle_preview(
                raw=raw, filename=f"Patient/{patient_id}/$everything", as_of=as_of
            )
            return render_preview(request, preview, team=form.cleaned_data["team"])
    context = {"form": form, "configured": configured}
    return render(request, "consult/fhir_server.html", context)


@require_GET
def dossier_export_fhir_view(request: AuthedRequest, pk: int) -> HttpResponse:
    dossier = selectors.dossier_get(user=request.user, pk=pk)
    document = dossier_export_fhir(actor=request.user, dossier=dossier)
    response = HttpResponse(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", content_type=FHIR_JSON
    )
    response["Content-Disposition"] = f'attachment; filename="{dossier.case_id}.fhir.json"'
    return response


@require_GET
def plan_careplan_view(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.consultation_get(user=request.user, pk=pk)
    if getattr(consultation, "plan", None) is None:
        raise Http404("This consultation has no plan yet")
    try:
        document = plan_export_careplan(actor=request.user, consultation=consultation)
    except NotSigned as exc:
        messages.error(request, str(exc))
        return redirect("consult:plan-detail", pk=pk)
    response = HttpResponse(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n", content_type=FHIR_JSON
    )
    name = f"{consultation.dossier.case_id}-careplan-{consultation.pk}.fhir.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
