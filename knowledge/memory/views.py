"""The administrator's pages of the experience memory and of governed evolution. Thin: parse,
call one selector or service, render. Administrators only; every POST carries its CSRF token."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from knowledge.memory import selectors
from knowledge.memory.evolution import (
    EvolutionError,
    evolution_propose,
    version_approve,
    version_reject,
    version_rollback,
)
from knowledge.memory.forms import DecisionForm, EntryFilterForm, EntryForm, RetireForm
from knowledge.memory.models import ExperienceEntry, PromptVersion, WeightVersion
from knowledge.memory.pruning import memory_prune
from knowledge.memory.services import (
    EDITABLE,
    ExperienceError,
    experience_edit,
    experience_retire,
)
from mdtboard.accounts.roles import Role, role_required
from mdtboard.core.http import AuthedRequest

MAX_ROWS = 300


def _entry(pk: int) -> ExperienceEntry:
    try:
        return selectors.experience_get(pk=pk)
    except ExperienceEntry.DoesNotExist as exc:
        raise Http404("No such entry") from exc


@require_GET
@role_required(Role.ADMIN)
def memory_home(request: AuthedRequest) -> HttpResponse:
    form = EntryFilterForm(request.GET or {"status": "active"})
    filters = form.cleaned_data if form.is_valid() else {}
    entries = selectors.experience_list(**filters)[:MAX_ROWS]
    return render(
        request,
        "memory/home.html",
        {
            "form": form,
            "entries": entries,
            "figures": selectors.memory_figures(),
            "runs": selectors.prune_runs(),
            "pending": sum(len(v) for v in selectors.proposals_pending().values()),
        },
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.ADMIN)
def entry_detail(request: AuthedRequest, pk: int) -> HttpResponse:
    entry = _entry(pk)
    initial = {name: getattr(entry, name) for name in EDITABLE}
    form = EntryForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            experience_edit(actor=request.user, entry=entry, changes=form.cleaned_data)
        except ExperienceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{entry.label} saved.")
            return redirect("memory:entry", pk=entry.pk)
    return render(
        request,
        "memory/entry.html",
        {"entry": entry, "form": form, "retire_form": RetireForm(), "uses": entry.uses.all()[:50]},
        status=422 if form.errors else 200,
    )


@require_POST
@role_required(Role.ADMIN)
def entry_retire(request: AuthedRequest, pk: int) -> HttpResponse:
    entry = _entry(pk)
    form = RetireForm(request.POST)
    try:
        if not form.is_valid():
            raise ExperienceError("Give the reason for retiring the entry.")
        experience_retire(actor=request.user, entry=entry, reason=form.cleaned_data["reason"])
    except ExperienceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{entry.label} retired: it is no longer recalled.")
    return redirect("memory:entry", pk=entry.pk)


@require_POST
@role_required(Role.ADMIN)
def prune_now(request: AuthedRequest) -> HttpResponse:
    run = memory_prune()
    messages.success(
        request,
        f"Pruned: {run.duplicates} duplicate(s), {run.stale} stale, {run.over_capacity} over "
        f"capacity retired; {run.active_after} active.",
    )
    return redirect("memory:home")


# --- governed evolution ---------------------------------------------------------------------


@require_GET
@role_required(Role.ADMIN)
def evolution(request: AuthedRequest) -> HttpResponse:
    return render(
        request,
        "memory/evolution.html",
        {
            "pending": selectors.proposals_pending(),
            "in_force": selectors.versions_in_force(),
            "history": selectors.version_history(),
            "form": DecisionForm(),
        },
    )


@require_POST
@role_required(Role.ADMIN)
def propose_now(request: AuthedRequest) -> HttpResponse:
    made = evolution_propose()
    if made:
        messages.success(request, f"{len(made)} new proposal(s); none takes effect until approved.")
    else:
        messages.info(request, "No ChainKB pattern has reached the threshold for a new proposal.")
    return redirect("memory:evolution")


def _version(kind: str, pk: int) -> PromptVersion | WeightVersion:
    version: PromptVersion | WeightVersion | None
    if kind == "prompt":
        version = PromptVersion.objects.filter(pk=pk).first()
    elif kind == "weights":
        version = WeightVersion.objects.filter(pk=pk).first()
    else:
        raise Http404("No such kind of version")
    if version is None:
        raise Http404("No such version")
    return version


@require_POST
@role_required(Role.ADMIN)
def version_decide(request: AuthedRequest, kind: str, pk: int, action: str) -> HttpResponse:
    version = _version(kind, pk)
    form = DecisionForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    try:
        if action == "approve":
            version_approve(actor=request.user, version=version, note=note)
            messages.success(request, f"{version} approved: new consultations use it.")
        elif action == "reject":
            version_reject(actor=request.user, version=version, note=note)
            messages.success(request, f"{version} rejected.")
        elif action == "rollback":
            restored = version_rollback(actor=request.user, version=version)
            messages.success(
                request,
                f"{version} rolled back; in force now: "
                + (str(restored) if restored is not None else "the default"),
            )
        else:
            raise Http404("No such action")
    except EvolutionError as exc:
        messages.error(request, str(exc))
    return redirect("memory:evolution")
