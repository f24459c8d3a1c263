"""Curator pages: units and their versions, review, sources, bundles, retrieval diagnostics."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any

import yaml
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from clinical.coverage import coverage_tables
from clinical.vocab import STAGING_LABELS
from knowledge.cases import case_source
from knowledge.embeddings import EmbeddingError
from knowledge.forms import (
    EMPTY_CONTEXT,
    RETIRE_REASON,
    BundleUploadForm,
    CandidateForm,
    DiagnosticsForm,
    IngestForm,
    ReasonForm,
    SourceForm,
    UnitFilterForm,
    UnitForm,
    candidate_initial,
    canonical_content,
    pretty_json,
    source_initial,
    unit_initial,
)
from knowledge.ingest import Candidate, IngestError, segment_document
from knowledge.models import (
    ApprovalKind,
    ApprovalRequest,
    ApprovalStatus,
    GuidelineSource,
    UnitVersion,
    VersionStatus,
)
from knowledge.selectors import (
    Arbitrated,
    Hit,
    approval_request_get,
    approval_requests_pending,
    arbitrate,
    coverage_published,
    newest_published_number,
    published_by_unit,
    safety_change_of,
    sources_all,
    unit_approval_requests,
    unit_latest_versions,
    unit_search,
    unit_versions_for,
    version_as_cited,
    versions_in_review,
)
from knowledge.services import (
    BundleError,
    BundleImportResult,
    KnowledgeError,
    approval_request_approve,
    approval_request_refuse,
    approval_request_withdraw,
    bundle_export,
    bundle_import,
    bundle_parse,
    hotfix_allowed_kind,
    source_save,
    unit_save_draft,
    version_publish,
    version_retire_request,
    version_submit,
)
from mdtboard.accounts.roles import Role, has_role, is_admin, role_required
from mdtboard.core.http import AuthedRequest, vary_on_htmx, wants_fragment

CURATORS = (Role.CURATOR, Role.ADMIN)
MAX_BUNDLE_BYTES = 20 * 1024 * 1024
MAX_LIST_ROWS = 500


# --- reads, with the 404 a page needs -------------------------------------------------------


def _versions_of(key: str) -> list[UnitVersion]:
    versions = list(unit_versions_for(unit_key=key))
    if not versions:
        raise Http404("No such unit")
    return versions


def _version(key: str, number: int) -> UnitVersion:
    version = unit_versions_for(unit_key=key).filter(number=number).first()
    if version is None:
        raise Http404("No such version")
    return version


def _source_choices() -> list[tuple[str, str]]:
    return [(s.key, f"{s.key} – {s.organisation} {s.version}") for s in sources_all()]


# --- presentation -------------------------------------------------------------------------

OP_TEXT = {
    "eq": "=",
    "ne": "≠",
    "in": "in",
    "not_in": "not in",
    "lt": "<",
    "le": "≤",
    "gt": ">",
    "ge": "≥",
    "is_true": "is true",
    "is_false": "is false",
    "present": "is recorded",
    "contains_any": "contains any of",
}


def condition_text(condition: Mapping[str, Any]) -> str:
    """{"fact": "derived.bclc", "op": "in", "value": ["0", "A"]} -> "derived.bclc in 0, A"."""
    value = condition.get("value")
    shown = ", ".join(str(v) for v in value) if isinstance(value, list) else value
    parts = [str(condition.get("fact")), OP_TEXT.get(str(condition.get("op")), "?")]
    if shown is not None:
        parts.append(str(shown))
    return " ".join(parts)


# A condition as a clinician reads it on the evidence page ("BCLC stage is one of 0, A");
# curators keep the keys they edit (``condition_text``).
OP_WORDS = {
    "eq": "is",
    "ne": "is not",
    "in": "is one of",
    "not_in": "is none of",
    "lt": "is below",
    "le": "is at most",
    "gt": "is above",
    "ge": "is at least",
    "present": "is recorded",
    "contains_any": "includes any of",
}
_UNITS = (
    ("_10e9_l", " (×10⁹/L)"),  # noqa: RUF001 - the multiplication sign of a unit
    ("_mg_dl", " (mg/dL)"),
    ("_g_dl", " (g/dL)"),
    ("_ng_ml", " (ng/mL)"),
    ("_iu_ml", " (IU/mL)"),
    ("_ml_min", " (mL/min)"),
    ("_u_l", " (U/L)"),
    ("_pct", " (%)"),
    ("_mm", " (mm)"),
    ("_ms", " (ms)"),
    ("_kg", " (kg)"),
    ("_years", " (years)"),
)
_ABBREVIATIONS = {
    "ecog": "ECOG",
    "lvef": "LVEF",
    "afp": "AFP",
    "inr": "INR",
    "anc": "ANC",
    "ldh": "LDH",
    "hbsag": "HBsAg",
    "hbc": "HBc",
    "hbv": "HBV",
    "hcv": "HCV",
    "hiv": "HIV",
    "dna": "DNA",
    "rna": "RNA",
    "egfr": "EGFR",
    "alk": "ALK",
    "ros1": "ROS1",
    "kras": "KRAS",
    "braf": "BRAF",
    "ret": "RET",
    "met": "MET",
    "her2": "HER2",
    "pdl1": "PD-L1",
    "tps": "TPS",
    "qtc": "QTc",
    "bclc": "BCLC",
    "albi": "ALBI",
    "ipi": "IPI",
    "flipi": "FLIPI",
    "cns": "CNS",
    "crcl": "CrCl",
    "er": "ER",
    "pr": "PR",
    "ki67": "Ki-67",
    "brca": "BRCA",
    "cd20": "CD20",
    "tnm": "TNM",
    "ajcc": "AJCC",
    "ckd": "CKD",
    "epi": "EPI",
    "cyp3a4": "CYP3A4",
    "dpd": "DPD",
    "ugt1a1": "UGT1A1",
    "ild": "ILD",
    "irae": "irAE",
    "bmi": "BMI",
    "bsa": "BSA",
}


def fact_words(fact: str) -> str:
    """ "derived.bclc" -> "BCLC stage", "labs.ldh_u_l" -> "LDH (U/L)"."""
    key = fact.rsplit(".", 1)[-1]
    if fact.startswith("derived.") and key in STAGING_LABELS:
        return STAGING_LABELS[key]
    unit = ""
    for suffix, shown in _UNITS:
        if key.endswith(suffix):
            key, unit = key.removesuffix(suffix), shown
            break
    words = [_ABBREVIATIONS.get(w, w) for w in key.split("_") if w]
    text = " ".join(words)
    return (text[:1].upper() + text[1:] if text else fact) + unit


def _value_words(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list):
        return ", ".join(_value_words(v) for v in value)
    return str(value).replace("_", " ")


def condition_words(condition: Mapping[str, Any]) -> str:
    """{"fact": "derived.bclc", "op": "in", "value": ["0", "A"]} -> "BCLC stage is one of 0, A"."""
    label = fact_words(str(condition.get("fact") or ""))
    op = str(condition.get("op") or "")
    if op == "is_true":
        return f"{label}: yes"
    if op == "is_false":
        return f"{label}: no"
    value = condition.get("value")
    words = OP_WORDS.get(op, op.replace("_", " "))
    return f"{label} {words}" + (f" {_value_words(value)}" if value is not None else "")


def readable_context(context: Mapping[str, Any], *, words: bool = False) -> dict[str, list[str]]:
    text = condition_words if words else condition_text
    return {
        "all": [text(c) for c in context.get("all") or []],
        "any": [text(c) for c in context.get("any") or []],
        "exceptions": [str(e) for e in context.get("exceptions") or []],
    }


def readable_action(action: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows = []
    for name, value in action.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value) or "—"
        rows.append((name.replace("_", " "), str(value)))
    return rows


def _content_view(version: UnitVersion, *, words: bool = False) -> dict[str, Any]:
    content = canonical_content(version.unit.key, version.content)
    return {
        "version": version,
        "context": readable_context(content.get("context") or {}, words=words),
        "action": readable_action(content.get("action") or {}),
    }


@dataclass(frozen=True)
class DiffCell:
    number: int | None
    text: str
    change: str  # "same", "removed", "added" or "empty"

    @property
    def marker(self) -> str:
        return {"removed": "\u2212", "added": "+"}.get(self.change, "")


@dataclass(frozen=True)
class DiffRow:
    left: DiffCell
    right: DiffCell


def content_lines(content: Mapping[str, Any]) -> list[str]:
    """The same pretty-printed JSON the stored unified diff is made of."""
    return json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def side_by_side(old: list[str], new: list[str]) -> list[DiffRow]:
    """Rows of a two-column diff; the template escapes the text."""
    rows: list[DiffRow] = []
    empty = DiffCell(None, "", "empty")
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                rows.append(
                    DiffRow(
                        DiffCell(i1 + offset + 1, old[i1 + offset], "same"),
                        DiffCell(j1 + offset + 1, new[j1 + offset], "same"),
                    )
                )
            continue
        left = [DiffCell(i + 1, old[i], "removed") for i in range(i1, i2)]
        right = [DiffCell(j + 1, new[j], "added") for j in range(j1, j2)]
        for a, b in zip_longest(left, right, fillvalue=empty):
            rows.append(DiffRow(a, b))
    return rows


def _back(request: AuthedRequest, version: UnitVersion) -> HttpResponse:
    target = str(request.POST.get("next", ""))
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect("knowledge:unit-detail", key=version.unit.key)


# --- units --------------------------------------------------------------------------------


@require_GET
@role_required(*CURATORS)
@vary_on_htmx
def unit_list(request: AuthedRequest) -> HttpResponse:
    form = UnitFilterForm(request.GET or None, sources=_source_choices())
    filters: dict[str, Any] = form.cleaned_data if form.is_valid() else {}
    rows = unit_latest_versions(
        q=filters.get("q", ""),
        cancer_type=filters.get("cancer_type", ""),
        kind=filters.get("kind", ""),
        status=filters.get("status", ""),
        source=filters.get("source", ""),
    )
    template = "knowledge/unit_list.html"
    if wants_fragment(request):
        template += "#unit-table"
    return render(request, template, {"form": form, "rows": rows[:MAX_LIST_ROWS]})


@require_GET
@role_required(*CURATORS)
def unit_detail(request: AuthedRequest, key: str) -> HttpResponse:
    versions = _versions_of(key)
    published = next((v for v in versions if v.status == VersionStatus.PUBLISHED), None)
    shown = published or versions[0]
    approvals = list(unit_approval_requests(unit=versions[0].unit))
    pending = [a for a in approvals if a.is_pending]
    _mark(versions, pending)
    context = {
        "unit": versions[0].unit,
        "versions": versions,
        "published": published,
        "shown": _content_view(shown),
        "is_admin": is_admin(request.user),
        "hotfix_allowed": hotfix_allowed_kind(actor=request.user, kind=versions[0].unit.kind),
        "newest_published": newest_published_number(versions),
        "pending": pending,
        "decided": [a for a in approvals if not a.is_pending][:20],
    }
    return render(request, "knowledge/unit_detail.html", context)


def _mark(versions: list[UnitVersion], pending: list[ApprovalRequest]) -> None:
    """What the version pages show beside each version: ``change`` (what publishing it does
    to the published safety rule, for drafts and versions in review) and its pending
    ``publish_request``, ``retire_request`` and ``hotfix_request``."""
    unsettled = (VersionStatus.DRAFT, VersionStatus.IN_REVIEW)
    live = published_by_unit(unit_ids={v.unit_id for v in versions if v.status in unsettled})
    for v in versions:
        change = None
        if v.status in unsettled:
            change = safety_change_of(version=v, published=live.get(v.unit_id))
        setattr(v, "change", change)  # noqa: B010 - a display attribute, not a model field
        for kind in ApprovalKind:
            request = next((a for a in pending if a.version_id == v.pk and a.kind == kind), None)
            setattr(v, f"{kind.value}_request", request)


def _unit_form_page(
    request: AuthedRequest,
    form: UnitForm,
    key: str | None,
    status: int = 200,
    statement: Mapping[str, Any] | None = None,
) -> HttpResponse:
    if statement is None and request.method == "POST" and request.POST.get("statement"):
        # A unit drafted from an ingested statement keeps showing that statement.
        statement = {
            "statement": request.POST.get("statement", ""),
            "anchor": request.POST.get("statement_anchor", ""),
        }
    context = {"form": form, "key": key, "statement": statement}
    return render(request, "knowledge/unit_form.html", context, status=status)


def _save_unit(request: AuthedRequest, form: UnitForm, key: str | None) -> HttpResponse:
    if form.is_valid() and form.spec is not None:
        try:
            version = unit_save_draft(actor=request.user, spec=form.spec)
        except KnowledgeError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                f"Saved as draft v{version.number}. Send it to review when it is ready.",
            )
            return redirect("knowledge:unit-detail", key=version.unit.key)
    return _unit_form_page(request, form, key, status=422)


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def unit_create(request: AuthedRequest) -> HttpResponse:
    if request.method == "POST":
        form = UnitForm(request.POST, sources=_source_choices())
        return _save_unit(request, form, None)
    initial = {"context": pretty_json(EMPTY_CONTEXT)}
    return _unit_form_page(request, UnitForm(initial=initial, sources=_source_choices()), None)


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def unit_edit(request: AuthedRequest, key: str) -> HttpResponse:
    latest = _versions_of(key)[0]
    initial = unit_initial(key, latest.content)
    form = UnitForm(
        request.POST if request.method == "POST" else None,
        initial=initial,
        sources=_source_choices(),
        editing=True,
    )
    if request.method == "POST":
        return _save_unit(request, form, key)
    return _unit_form_page(request, form, key)


MAX_VERSION_DIGITS = 9


def _int_param(request: AuthedRequest, name: str) -> int | None:
    """A version number from the query string, None when absent. Anything but a plain ASCII
    number of sensible length names no version: 404, never a crash in ``int`` ("²" passes
    ``isdigit``; thousands of digits exceed ``int``'s limit)."""
    raw = str(request.GET.get(name, "")).strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > MAX_VERSION_DIGITS:
        raise Http404(f"No such version: ?{name}= must be a version number")
    return int(raw)


@require_GET
@role_required(*CURATORS)
def unit_diff(request: AuthedRequest, key: str) -> HttpResponse:
    versions = _versions_of(key)
    by_number = {v.number: v for v in versions}
    b_number = _int_param(request, "b") or versions[0].number
    a_number = _int_param(request, "a")
    if a_number is None:
        a_number = b_number - 1
    if b_number not in by_number or (a_number not in by_number and a_number != 0):
        raise Http404("No such version")
    old = by_number.get(a_number)
    new = by_number[b_number]
    _mark([new], list(approval_requests_pending().filter(version=new)))
    rows = side_by_side(content_lines(old.content) if old else [], content_lines(new.content))
    context = {
        "unit": new.unit,
        "versions": versions,
        "old": old,
        "new": new,
        "rows": rows,
        "changes": sum(1 for r in rows if r.left.change != "same"),
        "newest_published": newest_published_number(versions),
    }
    return render(request, "knowledge/unit_diff.html", context)


# --- version actions ----------------------------------------------------------------------


@require_POST
@role_required(*CURATORS)
def version_submit_view(request: AuthedRequest, key: str, number: int) -> HttpResponse:
    version = _version(key, number)
    reason = str(request.POST.get("reason", ""))[:2000]
    try:
        version_submit(actor=request.user, version=version, reason=reason)
    except KnowledgeError as exc:
        messages.error(request, str(exc))
    else:
        if version.approvals.filter(
            kind=ApprovalKind.PUBLISH, status=ApprovalStatus.PENDING
        ).exists():
            messages.warning(
                request,
                f"v{number} sent to review. It weakens the published safety rule, so a second "
                "curator or an administrator must approve it before it takes effect.",
            )
        else:
            messages.success(request, f"v{number} sent to review: another curator publishes it.")
    return _back(request, version)


@require_POST
@role_required(*CURATORS)
def version_publish_view(request: AuthedRequest, key: str, number: int) -> HttpResponse:
    version = _version(key, number)
    try:
        version_publish(actor=request.user, version=version)
    except KnowledgeError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{key} v{number} published; its embedding is being computed.")
    return _back(request, version)


@require_POST
@role_required(*CURATORS)
def version_hotfix_view(request: AuthedRequest, key: str, number: int) -> HttpResponse:
    version = _version(key, number)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for e in form.errors["reason"]))
        return _back(request, version)
    try:
        published = version_publish(
            actor=request.user, version=version, hotfix_reason=form.cleaned_data["reason"]
        )
    except KnowledgeError as exc:
        messages.error(request, str(exc))
    else:
        if published.hotfix:
            messages.success(
                request,
                f"{key} v{number} published as a hot-fix (flagged and audited); it is pending "
                "a second person's review.",
            )
        else:
            messages.success(request, f"{key} v{number} published after review.")
    return _back(request, version)


@require_POST
@role_required(*CURATORS)
def version_retire_view(request: AuthedRequest, key: str, number: int) -> HttpResponse:
    version = _version(key, number)
    form = ReasonForm(request.POST, required_message=RETIRE_REASON)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for e in form.errors["reason"]))
        return _back(request, version)
    try:
        version_retire_request(
            actor=request.user, version=version, reason=form.cleaned_data["reason"]
        )
    except KnowledgeError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"Retiring {key} v{number} is asked for: it stays published until a second "
            "curator or an administrator approves.",
        )
    return _back(request, version)


DECISIONS = ("approve", "refuse", "withdraw")


def _decided(request: ApprovalRequest) -> str:
    what = f"{request.unit.key} v{request.version.number}"
    if request.status == ApprovalStatus.SUPERSEDED:
        return f"{what}: settled without a decision ({request.decision_note})"
    if request.status == ApprovalStatus.APPROVED:
        return {
            ApprovalKind.RETIRE: f"{what} retired: retrieval no longer sees it.",
            ApprovalKind.PUBLISH: f"{what} published: its embedding is being computed.",
            ApprovalKind.HOTFIX: f"Hot-fix {what} confirmed by a second person.",
        }[ApprovalKind(request.kind)]
    if request.status == ApprovalStatus.REFUSED:
        return {
            ApprovalKind.RETIRE: f"Retiring {what} refused: it stays published.",
            ApprovalKind.PUBLISH: f"{what} refused: it is a draft again.",
            ApprovalKind.HOTFIX: f"Hot-fix {what} disputed: it stays live; edit the unit "
            "through review to change it.",
        }[ApprovalKind(request.kind)]
    return f"Request about {what} withdrawn."


@require_POST
@role_required(*CURATORS)
def approval_decide(request: AuthedRequest, pk: int, decision: str) -> HttpResponse:
    """A second person approves or refuses a change waiting for four eyes; who asked may
    withdraw it. The services decide who may."""
    approval = approval_request_get(pk=pk)
    if approval is None or decision not in DECISIONS:
        raise Http404("No such request")
    note = str(request.POST.get("note", ""))[:2000]
    try:
        if decision == "approve":
            approval = approval_request_approve(actor=request.user, request=approval, note=note)
        elif decision == "refuse":
            approval = approval_request_refuse(actor=request.user, request=approval, note=note)
        else:
            approval = approval_request_withdraw(actor=request.user, request=approval)
    except KnowledgeError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _decided(approval))
    return _back(request, approval.version)


@require_GET
@role_required(*CURATORS)
def review_queue(request: AuthedRequest) -> HttpResponse:
    versions = list(versions_in_review())
    pending = list(approval_requests_pending())
    _mark(versions, pending)
    context = {
        "versions": versions,
        "retirements": [a for a in pending if a.kind == ApprovalKind.RETIRE],
        "hotfixes": [a for a in pending if a.kind == ApprovalKind.HOTFIX],
    }
    return render(request, "knowledge/review_queue.html", context)


# --- sources ------------------------------------------------------------------------------


@require_GET
@role_required(*CURATORS)
def source_list(request: AuthedRequest) -> HttpResponse:
    return render(request, "knowledge/source_list.html", {"sources": sources_all()})


def _save_source(
    request: AuthedRequest, form: SourceForm, source: GuidelineSource | None
) -> HttpResponse:
    if request.method == "POST" and form.is_valid() and form.spec is not None:
        try:
            saved = source_save(actor=request.user, spec=form.spec)
        except KnowledgeError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Source {saved.key} saved.")
            return redirect("knowledge:source-list")
    status = 422 if form.is_bound else 200
    return render(
        request, "knowledge/source_form.html", {"form": form, "source": source}, status=status
    )


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def source_create(request: AuthedRequest) -> HttpResponse:
    return _save_source(request, SourceForm(request.POST or None), None)


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def source_edit(request: AuthedRequest, key: str) -> HttpResponse:
    source = get_object_or_404(GuidelineSource, key=key)
    form = SourceForm(request.POST or None, initial=source_initial(source), editing=True)
    return _save_source(request, form, source)


# --- bundles ------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def bundle_page(request: AuthedRequest) -> HttpResponse:
    form = BundleUploadForm(request.POST or None, request.FILES or None)
    errors: list[BundleError] = []
    result: BundleImportResult | None = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        name = str(upload.name)
        # One byte over the limit is enough for bundle_parse to refuse it.
        bundle, errors = bundle_parse(upload.read(MAX_BUNDLE_BYTES + 1), filename=name)
        if bundle is not None:
            try:
                result = bundle_import(actor=request.user, bundle=bundle)
            except KnowledgeError as exc:
                errors = [BundleError(name, str(exc))]
    status = 422 if errors or form.errors else 200
    return render(
        request,
        "knowledge/bundle.html",
        {"form": form, "errors": errors, "result": result},
        status=status,
    )


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_GET
@role_required(*CURATORS)
def bundle_export_json(request: AuthedRequest) -> HttpResponse:
    document = bundle_export()
    body = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return _download(body, "application/json", "mdtboard-kb.json")


@require_GET
@role_required(*CURATORS)
def bundle_export_yaml(request: AuthedRequest) -> HttpResponse:
    document = bundle_export()
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    return _download(body, "application/yaml", "mdtboard-kb.yaml")


# --- coverage map ---------------------------------------------------------------------------


@require_GET
@role_required(*CURATORS)
def coverage(request: AuthedRequest) -> HttpResponse:
    """What the published knowledge base has a pathway for, per cancer, and the situations
    where a plan abstains (docs/coverage.md is the same map of the seed)."""
    return render(
        request, "knowledge/coverage.html", {"cancers": coverage_tables(coverage_published())}
    )


# --- retrieval diagnostics ----------------------------------------------------------------


@require_GET
@role_required(*CURATORS)
@vary_on_htmx
def diagnostics(request: AuthedRequest) -> HttpResponse:
    # A curator never opens a dossier: only a clinician or administrator is offered one.
    cases = case_source()
    dossiers = None
    if cases is not None and has_role(request.user, Role.CLINICIAN, Role.ADMIN):
        dossiers = cases.choices(user=request.user)
    form = DiagnosticsForm(request.GET or None, dossiers=dossiers)
    hits: list[Hit] = []
    result: Arbitrated | None = None
    dossier = None
    if form.is_valid():
        data = form.cleaned_data
        if data.get("dossier") and cases is not None:
            dossier = cases.get(user=request.user, pk=data["dossier"])
        try:
            hits = unit_search(
                query=data["q"],
                cancer_type=data["cancer_type"] or (dossier.cancer_type if dossier else None),
                k=data["k"],
                case=dossier.data if dossier else None,
                mode=data["mode"],
            )
        except EmbeddingError as exc:
            form.add_error("mode", f"Dense retrieval is unavailable ({exc}); try keyword mode.")
        else:
            result = arbitrate(hits)
    context = {
        "form": form,
        "dossier": dossier,
        "result": result,
        "ranked": list(enumerate(hits, start=1)),
    }
    template = "knowledge/diagnostics.html"
    if wants_fragment(request):
        template += "#diagnostics-panel"
    return render(request, template, context)


# --- document ingest ----------------------------------------------------------------------

MAX_CANDIDATES_SHOWN = 1000


@require_http_methods(["GET", "POST"])
@role_required(*CURATORS)
def ingest(request: AuthedRequest) -> HttpResponse:
    form = IngestForm(request.POST or None, request.FILES or None, sources=_source_choices())
    candidates: list[Candidate] | None = None
    if request.method == "POST" and form.is_valid():
        try:
            candidates = segment_document(
                form.cleaned_data["document"],
                fmt=form.cleaned_data["format"],
                source_key=form.cleaned_data["source"],
            )
        except IngestError as exc:
            form.add_error("file", str(exc))
    context = {
        "form": form,
        "candidates": candidates[:MAX_CANDIDATES_SHOWN] if candidates is not None else None,
        "total": len(candidates) if candidates is not None else 0,
        "limit": MAX_CANDIDATES_SHOWN,
    }
    status = 422 if form.errors else 200
    return render(request, "knowledge/ingest.html", context, status=status)


@require_POST
@role_required(*CURATORS)
def ingest_draft(request: AuthedRequest) -> HttpResponse:
    """The new-unit form pre-filled from one candidate statement. Nothing is saved here: the
    form posts to the new-unit page, which saves a draft like any other."""
    candidate = CandidateForm(request.POST)
    if not candidate.is_valid():
        messages.error(request, "That statement could not be carried over; segment it again.")
        return redirect("knowledge:ingest")
    form = UnitForm(initial=candidate_initial(candidate.cleaned_data), sources=_source_choices())
    return _unit_form_page(request, form, None, statement=candidate.cleaned_data)


@require_GET
@role_required(Role.CLINICIAN, Role.CURATOR, Role.ADMIN)
def evidence(request: AuthedRequest, version_id: int) -> HttpResponse:
    """One unit version exactly as a consultation cited it, for the clinicians reading the
    board: guideline content, not patient data, so every clinical role may read it."""
    version = version_as_cited(version_id=version_id)
    if version is None:
        raise Http404("No such published version")
    return render(request, "knowledge/evidence.html", _content_view(version, words=True))
