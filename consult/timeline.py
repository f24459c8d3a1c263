"""A patient's course on one time axis: treatments, imaging with the computed response at each
time point, key laboratory values as small trend charts drawn on the server (inline SVG, no
script), and the MDT's plans and decisions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final

from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from clinical.calculators.response import (
    CATEGORY_LABELS,
    PROGRESSION_CATEGORIES,
    LesionInputError,
    ResponseAssessment,
    assess,
    assessment_dates,
    lesions_from_case,
    response_criteria,
)
from consult.models import Consultation, ConsultationStatus, LesionDossier, Patient
from consult.review.models import ClinicianReview, MdtMeeting
from consult.selectors import patient_get
from consult.services.lesions import lesion_readings

# The laboratory values a board follows over time (FORMAT.md field, label, unit).
KEY_LABS: Final = (
    ("biomarkers.afp_ng_ml", "AFP", "ng/mL"),
    ("biomarkers.ldh_u_l", "LDH", "U/L"),
    ("labs.creatinine_mg_dl", "Creatinine", "mg/dL"),
    ("labs.bilirubin_mg_dl", "Bilirubin", "mg/dL"),
    ("labs.platelets_10e9_l", "Platelets", "10^9/L"),
)
_NOT_A_TREATMENT: Final = frozenset({"supportive", "antiviral", "referral", "surveillance"})
LANES: Final = (
    ("treatment", "Treatments"),
    ("imaging", "Imaging and response"),
    ("mdt", "MDT plans and decisions"),
)


@dataclass(frozen=True)
class Event:
    lane: str
    start: date
    title: str
    detail: str = ""
    end: date | None = None  # a treatment given over a period
    ongoing: bool = False
    category: str = ""  # a response category, for its colour
    left_pct: float = 0.0
    width_pct: float = 0.0

    @property
    def progression(self) -> bool:
        return self.category in PROGRESSION_CATEGORIES


@dataclass(frozen=True)
class LabSeries:
    label: str
    unit: str
    points: tuple[tuple[date, float], ...]
    chart: SafeString

    @property
    def latest(self) -> tuple[date, float]:
        return self.points[-1]


@dataclass
class PatientTimeline:
    patient: Patient
    start: date | None
    end: date | None
    lanes: list[tuple[str, str, list[Event]]] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    labs: list[LabSeries] = field(default_factory=list)
    response: ResponseAssessment | None = None
    ticks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.events and not self.labs


def _iso(value: object) -> date | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def _dossier_date(dossier: LesionDossier) -> date:
    """When a dossier's values held: its FHIR import's date, else when it was submitted."""
    fhir = getattr(dossier, "fhir_import", None)
    if fhir is not None:
        as_of: date = fhir.as_of
        return as_of
    moment = dossier.submitted_at or dossier.created_at
    return moment.date()


def _lookup(data: Mapping[str, Any], path: str) -> object:
    node: object = data
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _treatments(case: Mapping[str, Any]) -> list[Event]:
    diagnosis = case.get("diagnosis") or {}
    out: list[Event] = []
    for therapy in diagnosis.get("prior_therapies") or []:
        if not isinstance(therapy, Mapping):
            continue
        start, end = _iso(therapy.get("start_date")), _iso(therapy.get("end_date"))
        if start is None and end is None:
            continue
        bits = [
            str(therapy[k]).replace("_", " ")
            for k in ("intent", "stop_reason")
            if isinstance(therapy.get(k), str)
        ]
        if isinstance(therapy.get("best_response"), str):
            bits.append(f"best response {therapy['best_response']}")
        out.append(
            Event(
                lane="treatment",
                start=start or end or date.min,
                end=end if start is not None else None,
                ongoing=start is not None and end is None and not therapy.get("stop_reason"),
                title=str(therapy.get("regimen") or "treatment"),
                detail=", ".join(bits),
            )
        )
    return out


def _imaging(assessment: ResponseAssessment | None, readings: Sequence[Any]) -> list[Event]:
    by_date: dict[date, list[str]] = {}
    for lesion in readings:
        for m in lesion.measurements:
            size = lesion.size_mm(m.date) if m.date else None
            text = lesion.lesion_id
            if size is not None:
                text += f" {size:g} mm"
            if m.deauville is not None:
                text += f" (Deauville {m.deauville})"
            by_date.setdefault(m.date, []).append(text)
    points = {tp.date: tp for tp in assessment.time_points} if assessment else {}
    out: list[Event] = []
    for when in sorted(by_date):
        modalities = sorted(
            {m.modality for lesion in readings for m in lesion.measurements if m.date == when}
            - {None}
        )
        point = points.get(when)
        if assessment is not None and when == assessment.baseline_date:
            title = "Baseline"
            category = ""
        elif point is not None:
            title = f"{point.category}: {CATEGORY_LABELS.get(point.category, point.category)}"
            category = point.category
        else:
            title = "Imaging"
            category = ""
        detail = ", ".join(by_date[when])
        if point is not None and point.new_lesions:
            detail += f"; new: {', '.join(point.new_lesions)}"
        out.append(
            Event(
                lane="imaging",
                start=when,
                title=f"{' / '.join(modalities) or 'Imaging'} · {title}",
                detail=detail,
                category=category,
            )
        )
    return out


def _mdt(dossiers: Sequence[LesionDossier]) -> list[Event]:
    consultations = Consultation.objects.filter(
        dossier__in=dossiers, status=ConsultationStatus.COMPLETED
    ).select_related("plan")
    out: list[Event] = []
    for consultation in consultations:
        plan = getattr(consultation, "plan", None)
        if plan is None:
            continue
        payload = plan.payload
        steps = [
            c
            for c in (payload.get("recommendation") or {}).get("components") or []
            if c.get("role") == "primary"
        ]
        # the treatment the plan leads with, not a confirm-first check or a supportive step
        treatments = [
            c for c in steps if not c.get("adjunct") and c.get("modality") not in _NOT_A_TREATMENT
        ]
        primary = [c.get("description", "") for c in treatments or steps]
        response = payload.get("response") or {}
        detail = f"response {response['category']} ({response['criteria']})" if response else ""
        out.append(
            Event(
                lane="mdt",
                start=(consultation.finished_at or consultation.created_at).date(),
                title="Plan: " + (primary[0][:90] if primary else "no recommendation"),
                detail=detail,
            )
        )
    for review in ClinicianReview.objects.filter(consultation__dossier__in=dossiers):
        out.append(
            Event(
                lane="mdt",
                start=review.created_at.date(),
                title=f"Decision: {review.get_decision_display()}",
                detail=review.reason[:120],
            )
        )
    for meeting in MdtMeeting.objects.filter(consultation__dossier__in=dossiers):
        out.append(
            Event(
                lane="mdt",
                start=meeting.held_on,
                title="MDT meeting",
                detail=meeting.final_decision[:160],
            )
        )
    return out


def _labs(dossiers: Sequence[LesionDossier]) -> list[LabSeries]:
    out: list[LabSeries] = []
    for path, label, unit in KEY_LABS:
        values: dict[date, float] = {}
        for dossier in dossiers:
            value = _lookup(dossier.data, path)
            if isinstance(value, int | float) and not isinstance(value, bool):
                values[_dossier_date(dossier)] = float(value)
        if values:
            points = tuple(sorted(values.items()))
            out.append(LabSeries(label, unit, points, trend_svg(points, label=label, unit=unit)))
    return out


def patient_timeline(*, user: Any, pk: int) -> PatientTimeline:
    """Everything recorded about a patient over time, for the user's teams only."""
    patient = patient_get(user=user, pk=pk)
    dossiers = list(
        LesionDossier.objects.filter(patient=patient)
        .select_related("fhir_import")
        .order_by("created_at")
    )
    latest = dossiers[-1].data if dossiers else {}
    readings = lesion_readings(patient=patient)
    return _laid_out(
        patient,
        latest,
        readings,
        mdt=_mdt(dossiers),
        labs=_labs(dossiers),
    )


def case_timeline(*, patient: Patient, case: Mapping[str, Any]) -> PatientTimeline | None:
    """The timeline one frozen case file holds (its treatments and lesion measurements), for
    a report that must not change when the patient's records do; None without serial
    measurements."""
    try:
        readings = lesions_from_case(case)
    except LesionInputError:
        return None
    if len(assessment_dates(readings)) < 2:
        return None
    return _laid_out(patient, case, readings, mdt=[], labs=[])


def _laid_out(
    patient: Patient,
    case: Mapping[str, Any],
    readings: Sequence[Any],
    *,
    mdt: list[Event],
    labs: list[LabSeries],
) -> PatientTimeline:
    dated = [r for r in readings if r.first_date is not None]
    assessment = assess(dated, response_criteria(case, dated)) if dated else None
    events = [*_treatments(case), *_imaging(assessment, dated), *mdt]
    events.sort(key=lambda e: (e.start, e.lane))
    timeline = PatientTimeline(
        patient=patient, start=None, end=None, labs=labs, response=assessment
    )
    dates = [e.start for e in events] + [e.end for e in events if e.end]
    dates += [d for series in timeline.labs for d, _ in series.points]
    if dates:
        start, end = min(dates), max(dates)
        if any(e.ongoing for e in events):
            end = max(end, timezone.localdate())
        if end <= start:
            end = start + timedelta(days=1)
        span = (end - start).days
        placed = [_placed(e, start, span) for e in events]
        timeline.start, timeline.end = start, end
        timeline.events = placed
        timeline.lanes = [
            (key, label, [e for e in placed if e.lane == key]) for key, label in LANES
        ]
        timeline.ticks = _ticks(start, end)
    return timeline


def _placed(event: Event, start: date, span: int) -> Event:
    left = (event.start - start).days / span * 100
    finish = event.end or (timezone.localdate() if event.ongoing else None)
    width = ((finish - event.start).days / span * 100) if finish else 0.0
    return Event(
        lane=event.lane,
        start=event.start,
        end=event.end,
        ongoing=event.ongoing,
        title=event.title,
        detail=event.detail,
        category=event.category,
        left_pct=round(min(max(left, 0.0), 100.0), 2),
        width_pct=round(min(max(width, 0.0), 100.0 - left), 2),
    )


def _ticks(start: date, end: date) -> list[tuple[float, str]]:
    """Axis labels at the first of each month (every few months on a long course)."""
    span = (end - start).days
    months: list[date] = []
    cursor = date(start.year, start.month, 1)
    while cursor <= end:
        if cursor >= start:
            months.append(cursor)
        cursor = date(cursor.year + cursor.month // 12, cursor.month % 12 + 1, 1)
    step = max(1, len(months) // 8)
    return [(round((m - start).days / span * 100, 2), m.strftime("%b %Y")) for m in months[::step]]


def trend_svg(
    points: Sequence[tuple[date, float]], *, label: str, unit: str, width: int = 240
) -> SafeString:
    """A small line chart of one laboratory value, as inline SVG with a text alternative."""
    height, pad = 64, 8
    values = [v for _, v in points]
    low, high = min(values), max(values)
    if high == low:
        low, high = low - 1, high + 1
    first, last = points[0][0], points[-1][0]
    days = max((last - first).days, 1)

    def x(when: date) -> float:
        if len(points) == 1:
            return width / 2
        return pad + (when - first).days / days * (width - 2 * pad)

    def y(value: float) -> float:
        return height - pad - (value - low) / (high - low) * (height - 2 * pad)

    coords = " ".join(f"{x(d):.1f},{y(v):.1f}" for d, v in points)
    summary = "; ".join(f"{d.isoformat()}: {v:g} {unit}" for d, v in points)
    dots = "".join(
        f'<circle cx="{x(d):.1f}" cy="{y(v):.1f}" r="3"><title>{escape(d.isoformat())}: '
        f"{v:g} {escape(unit)}</title></circle>"
        for d, v in points
    )
    line = f'<polyline points="{coords}" fill="none" stroke="currentColor" stroke-width="1.5"/>'
    return mark_safe(  # noqa: S308 - every text inside is escaped above
        f'<svg class="trend" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)} ({escape(unit)}): {escape(summary)}">'
        f"{line if len(points) > 1 else ''}{dots}</svg>"
    )
