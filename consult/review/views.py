"""Pages of the review: the plan as an MDT recommendation, the decision, the amendment, the
meeting, the sign-off, PDF reports and the exports. Thin: parse, call one service, render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from consult.engine.coherence import plan_findings
from consult.models import Consultation
from consult.review import selectors, services
from consult.review.forms import (
    AmendForm,
    AttendeeFormSet,
    ComponentFormSet,
    DecisionForm,
    MeetingForm,
    MonitoringFormSet,
    ReopenForm,
    ReportForm,
    SignOffForm,
    component_initial,
    monitoring_initial,
)
from consult.review.models import ReportStatus
from consult.review.presenters import plan_diff, recommendation_view
from consult.review.report import final_dissent
from consult.review.selectors import ReviewState, VersionView
from mdtboard.accounts.roles import Role, has_role
from mdtboard.audit.services import audit_record
from mdtboard.core.http import AuthedRequest, vary_on_htmx, wants_fragment


def _json_download(document: Any, filename: str) -> HttpResponse:
    response = HttpResponse(
        json.dumps(document, indent=2, ensure_ascii=False) + "\n",
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _plan_page(
    request: AuthedRequest, consultation: Consultation, state: ReviewState, version: VersionView
) -> HttpResponse:
    case = consultation.snapshot.data
    refs = [e for v in state.versions for e in v.payload.get("evidence") or []]
    version_ids = selectors.evidence_version_ids(refs=refs)
    details = selectors.evidence_details(version_ids=version_ids)
    view = recommendation_view(
        version.payload,
        case=case,
        dossier_id=consultation.dossier_id,
        derived=consultation.snapshot.frozen.derived,
        version_ids=version_ids,
        titles={unit: cited.title for unit, cited in details.items()},
        details=details,
    )
    base = state.version(version.based_on) if version.based_on else None

    context = {
        "consultation": consultation,
        "state": state,
        "version": version,
        "is_current": version.number == state.current.number,
        "view": view,
        "diff": plan_diff(base.payload, version.payload) if base else [],
        "base": base,
        "dissent": final_dissent(consultation=consultation),
        "models": selectors.consultation_models(consultation=consultation),
        "decision_form": DecisionForm(base=state.current.number),
        "reopen_form": ReopenForm(base=state.current.number),
        "report_form": ReportForm(),
        "may_sign_off": selectors.may_sign_off(user=request.user, state=state),
        # What accepting the current version would sign: a plan that contradicts itself is
        # amended, not accepted (the service refuses it; the page says why beforehand).
        "findings": plan_findings(state.current.payload) if state.awaiting else [],
    }
    return render(request, "review/plan.html", context)


@require_GET
def plan_detail(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    state = selectors.review_state_get(consultation=consultation, with_reports=True)
    audit_record(action="plan.view", actor=request.user, obj=consultation.plan)
    return _plan_page(request, consultation, state, state.current)


@require_GET
def plan_version(request: AuthedRequest, pk: int, number: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    state = selectors.review_state_get(consultation=consultation, with_reports=True)
    version = state.version(number)
    audit_record(
        action="plan.view", actor=request.user, obj=consultation.plan, payload={"version": number}
    )
    return _plan_page(request, consultation, state, version)


@require_GET
def plan_version_json(request: AuthedRequest, pk: int, number: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    try:
        document = services.plan_version_export(
            actor=request.user, consultation=consultation, number=number
        )
    except services.ReviewError as exc:
        raise Http404(str(exc)) from exc
    return _json_download(document, f"{consultation.dossier.case_id}-plan-v{number}.json")


@require_GET
def case_record_json(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    record = services.case_record_export(actor=request.user, consultation=consultation)
    return _json_download(record, f"{consultation.dossier.case_id}-record-{consultation.pk}.json")


def _back(pk: int, anchor: str = "review") -> HttpResponse:
    return redirect(reverse("consult:plan-detail", kwargs={"pk": pk}) + f"#{anchor}")


def _errors(request: AuthedRequest, exc: services.ReviewError) -> None:
    for error in exc.errors:
        messages.error(request, error)


@require_POST
def review_decide(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose accept or reject (and give a reason to reject).")
        return _back(pk)
    try:
        review = services.review_decide(
            actor=request.user,
            consultation=consultation,
            decision=form.cleaned_data["decision"],
            reason=form.cleaned_data["reason"],
            reason_kind=form.cleaned_data["reason_kind"],
            idempotency_key=form.cleaned_data["key"],
            base_version=form.cleaned_data["base"],
        )
    except services.ReviewError as exc:
        _errors(request, exc)
        return _back(pk)
    messages.success(
        request, f"Plan version {review.plan_number}: {review.get_decision_display().lower()}."
    )
    return _back(pk)


def _with_added_row(data: QueryDict, prefixes: tuple[str, ...]) -> QueryDict | None:
    """The form sent back with one more empty row, when the clinician pressed a formset's
    "Add" button with JavaScript off (the script adds the row in the page instead)."""
    for prefix in prefixes:
        if f"add-{prefix}" in data:
            grown = data.copy()
            total = f"{prefix}-TOTAL_FORMS"
            grown[total] = str(int(data.get(total) or 0) + 1)
            return grown
    return None


@require_http_methods(["GET", "POST"])
def plan_amend(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    state = selectors.review_state_get(consultation=consultation)
    if state.sign_off is not None:
        messages.error(request, services.SIGNED)
        return _back(pk)
    current = state.current
    payload = current.payload
    components = (payload.get("recommendation") or {}).get("components") or []
    status = 200
    if request.method == "POST":
        grown = _with_added_row(request.POST, ("c", "m"))
        form = AmendForm(grown or request.POST)
        formset = ComponentFormSet(grown or request.POST, prefix="c")
        follow_up = MonitoringFormSet(grown or request.POST, prefix="m")
        if grown is None and form.is_valid() and formset.is_valid() and follow_up.is_valid():
            edits = [e for e in (f.edit() for f in formset.forms) if e is not None]
            rows = [r for r in (f.row() for f in follow_up.forms) if r is not None]
            try:
                version = services.plan_amend(
                    actor=request.user,
                    consultation=consultation,
                    edits=edits,
                    reason=form.cleaned_data["reason"],
                    idempotency_key=form.cleaned_data["key"],
                    base_version=form.cleaned_data["base"],
                    with_ruled_out=True,
                    intent=form.cleaned_data["intent"],
                    monitoring=rows,
                )
            except services.ReviewError as exc:
                for error in exc.errors:
                    form.add_error(None, error)
            else:
                messages.success(
                    request,
                    f"Saved as plan version {version.number} ({version.content_hash[:12]}); "
                    f"version {version.based_on} is kept as it was.",
                )
                return _back(pk)
        status = 200 if grown is not None else 422
    else:
        intent = (payload.get("recommendation") or {}).get("intent")
        form = AmendForm(base=current.number, initial={"intent": intent})
        formset = ComponentFormSet(
            prefix="c",
            initial=component_initial(components, list(payload.get("rejected_options") or [])),
        )
        follow_up = MonitoringFormSet(
            prefix="m", initial=monitoring_initial(list(payload.get("monitoring") or []))
        )
    return render(
        request,
        "review/amend.html",
        {
            "consultation": consultation,
            "state": state,
            "version": current,
            "form": form,
            "formset": formset,
            "follow_up": follow_up,
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
def meeting(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    state = selectors.review_state_get(consultation=consultation)
    if state.sign_off is not None:
        messages.error(request, services.SIGNED)
        return _back(pk)
    clinicians = list(selectors.team_clinicians(consultation=consultation))
    status = 200
    if request.method == "POST":
        grown = _with_added_row(request.POST, ("a",))
        form = MeetingForm(grown or request.POST, clinicians=clinicians)
        attendees = AttendeeFormSet(grown or request.POST, prefix="a")
        if grown is None and form.is_valid() and attendees.is_valid():
            people = [a for a in (f.attendee() for f in attendees.forms) if a is not None]
            try:
                services.meeting_record(
                    actor=request.user,
                    consultation=consultation,
                    held_on=form.cleaned_data["held_on"],
                    attendees=people,
                    final_decision=form.cleaned_data["final_decision"],
                    dissent=form.cleaned_data["dissent"],
                    responsible_id=form.cleaned_data["responsible"],
                )
            except services.ReviewError as exc:
                for error in exc.errors:
                    form.add_error(None, error)
            else:
                messages.success(request, "Meeting recorded.")
                return _back(pk)
        status = 200 if grown is not None else 422
    else:
        existing = state.meeting
        initial: dict[str, Any] = {"responsible": request.user.pk}
        people_rows: list[dict[str, str]] = []
        if existing is not None:
            initial = {
                "held_on": existing.held_on,
                "final_decision": existing.final_decision,
                "dissent": existing.dissent,
                "responsible": existing.responsible_id,
            }
            people_rows = list(existing.attendees)
        form = MeetingForm(initial=initial, clinicians=clinicians)
        attendees = AttendeeFormSet(prefix="a", initial=people_rows)
    return render(
        request,
        "review/meeting.html",
        {"consultation": consultation, "state": state, "form": form, "attendees": attendees},
        status=status,
    )


@require_http_methods(["GET", "POST"])
def sign_off(request: AuthedRequest, pk: int) -> HttpResponse:
    """Sign-off asks first: the page names the version, its hash and its pathway, and the
    clinician confirms that version (a plan amended meanwhile is not signed)."""
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    if not has_role(request.user, Role.CLINICIAN):
        raise PermissionDenied(services.NOT_CLINICIAN)
    state = selectors.review_state_get(consultation=consultation)
    if state.sign_off is not None:
        messages.info(request, services.SIGNED)
        return _back(pk)
    decided = state.decided
    form = SignOffForm(initial={"version": decided.number})
    status = 200
    if request.method == "POST":
        form = SignOffForm(request.POST)
        version = form.cleaned_data["version"] if form.is_valid() else None
        confirmed = bool(form.is_valid() and form.cleaned_data["confirm"])
        try:
            done = services.plan_sign_off(
                actor=request.user, consultation=consultation, version=version, confirmed=confirmed
            )
        except services.ReviewForbidden as exc:
            raise PermissionDenied(str(exc)) from exc
        except services.ReviewError as exc:
            for error in exc.errors:
                form.add_error(None, error)
            status = 422
        else:
            messages.success(request, f"Plan version {done.plan_number} signed off.")
            return _back(pk)
    elif not selectors.may_sign_off(user=request.user, state=state):
        messages.error(
            request,
            services.NOT_RESPONSIBLE.format(name=state.meeting.responsible)
            if state.meeting is not None and state.decision is not None
            else services.NO_MEETING,
        )
        return _back(pk)
    return render(
        request,
        "review/sign_off.html",
        {
            "consultation": consultation,
            "state": state,
            "version": decided,
            "pathway": [
                c
                for c in (decided.payload.get("recommendation") or {}).get("components") or []
                if (c.get("role") or "primary") == "primary"
            ],
            "form": form,
        },
        status=status,
    )


@require_POST
def review_reopen(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    form = ReopenForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The form is missing its submission key; reload the page.")
        return _back(pk)
    try:
        services.review_reopen(
            actor=request.user,
            consultation=consultation,
            reason=form.cleaned_data["reason"],
            idempotency_key=form.cleaned_data["key"],
        )
    except services.ReviewError as exc:
        _errors(request, exc)
        return _back(pk)
    messages.success(
        request, "The decision is reopened: record the team's new decision, then the meeting."
    )
    return _back(pk)


# --- reports ------------------------------------------------------------------------------------
@require_POST
def report_request(request: AuthedRequest, pk: int) -> HttpResponse:
    consultation = selectors.plan_consultation_get(user=request.user, pk=pk)
    form = ReportForm(request.POST)
    valid = form.is_valid()
    paper = form.cleaned_data["paper"] if valid else ""
    appendix = form.cleaned_data["appendix"] if valid else []
    try:
        services.report_request(
            actor=request.user, consultation=consultation, paper=paper, appendix=appendix
        )
    except services.ReviewError as exc:
        _errors(request, exc)
        return _back(pk, "reports")
    if wants_fragment(request):
        # The whole list: a second press returns the report already under way, drawn once.
        state = selectors.review_state_get(consultation=consultation, with_reports=True)
        return render(request, "review/partials/_report_list.html", {"reports": state.reports})
    return _back(pk, "reports")


@require_GET
@vary_on_htmx
def report_status(request: AuthedRequest, pk: int) -> HttpResponse:
    report = selectors.report_get(user=request.user, pk=pk)
    template = (
        "review/partials/_report.html" if wants_fragment(request) else "review/report_status.html"
    )
    return render(request, template, {"report": report})


@require_GET
def report_download(request: AuthedRequest, pk: int) -> FileResponse:
    report = selectors.report_get(user=request.user, pk=pk)
    if report.status != ReportStatus.DONE:
        raise Http404("This report is not ready")
    path = services.report_path(report)
    if not path.is_file():
        raise Http404("The report file is missing; request it again")
    services.report_download_record(actor=request.user, report=report)
    case_id = report.consultation.dossier.case_id
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=f"{case_id}-plan-v{report.plan_number}-{report.paper}.pdf",
        content_type="application/pdf",
    )
