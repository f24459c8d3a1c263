"""Response to treatment computed from serial lesion measurements: RECIST 1.1, mRECIST, iRECIST
and Lugano (Deauville), each time point with the arithmetic that produced it.

The lesions come from a case file's ``lesions[]`` (FORMAT.md §4); a file without it has one
lesion, its ``index_lesion``, measured once, and so no response. Every category is computed,
never typed: a time point whose inputs are incomplete is ``NE`` (not evaluable), not a guess.

Sources (paraphrased):
- RECIST 1.1: Eisenhauer EA et al., New response evaluation criteria in solid tumours: revised
  RECIST guideline (version 1.1). Eur J Cancer 2009;45:228-247, §3 (measurability, nodes by
  short axis), §4.3 (target, non-target and new lesions), §4.4 Table 1 (time point response).
- mRECIST: Lencioni R, Llovet JM. Modified RECIST (mRECIST) assessment for hepatocellular
  carcinoma. Semin Liver Dis 2010;30:52-60 (diameters of the viable, arterially enhancing
  tumour; progression = 20 % over the nadir of the viable sum).
- iRECIST: Seymour L et al., iRECIST: guidelines for response criteria for use in trials testing
  immunotherapeutics. Lancet Oncol 2017;18:e143-e152 (RECIST progression is unconfirmed, iUPD,
  and confirmed, iCPD, at the next assessment by a further increase of >= 5 mm in the target
  or new-lesion sum or another new lesion; otherwise the bar resets).
- Lugano: Cheson BD et al., Recommendations for initial evaluation, staging, and response
  assessment of Hodgkin and non-Hodgkin lymphoma: the Lugano classification. J Clin Oncol
  2014;32:3059-3068, Table 3 (PET-CT based response with the Deauville five-point scale).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, Final

from clinical.lexicon import classes_of, mentions
from clinical.results import CalcResult, FactValue
from clinical.vocab import ResponseAnchor

RECIST_SOURCE: Final = (
    "RECIST 1.1 (Eisenhauer et al., Eur J Cancer 2009;45:228-247, §4.3-4.4 Table 1): sum of "
    "the longest diameters of target lesions (short axis for nodes); PR = a fall of >= 30 % "
    "from the baseline sum; PD = a rise of >= 20 % over the smallest sum so far (nadir) that "
    "is also >= 5 mm, or any new lesion; CR = every target lesion gone and every target node "
    "under 10 mm short axis, non-target lesions gone, no new lesion."
)
MRECIST_SOURCE: Final = (
    "mRECIST for HCC (Lencioni & Llovet, Semin Liver Dis 2010;30:52-60): as RECIST but on the "
    "longest diameter of the viable (arterially enhancing) tumour; CR = no enhancing tumour in "
    "any target lesion; PR = a fall of >= 30 % from the baseline viable sum; PD = a rise of "
    ">= 20 % over the nadir of the viable sum, or a new lesion."
)
IRECIST_SOURCE: Final = (
    "iRECIST (Seymour et al., Lancet Oncol 2017;18:e143-e152): on immunotherapy, RECIST 1.1 "
    "progression is unconfirmed (iUPD) and is confirmed (iCPD) at the next assessment by a "
    "further rise of >= 5 mm in the target sum or in the sum of new lesions, or by another new "
    "lesion; if the next assessment shows no such growth and the RECIST categories are met "
    "again, the bar resets (pseudo-progression)."
)
LUGANO_SOURCE: Final = (
    "Lugano classification (Cheson et al., J Clin Oncol 2014;32:3059-3068, Table 3), PET-CT: "
    "Deauville 1-3 = complete metabolic response (CMR); 4-5 with uptake reduced from baseline "
    "= partial metabolic response (PMR: responding disease at interim, residual disease at the "
    "end of treatment); 4-5 unchanged = no metabolic response (NMR); 4-5 with increased uptake "
    "or a new FDG-avid lesion = progressive metabolic disease (PMD)."
)

LESION_KINDS: Final = ("primary", "nodal", "metastasis")
MODALITIES: Final = ("CT", "MRI", "PET-CT")
SIZE_FIELDS: Final = ("longest_diameter_mm", "short_axis_mm", "viable_enhancing_mm")
MEASUREMENT_FIELDS: Final = ("date", "modality", *SIZE_FIELDS, "deauville")
LESION_FIELDS: Final = (
    "lesion_id",
    "site",
    "kind",
    "target",
    "is_index",
    "laterality",
    "description",
    "measurements",
)
LATERALITIES: Final = ("left", "right", "bilateral")
MAX_LESIONS: Final = 50
MAX_MEASUREMENTS: Final = 60
MAX_SIZE_MM: Final = 500.0
NODE_NORMAL_SHORT_AXIS_MM: Final = 10.0  # RECIST 1.1 §4.3.1: a node < 10 mm is normal
PD_RELATIVE: Final = 0.20
PD_ABSOLUTE_MM: Final = 5.0
PR_RELATIVE: Final = 0.30
ICPD_FURTHER_MM: Final = 5.0

# "longest_diameter_cm", "short_axis_in": a size written in a unit the format does not use.
_SIZE_WITH_UNIT = re.compile(r"^(longest_diameter|short_axis|viable_enhancing)_([a-z]+)$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

CR, PR, SD, PD, NE = "CR", "PR", "SD", "PD", "NE"
IUPD, ICPD = "iUPD", "iCPD"
CMR, PMR, NMR, PMD = "CMR", "PMR", "NMR", "PMD"

# How a clinician reads each category, for pages and the plan's summary.
CATEGORY_LABELS: Final[dict[str, str]] = {
    CR: "complete response",
    PR: "partial response",
    SD: "stable disease",
    PD: "progressive disease",
    NE: "not evaluable",
    IUPD: "unconfirmed progression (iUPD)",
    ICPD: "confirmed progression (iCPD)",
    CMR: "complete metabolic response",
    PMR: "partial metabolic response",
    NMR: "no metabolic response",
    PMD: "progressive metabolic disease",
}
PROGRESSION_CATEGORIES: Final = frozenset({PD, ICPD, PMD})


class LesionInputError(ValueError):
    """A lesion or measurement that cannot be read; ``path`` is its JSON path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True)
class Measurement:
    date: date | None
    modality: str | None = None
    longest_diameter_mm: float | None = None
    short_axis_mm: float | None = None
    viable_enhancing_mm: float | None = None
    deauville: int | None = None


@dataclass(frozen=True)
class Lesion:
    lesion_id: str
    site: str | None
    kind: str | None
    target: bool
    is_index: bool = False
    laterality: str | None = None
    measurements: tuple[Measurement, ...] = ()

    @property
    def nodal(self) -> bool:
        return self.kind == "nodal"

    @property
    def enhancing(self) -> bool:
        """Measured for viable enhancing tumour (mRECIST); other lesions of an HCC case are
        read by RECIST 1.1 sizes, as Lencioni & Llovet 2010 advise."""
        return any(m.viable_enhancing_mm is not None for m in self.measurements)

    @property
    def first_date(self) -> date | None:
        dated = [m.date for m in self.measurements if m.date is not None]
        return min(dated) if dated else None

    def at(self, when: date) -> Measurement | None:
        for measurement in self.measurements:
            if measurement.date == when:
                return measurement
        return None

    def size_mm(self, when: date, *, viable: bool = False) -> float | None:
        """The RECIST size at a date: short axis for a node, the viable diameter for mRECIST,
        otherwise the longest diameter; None when not measured."""
        measurement = self.at(when)
        if measurement is None:
            return None
        if viable and self.enhancing:
            return measurement.viable_enhancing_mm
        if self.nodal:
            return measurement.short_axis_mm
        return measurement.longest_diameter_mm


# ---------------------------------------------------------------------------------------------
# Reading lesions from a case file


def _parse_date(raw: object, path: str) -> date:
    if not isinstance(raw, str) or not _ISO_DATE.match(raw.strip()):
        raise LesionInputError(path, f"{raw!r} is not a date written as YYYY-MM-DD")
    try:
        return date.fromisoformat(raw.strip())
    except ValueError:
        raise LesionInputError(path, f"{raw!r} is not a calendar date") from None


def _parse_size(raw: object, path: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise LesionInputError(path, f"{raw!r} is not a number of millimetres")
    value = float(raw)
    if not 0 <= value <= MAX_SIZE_MM:
        raise LesionInputError(
            path, f"{raw!r} mm is outside 0-{MAX_SIZE_MM:g} mm (0 = the lesion has gone)"
        )
    return value


def _parse_deauville(raw: object, path: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw != int(raw):
        raise LesionInputError(path, f"{raw!r} is not a Deauville score (a whole number 1-5)")
    if not 1 <= int(raw) <= 5:
        raise LesionInputError(
            path, f"Deauville score {raw!r} is outside the five-point scale (1-5)"
        )
    return int(raw)


def _parse_measurement(raw: object, path: str, units: set[str]) -> Measurement:
    if not isinstance(raw, Mapping):
        raise LesionInputError(path, "a measurement must be an object with a date")
    for key in raw:
        match = _SIZE_WITH_UNIT.match(str(key))
        if match and match.group(2) != "mm":
            units.add(match.group(2))
        elif key not in MEASUREMENT_FIELDS:
            raise LesionInputError(f"{path}.{key}", "is not a measurement field")
    if units:
        unit = sorted(units)[0]
        raise LesionInputError(
            path,
            f"sizes are given in {unit}; the format records every size in millimetres "
            f"(longest_diameter_mm, short_axis_mm, viable_enhancing_mm)",
        )
    modality = raw.get("modality")
    if modality is not None and modality not in MODALITIES:
        raise LesionInputError(
            f"{path}.modality", f"{modality!r} is not one of {', '.join(MODALITIES)}"
        )
    deauville = _parse_deauville(raw.get("deauville"), f"{path}.deauville")
    if deauville is not None and modality not in (None, "PET-CT"):
        raise LesionInputError(
            f"{path}.deauville", f"a Deauville score is read on PET-CT, not on {modality}"
        )
    return Measurement(
        date=_parse_date(raw.get("date"), f"{path}.date"),
        modality=modality,
        longest_diameter_mm=_parse_size(
            raw.get("longest_diameter_mm"), f"{path}.longest_diameter_mm"
        ),
        short_axis_mm=_parse_size(raw.get("short_axis_mm"), f"{path}.short_axis_mm"),
        viable_enhancing_mm=_parse_size(
            raw.get("viable_enhancing_mm"), f"{path}.viable_enhancing_mm"
        ),
        deauville=deauville,
    )


def _parse_lesion(raw: object, path: str) -> Lesion:
    if not isinstance(raw, Mapping):
        raise LesionInputError(path, "a lesion must be an object")
    for key in raw:
        if key not in LESION_FIELDS:
            raise LesionInputError(f"{path}.{key}", "is not a lesion field")
    lesion_id = raw.get("lesion_id")
    if not isinstance(lesion_id, str) or not lesion_id.strip() or len(lesion_id) > 40:
        raise LesionInputError(f"{path}.lesion_id", "every lesion needs a short id, e.g. 'L1'")
    site = raw.get("site")
    if site is not None and not isinstance(site, str):
        raise LesionInputError(f"{path}.site", f"{site!r} is not text")
    kind = raw.get("kind")
    if kind is not None and kind not in LESION_KINDS:
        raise LesionInputError(f"{path}.kind", f"{kind!r} is not one of {', '.join(LESION_KINDS)}")
    laterality = raw.get("laterality")
    if laterality is not None and laterality not in LATERALITIES:
        raise LesionInputError(
            f"{path}.laterality", f"{laterality!r} is not one of {', '.join(LATERALITIES)}"
        )
    for flag in ("target", "is_index"):
        if raw.get(flag) is not None and not isinstance(raw.get(flag), bool):
            raise LesionInputError(f"{path}.{flag}", f"{raw.get(flag)!r} is not true/false")
    measurements_raw = raw.get("measurements") or []
    if not isinstance(measurements_raw, list):
        raise LesionInputError(f"{path}.measurements", "must be a list of measurements")
    if len(measurements_raw) > MAX_MEASUREMENTS:
        raise LesionInputError(
            f"{path}.measurements", f"more than {MAX_MEASUREMENTS} measurements of one lesion"
        )
    units: set[str] = set()
    try:
        measurements = [
            _parse_measurement(m, f"{path}.measurements[{i}]", units)
            for i, m in enumerate(measurements_raw)
        ]
    except LesionInputError as error:
        raise LesionInputError(error.path, f"lesion {lesion_id}: {error.message}") from None
    seen: dict[date, int] = {}
    for i, m in enumerate(measurements):
        if m.date is not None and m.date in seen:
            raise LesionInputError(
                f"{path}.measurements[{i}].date",
                f"lesion {lesion_id} is measured twice on {m.date.isoformat()} "
                f"(measurements[{seen[m.date]}] too); keep one reading per date",
            )
        if m.date is not None:
            seen[m.date] = i
    ordered = tuple(sorted(measurements, key=lambda m: m.date or date.min))
    return Lesion(
        lesion_id=lesion_id.strip(),
        site=site.strip() if isinstance(site, str) and site.strip() else None,
        kind=kind,
        target=raw.get("target") is True,
        is_index=raw.get("is_index") is True,
        laterality=laterality,
        measurements=ordered,
    )


def lesions_from_case(case: Mapping[str, Any]) -> list[Lesion]:
    """The lesions of a case file, raising ``LesionInputError`` at the first unreadable one.

    A file without ``lesions[]`` has one lesion, its ``index_lesion``, measured once on an
    unknown date (FORMAT.md §4: old files import as one lesion).
    """
    raw = case.get("lesions")
    if raw is None:
        return _legacy_lesion(case)
    if not isinstance(raw, list):
        raise LesionInputError("$.lesions", "must be a list of lesions")
    if len(raw) > MAX_LESIONS:
        raise LesionInputError("$.lesions", f"more than {MAX_LESIONS} lesions")
    lesions = [_parse_lesion(item, f"$.lesions[{i}]") for i, item in enumerate(raw)]
    if not any(isinstance(item, Mapping) and item.get("target") is not None for item in raw):
        # No lesion says whether it is a target: every lesion measured at the first scan is
        # followed as one (a file listing lesions means them to be measured), so growth is
        # not hidden as "non-target, still present".
        first = min((m.date for x in lesions for m in x.measurements if m.date), default=None)
        lesions = [
            replace(x, target=True) if first is not None and x.at(first) is not None else x
            for x in lesions
        ]
    ids: dict[str, int] = {}
    for i, lesion in enumerate(lesions):
        if lesion.lesion_id in ids:
            raise LesionInputError(
                f"$.lesions[{i}].lesion_id",
                f"lesion id {lesion.lesion_id!r} is used twice "
                f"(also $.lesions[{ids[lesion.lesion_id]}])",
            )
        ids[lesion.lesion_id] = i
    if sum(1 for lesion in lesions if lesion.is_index) > 1:
        raise LesionInputError("$.lesions", "more than one lesion is marked is_index")
    diagnosed = _diagnosis_date(case)
    if diagnosed is not None:
        for i, lesion in enumerate(lesions):
            for j, m in enumerate(lesion.measurements):
                if m.date is not None and m.date < diagnosed:
                    raise LesionInputError(
                        f"$.lesions[{i}].measurements[{j}].date",
                        f"lesion {lesion.lesion_id} is measured on {m.date.isoformat()}, "
                        f"before the diagnosis date {diagnosed.isoformat()}",
                    )
    return lesions


def _diagnosis_date(case: Mapping[str, Any]) -> date | None:
    diagnosis = case.get("diagnosis")
    raw = diagnosis.get("date") if isinstance(diagnosis, Mapping) else None
    if not isinstance(raw, str) or not _ISO_DATE.match(raw):
        return None  # absent, or badly written: the case-file checks report the latter
    try:
        return date.fromisoformat(raw)
    except ValueError:
        return None


def _legacy_lesion(case: Mapping[str, Any]) -> list[Lesion]:
    index = case.get("index_lesion")
    if not isinstance(index, Mapping):
        return []
    size = index.get("size_mm")
    size_mm = float(size) if isinstance(size, int | float) and not isinstance(size, bool) else None
    site = index.get("site") if isinstance(index.get("site"), str) else None
    laterality = index.get("laterality") if index.get("laterality") in LATERALITIES else None
    return [
        Lesion(
            lesion_id="L1",
            site=site,
            kind=None,
            target=size_mm is not None,
            is_index=True,
            laterality=laterality,
            measurements=(Measurement(date=None, longest_diameter_mm=size_mm),)
            if size_mm is not None
            else (),
        )
    ]


def index_lesion(lesions: Sequence[Lesion]) -> Lesion | None:
    """The lesion the dossier asks about: the one marked ``is_index``, else the first target."""
    for lesion in lesions:
        if lesion.is_index:
            return lesion
    for lesion in lesions:
        if lesion.target:
            return lesion
    return lesions[0] if lesions else None


def assessment_dates(lesions: Sequence[Lesion]) -> list[date]:
    return sorted({m.date for lesion in lesions for m in lesion.measurements if m.date})


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class TimePoint:
    """The response at one assessment, with every number it came from."""

    date: date
    category: str
    sum_mm: float | None = None
    baseline_sum_mm: float | None = None
    nadir_mm: float | None = None
    new_lesions: tuple[str, ...] = ()
    max_deauville: int | None = None
    arithmetic: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return CATEGORY_LABELS.get(self.category, self.category)


@dataclass(frozen=True)
class ResponseAssessment:
    criteria: str
    baseline_date: date
    baseline_sum_mm: float | None
    time_points: tuple[TimePoint, ...]
    source: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def latest(self) -> TimePoint:
        return self.time_points[-1]

    def to_plan(self) -> dict[str, object]:
        """The plan's ``response`` (FORMAT.md §4) at the latest assessment."""
        last = self.latest
        out: dict[str, object] = {
            "criteria": self.criteria,
            "date": last.date.isoformat(),
            "category": last.category,
            "sum_mm": _num(last.sum_mm),
            "baseline_sum_mm": _num(self.baseline_sum_mm),
            "nadir_mm": _num(last.nadir_mm),
            "new_lesions": list(last.new_lesions),
            "baseline_date": self.baseline_date.isoformat(),
            "arithmetic": list(last.arithmetic),
            "history": [
                {"date": tp.date.isoformat(), "category": tp.category, "sum_mm": _num(tp.sum_mm)}
                for tp in self.time_points
            ],
            "source": self.source,
        }
        if self.criteria == ResponseAnchor.LUGANO:
            out["max_deauville"] = last.max_deauville
        return out


def _num(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 1)


def _mm(value: float) -> str:
    return f"{_num(value)} mm"


def _pct(part: float, whole: float) -> str:
    if whole == 0:
        return "n/a"
    return f"{(part - whole) / whole * 100:+.0f} %"


# ---------------------------------------------------------------------------------------------
# RECIST 1.1 and mRECIST


@dataclass(frozen=True)
class _Status:
    category: str  # target-lesion response, or NE / None when no targets
    sum_mm: float | None
    nadir_mm: float | None
    nontarget: str  # "CR" | "non-CR/non-PD" | "NE" | "none"
    new_lesions: tuple[str, ...]
    overall: str
    lines: tuple[str, ...]


def _present(lesion: Lesion, when: date, *, viable: bool) -> bool | None:
    """Whether a lesion is still there at a date (None: not assessed)."""
    measurement = lesion.at(when)
    if measurement is None:
        return None
    size = lesion.size_mm(when, viable=viable)
    if size is None:
        # measured on this date without a size (e.g. PET only): present
        return True
    if lesion.nodal:
        return size >= NODE_NORMAL_SHORT_AXIS_MM
    return size > 0


def _recist_time_point(
    lesions: Sequence[Lesion],
    baseline: date,
    when: date,
    prior_sums: Sequence[float],
    *,
    viable: bool,
    absolute_mm: float | None,
    new_present_only: bool,
) -> _Status:
    targets = _baseline_targets(lesions, baseline, viable=viable)
    nontargets = [lesion for lesion in lesions if lesion.at(baseline) and lesion not in targets]
    new = tuple(
        lesion.lesion_id
        for lesion in lesions
        if lesion.first_date is not None
        and baseline < lesion.first_date <= when
        and (not new_present_only or _present(lesion, when, viable=False))
    )
    lines: list[str] = []
    sizes = [(lesion, lesion.size_mm(when, viable=viable)) for lesion in targets]
    missing = [lesion.lesion_id for lesion, size in sizes if size is None]
    baseline_sum = sum(lesion.size_mm(baseline, viable=viable) or 0.0 for lesion in targets)
    nadir = min([baseline_sum, *prior_sums]) if targets else None
    total: float | None = None
    target_category = "none"
    if targets:
        known = sum(size for _, size in sizes if size is not None)
        terms = " + ".join(
            f"{lesion.lesion_id} {_mm(size) if size is not None else '?'}" for lesion, size in sizes
        )
        if missing:
            lines.append(
                f"sum of target lesions = {terms}: {', '.join(missing)} not measured on "
                f"{when.isoformat()}"
            )
        else:
            total = known
            lines.append(f"sum of target lesions = {terms} = {_mm(total)}")
        nadir = baseline_sum if nadir is None else nadir
        partial_pd = _is_pd(known, nadir, absolute_mm)
        if total is None:
            target_category = PD if partial_pd else NE
            if partial_pd:
                lines.append(
                    f"the measured lesions alone reach progression: {_mm(known)} vs nadir "
                    f"{_mm(nadir)}"
                )
        else:
            lines.append(
                f"vs baseline {_mm(baseline_sum)}: {_pct(total, baseline_sum)}; vs nadir "
                f"{_mm(nadir)}: {_pct(total, nadir)} ({total - nadir:+g} mm)"
            )
            if _is_pd(total, nadir, absolute_mm):
                target_category = PD
                rule = f">= +{PD_RELATIVE:.0%} over the nadir"
                if absolute_mm is not None:
                    rule += f" and >= +{absolute_mm:g} mm"
                lines.append(f"progression: {rule}")
            elif _all_gone(targets, when, viable=viable):
                target_category = CR
                lines.append(
                    "every target lesion has gone"
                    + (" (nodes < 10 mm short axis)" if any(t.nodal for t in targets) else "")
                )
            elif total <= baseline_sum * (1 - PR_RELATIVE):
                target_category = PR
                lines.append(f"partial response: a fall of >= {PR_RELATIVE:.0%} from baseline")
            else:
                target_category = SD
                if absolute_mm is not None and total >= nadir * (1 + PD_RELATIVE):
                    lines.append(
                        f"+{PD_RELATIVE:.0%} over the nadir but only {total - nadir:+g} mm "
                        f"(< {absolute_mm:g} mm): not progression"
                    )
                lines.append("neither a 30 % fall from baseline nor progression: stable")
    # Non-target lesions: gone, still there, or not assessed on this date.
    nontarget = "none"
    if nontargets:
        states = [_present(lesion, when, viable=viable) for lesion in nontargets]
        if any(state is None for state in states):
            nontarget = NE
            lines.append("non-target lesions: not all assessed on this date")
        elif any(states):
            nontarget = "non-CR/non-PD"
            lines.append(
                "non-target lesions: still present (unequivocal progression of a non-target "
                "lesion is a radiologist's judgement and is not inferred from sizes)"
            )
        else:
            nontarget = CR
            lines.append("non-target lesions: all gone")
    if new:
        lines.append(f"new lesion(s): {', '.join(new)} -> progression")
    overall = _overall(target_category, nontarget, bool(new))
    return _Status(target_category, total, nadir, nontarget, new, overall, tuple(lines))


def _is_pd(total: float, nadir: float, absolute_mm: float | None) -> bool:
    grew = total >= nadir * (1 + PD_RELATIVE) and total > nadir
    if absolute_mm is not None:
        grew = grew and total - nadir >= absolute_mm
    return grew


def _all_gone(targets: Sequence[Lesion], when: date, *, viable: bool) -> bool:
    for lesion in targets:
        size = lesion.size_mm(when, viable=viable)
        if size is None:
            return False
        if viable:
            if size > 0:
                return False
        elif lesion.nodal:
            if size >= NODE_NORMAL_SHORT_AXIS_MM:
                return False
        elif size > 0:
            return False
    return True


def _overall(target: str, nontarget: str, new: bool) -> str:
    """RECIST 1.1 Table 1 (targets) and Table 2 (non-target only)."""
    if new or target == PD:
        return PD
    if target == "none":
        # Table 2: non-target disease only; "non-CR/non-PD" is reported as stable here.
        if nontarget == CR:
            return CR
        if nontarget == "non-CR/non-PD":
            return SD
        return NE
    if target == NE:
        return NE
    if target == CR:
        return CR if nontarget in (CR, "none") else PR
    return target  # PR or SD, whatever the non-targets (non-PD or NE)


def _recist_family(
    lesions: Sequence[Lesion],
    dates: Sequence[date],
    *,
    criteria: str,
    viable: bool,
    absolute_mm: float | None,
) -> tuple[list[TimePoint], float | None]:
    baseline = dates[0]
    prior: list[float] = []
    out: list[TimePoint] = []
    progressed_on: date | None = None
    baseline_sum: float | None = None
    for when in dates[1:]:
        status = _recist_time_point(
            lesions,
            baseline,
            when,
            prior,
            viable=viable,
            absolute_mm=absolute_mm,
            new_present_only=False,
        )
        baseline_sum = _baseline_sum(lesions, baseline, viable=viable)
        category = status.overall
        lines = list(status.lines)
        if progressed_on is not None and category != PD:
            lines.append(
                f"{criteria}: progression was recorded on {progressed_on.isoformat()}; it "
                "stays the outcome of this line of treatment"
            )
            category = PD
        if category == PD and progressed_on is None:
            progressed_on = when
        out.append(
            TimePoint(
                date=when,
                category=category,
                sum_mm=status.sum_mm,
                baseline_sum_mm=baseline_sum,
                nadir_mm=status.nadir_mm,
                new_lesions=status.new_lesions,
                arithmetic=tuple(lines),
            )
        )
        if status.sum_mm is not None:
            prior.append(status.sum_mm)
    return out, baseline_sum


def _baseline_targets(lesions: Sequence[Lesion], baseline: date, *, viable: bool) -> list[Lesion]:
    """Target lesions with a size at baseline (a target measured only later is a new lesion;
    one without a baseline size is followed as non-target)."""
    return [
        lesion
        for lesion in lesions
        if lesion.target and lesion.size_mm(baseline, viable=viable) is not None
    ]


def _baseline_sum(lesions: Sequence[Lesion], baseline: date, *, viable: bool) -> float | None:
    targets = _baseline_targets(lesions, baseline, viable=viable)
    if not targets:
        return None
    return sum(lesion.size_mm(baseline, viable=viable) or 0.0 for lesion in targets)


def recist(lesions: Sequence[Lesion]) -> ResponseAssessment | None:
    """RECIST 1.1 at every assessment after the baseline (the earliest date)."""
    return _assess(lesions, ResponseAnchor.RECIST)


def mrecist(lesions: Sequence[Lesion]) -> ResponseAssessment | None:
    """mRECIST (viable enhancing tumour) for hepatocellular carcinoma."""
    return _assess(lesions, ResponseAnchor.MRECIST)


def irecist(lesions: Sequence[Lesion]) -> ResponseAssessment | None:
    """iRECIST: RECIST 1.1 with progression confirmed at the next assessment."""
    return _assess(lesions, ResponseAnchor.IRECIST)


def lugano(lesions: Sequence[Lesion]) -> ResponseAssessment | None:
    """Lugano 2014 PET-CT response with the Deauville five-point scale."""
    return _assess(lesions, ResponseAnchor.LUGANO)


def assess(lesions: Sequence[Lesion], criteria: ResponseAnchor) -> ResponseAssessment | None:
    """The response by the given criteria at every assessment after the baseline (None with
    fewer than two dates)."""
    return _assess(lesions, criteria)


def _assess(lesions: Sequence[Lesion], criteria: ResponseAnchor) -> ResponseAssessment | None:
    dates = assessment_dates(lesions)
    if len(dates) < 2:
        return None
    baseline = dates[0]
    notes: list[str] = []
    if criteria == ResponseAnchor.LUGANO:
        points = _lugano_points(lesions, dates)
        return ResponseAssessment(
            criteria=str(criteria),
            baseline_date=baseline,
            baseline_sum_mm=None,
            time_points=tuple(points),
            source=LUGANO_SOURCE,
        )
    viable = criteria == ResponseAnchor.MRECIST
    if not _baseline_targets(lesions, baseline, viable=viable):
        notes.append(
            "no target lesion was measured at baseline: response from non-target "
            "and new lesions only"
        )
    if criteria == ResponseAnchor.IRECIST:
        points = _irecist_points(lesions, dates)
        source = IRECIST_SOURCE
    else:
        points, _ = _recist_family(
            lesions,
            dates,
            criteria=str(criteria),
            viable=viable,
            absolute_mm=None if viable else PD_ABSOLUTE_MM,
        )
        source = MRECIST_SOURCE if viable else RECIST_SOURCE
    return ResponseAssessment(
        criteria=str(criteria),
        baseline_date=baseline,
        baseline_sum_mm=_baseline_sum(lesions, baseline, viable=viable),
        time_points=tuple(points),
        source=source,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------------------------
# iRECIST


def _new_sum(lesions: Sequence[Lesion], ids: Sequence[str], when: date) -> float:
    by_id = {lesion.lesion_id: lesion for lesion in lesions}
    return sum(by_id[i].size_mm(when) or 0.0 for i in ids)


def _irecist_points(lesions: Sequence[Lesion], dates: Sequence[date]) -> list[TimePoint]:
    baseline = dates[0]
    prior: list[float] = []
    out: list[TimePoint] = []
    pending: tuple[date, float | None, frozenset[str], float] | None = None
    confirmed = False
    baseline_sum = _baseline_sum(lesions, baseline, viable=False)
    for when in dates[1:]:
        status = _recist_time_point(
            lesions,
            baseline,
            when,
            prior,
            viable=False,
            absolute_mm=PD_ABSOLUTE_MM,
            new_present_only=True,
        )
        lines = list(status.lines)
        new_sum = _new_sum(lesions, status.new_lesions, when)
        if confirmed:
            category = ICPD
            lines.append("progression was confirmed earlier (iCPD)")
        elif status.overall == PD and pending is None:
            category = IUPD
            pending = (when, status.sum_mm, frozenset(status.new_lesions), new_sum)
            lines.append(
                "RECIST 1.1 progression on immunotherapy = unconfirmed progression (iUPD); "
                "confirm at the next assessment (4-8 weeks)"
            )
        elif status.overall == PD and pending is not None:
            first, sum_then, new_then, new_sum_then = pending
            reasons: list[str] = []
            if status.sum_mm is not None and sum_then is not None:
                grew = status.sum_mm - sum_then
                if grew >= ICPD_FURTHER_MM:
                    reasons.append(
                        f"target sum {_mm(sum_then)} -> {_mm(status.sum_mm)} "
                        f"({grew:+g} mm, >= {ICPD_FURTHER_MM:g} mm)"
                    )
            extra = sorted(set(status.new_lesions) - new_then)
            if extra:
                reasons.append(f"another new lesion: {', '.join(extra)}")
            if new_then and new_sum - new_sum_then >= ICPD_FURTHER_MM:
                reasons.append(
                    f"new-lesion sum {_mm(new_sum_then)} -> {_mm(new_sum)} "
                    f"({new_sum - new_sum_then:+g} mm, >= {ICPD_FURTHER_MM:g} mm)"
                )
            if reasons:
                category = ICPD
                confirmed = True
                lines.append(f"iUPD of {first.isoformat()} confirmed (iCPD): " + "; ".join(reasons))
            else:
                category = IUPD
                lines.append(
                    f"still iUPD since {first.isoformat()}: no further growth of >= "
                    f"{ICPD_FURTHER_MM:g} mm and no other new lesion"
                )
        else:
            category = status.overall
            if pending is not None:
                lines.append(
                    f"iUPD of {pending[0].isoformat()} not confirmed: the disease no longer "
                    "meets progression, the bar resets (pseudo-progression)"
                )
                pending = None
        out.append(
            TimePoint(
                date=when,
                category=category,
                sum_mm=status.sum_mm,
                baseline_sum_mm=baseline_sum,
                nadir_mm=status.nadir_mm,
                new_lesions=status.new_lesions,
                arithmetic=tuple(lines),
            )
        )
        if status.sum_mm is not None:
            prior.append(status.sum_mm)
    return out


# ---------------------------------------------------------------------------------------------
# Lugano (PET-CT, Deauville)


def _lugano_points(lesions: Sequence[Lesion], dates: Sequence[date]) -> list[TimePoint]:
    baseline = dates[0]
    base_scores = {
        lesion.lesion_id: m.deauville
        for lesion in lesions
        if (m := lesion.at(baseline)) is not None and m.deauville is not None
    }
    base_max = max(base_scores.values(), default=None)
    out: list[TimePoint] = []
    for when in dates[1:]:
        scores = {
            lesion.lesion_id: m.deauville
            for lesion in lesions
            if (m := lesion.at(when)) is not None and m.deauville is not None
        }
        new = tuple(
            lesion.lesion_id
            for lesion in lesions
            if lesion.first_date is not None and baseline < lesion.first_date <= when
        )
        lines: list[str] = []
        if not scores:
            out.append(
                TimePoint(
                    date=when,
                    category=NE,
                    new_lesions=new,
                    arithmetic=("no Deauville score recorded on this date (no PET-CT)",),
                )
            )
            continue
        top = max(scores.values())
        lines.append(
            "Deauville: "
            + ", ".join(f"{k} {v}" for k, v in scores.items())
            + f" -> highest {top}"
            + (f" (baseline highest {base_max})" if base_max is not None else "")
        )
        avid_new = [i for i in new if (scores.get(i) or 0) >= 4]
        rising = [
            k
            for k, v in scores.items()
            if v >= 4 and k in base_scores and v > (base_scores[k] or 0)
        ]
        not_assessed = [k for k in base_scores if k not in scores]
        if avid_new:
            category = PMD
            lines.append(f"new FDG-avid lesion(s) {', '.join(avid_new)} -> PMD")
        elif rising:
            category = PMD
            lines.append(f"uptake increased from baseline in {', '.join(rising)} -> PMD")
        elif not_assessed and top <= 3:
            category = NE
            lines.append(
                f"{', '.join(not_assessed)} not scored on this date: a complete metabolic "
                "response cannot be declared"
            )
        elif top <= 3:
            category = CMR
            lines.append("Deauville 1-3 everywhere -> complete metabolic response")
        elif base_max is None:
            category = NE
            lines.append("no baseline Deauville score to compare uptake with")
        elif top < base_max:
            category = PMR
            lines.append(
                f"Deauville {top} < baseline {base_max}: uptake reduced -> partial metabolic "
                "response (responding disease at interim; residual disease at end of treatment)"
            )
        else:
            category = NMR
            lines.append(
                f"Deauville {top}, not lower than baseline {base_max}: no metabolic response "
                "(uptake compared by score only; SUVmax is not recorded)"
            )
        out.append(
            TimePoint(
                date=when,
                category=category,
                new_lesions=new,
                max_deauville=top,
                arithmetic=tuple(lines),
            )
        )
    return out


# ---------------------------------------------------------------------------------------------
# Choosing the criteria for a case


def on_immunotherapy(case: Mapping[str, Any], since: date | None) -> bool:
    """Whether a checkpoint inhibitor was given during the assessed period: a prior therapy
    naming one that had not ended before ``since`` (the baseline scan)."""
    diagnosis = case.get("diagnosis")
    therapies = diagnosis.get("prior_therapies") if isinstance(diagnosis, Mapping) else None
    if not isinstance(therapies, list):
        return False
    for therapy in therapies:
        if not isinstance(therapy, Mapping):
            continue
        regimen = therapy.get("regimen")
        if not isinstance(regimen, str):
            continue
        is_ici = any(
            "ici" in classes_of(drug) for mention in mentions(regimen) for drug in mention.drugs
        ) or any(mention.cls in {"ici", "anti_pd1", "anti_pdl1"} for mention in mentions(regimen))
        if not is_ici:
            continue
        end = therapy.get("end_date")
        if not isinstance(end, str) or not _ISO_DATE.match(end) or since is None:
            return True
        try:
            if date.fromisoformat(end) >= since:
                return True
        except ValueError:
            return True
    return False


def response_criteria(case: Mapping[str, Any], lesions: Sequence[Lesion]) -> ResponseAnchor:
    """Lugano for lymphoma scored on PET, mRECIST for HCC with viable-tumour diameters, iRECIST
    on immunotherapy, else RECIST 1.1."""
    cancer = case.get("cancer_type")
    measured = [m for lesion in lesions for m in lesion.measurements]
    if cancer == "lymphoma" and any(m.deauville is not None for m in measured):
        return ResponseAnchor.LUGANO
    if cancer == "hcc" and any(m.viable_enhancing_mm is not None for m in measured):
        return ResponseAnchor.MRECIST
    dates = assessment_dates(lesions)
    if on_immunotherapy(case, dates[0] if dates else None):
        return ResponseAnchor.IRECIST
    return ResponseAnchor.RECIST


def case_response(case: Mapping[str, Any]) -> ResponseAssessment | None:
    """The computed response of a case with serial measurements (None with fewer than two
    assessment dates, or lesions that cannot be read: the importer reports those)."""
    try:
        lesions = lesions_from_case(case)
    except LesionInputError:
        return None
    return _assess(lesions, response_criteria(case, lesions))


def oligoprogression(assessment: ResponseAssessment | None, lesions: Sequence[Lesion]) -> bool:
    """Progression confined to at most three lesions while the rest are controlled (ESMO/ESTRO
    consensus on oligoprogression, Guckenberger et al., Lancet Oncol 2020;21:e18-e28: up to
    three to five progressing sites). The conservative bound of three is used."""
    if assessment is None or assessment.latest.category not in PROGRESSION_CATEGORIES | {IUPD}:
        return False
    last = assessment.latest.date
    dates = [d for d in assessment_dates(lesions) if d < last]
    if not dates:
        return False
    previous = dates[-1]
    growing: set[str] = set(assessment.latest.new_lesions)
    for lesion in lesions:
        now, before = lesion.size_mm(last), lesion.size_mm(previous)
        if now is not None and before is not None and now - before >= PD_ABSOLUTE_MM:
            growing.add(lesion.lesion_id)
    return 0 < len(growing) <= 3


# ---------------------------------------------------------------------------------------------
# Derived facts (run by derive_all, so they are frozen with the others)


def _response_result(case: Mapping[str, Any], name: str) -> CalcResult:
    try:
        lesions = lesions_from_case(case)
    except LesionInputError as error:
        return CalcResult(name, None, {}, ["lesions"], RECIST_SOURCE, str(error))
    assessment = _assess(lesions, response_criteria(case, lesions))
    used: dict[str, object] = {
        "lesions": len(lesions),
        "assessment_dates": len(assessment_dates(lesions)),
    }
    if assessment is None:
        return CalcResult(
            name,
            None,
            used,
            ["lesions[].measurements (two or more dates)"],
            RECIST_SOURCE,
            "no serial measurements: response is not derivable",
        )
    last = assessment.latest
    value: FactValue
    if name == "response":
        value = last.category
    elif name == "response_criteria":
        value = assessment.criteria
    elif name == "new_lesions":
        value = list(last.new_lesions)
    elif name == "progression_on_imaging":
        value = last.category in PROGRESSION_CATEGORIES
    else:  # response_oligoprogression
        value = oligoprogression(assessment, lesions)
    return CalcResult(
        name,
        value,
        used,
        [],
        assessment.source,
        f"{assessment.criteria} on {last.date.isoformat()}: " + "; ".join(last.arithmetic),
    )


def response_category(case: Mapping[str, Any]) -> CalcResult:
    """The latest computed response category (CR, PR, SD, PD, iUPD, iCPD, CMR, PMR, NMR, PMD)."""
    return _response_result(case, "response")


def response_criteria_used(case: Mapping[str, Any]) -> CalcResult:
    return _response_result(case, "response_criteria")


def new_lesions(case: Mapping[str, Any]) -> CalcResult:
    """Lesions first seen after the baseline scan, at the latest assessment."""
    return _response_result(case, "new_lesions")


def progression_on_imaging(case: Mapping[str, Any]) -> CalcResult:
    """True when the latest computed response is progression (PD, iCPD, PMD); an unconfirmed
    progression on immunotherapy (iUPD) is not."""
    return _response_result(case, "progression_on_imaging")


def response_oligoprogression(case: Mapping[str, Any]) -> CalcResult:
    """Progression in at most three lesions while the others are controlled."""
    return _response_result(case, "response_oligoprogression")


def setting_disagreement(case: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """A recorded setting the serial measurements contradict, with the setting they show
    (None: no progression) and why: "progressive" recorded while the line being given still
    works, or "newly_diagnosed" recorded while the disease progresses after systemic therapy.
    The computed response wins; the plan says so."""
    diagnosis = case.get("diagnosis")
    typed = diagnosis.get("setting") if isinstance(diagnosis, Mapping) else None
    if typed == "progressive":
        found = continues_current_line(case)
        if found is not None:
            assessment, therapy = found
            return None, (
                f"recorded as progressive, but {assessment.criteria} on "
                f"{assessment.latest.date.isoformat()} reads {assessment.latest.label} on "
                f"{therapy.regimen}"
            )
    if typed == "newly_diagnosed" and progression_on_imaging(case).value is True:
        therapies = diagnosis.get("prior_therapies") if isinstance(diagnosis, Mapping) else None
        systemic = [
            t
            for t in therapies or []
            if isinstance(t, Mapping)
            and t.get("kind") not in _LOCAL_KINDS
            and isinstance(t.get("regimen"), str)
            and any(m.drugs for m in mentions(t["regimen"]))
        ]
        if systemic:
            return "progressive", "recorded as newly diagnosed, but the scans show progression"
    return None


def setting_from_imaging(case: Mapping[str, Any]) -> str | None:
    """The disease setting the serial measurements show, for a case that does not record one:
    "progressive" when the latest computed response is progression; "residual_after_neoadjuvant"
    when the scan after a completed neoadjuvant course still shows disease and an operation
    followed; otherwise None."""
    if progression_on_imaging(case).value is True:
        return "progressive"
    if residual_after_neoadjuvant(case) is True:
        return "residual_after_neoadjuvant"
    return None


def response_sentence(assessment: ResponseAssessment) -> str:
    """One sentence for the plan's summary: the latest computed response and its numbers."""
    last = assessment.latest
    parts = [f"Restaging on {last.date.isoformat()} ({assessment.criteria}): {last.label}"]
    numbers: list[str] = []
    if last.sum_mm is not None:
        numbers.append(f"target sum {_mm(last.sum_mm)}")
        if assessment.baseline_sum_mm is not None:
            numbers.append(f"baseline {_mm(assessment.baseline_sum_mm)}")
        if last.nadir_mm is not None:
            numbers.append(f"nadir {_mm(last.nadir_mm)}")
    if last.max_deauville is not None:
        numbers.append(f"highest Deauville score {last.max_deauville}")
    text = parts[0] + (f" ({', '.join(numbers)})" if numbers else "")
    if last.new_lesions:
        text += f"; new lesion(s) {', '.join(last.new_lesions)}"
    if last.category == IUPD:
        text += "; confirm or refute with imaging in 4-8 weeks before changing treatment"
    return text + "."


def response_monitoring(
    assessment: ResponseAssessment, lesions: Sequence[Lesion]
) -> dict[str, str]:
    """What to follow at the next restaging: the lesions by id and site, and the criteria."""
    last = assessment.latest
    targets = [
        lesion for lesion in lesions if lesion.target and lesion.lesion_id not in last.new_lesions
    ]
    others = [lesion for lesion in lesions if lesion not in targets]

    def named(group: Sequence[Lesion]) -> str:
        return ", ".join(
            lesion.lesion_id + (f" ({lesion.site})" if lesion.site else "") for lesion in group
        )

    what = f"Restaging against the {assessment.baseline_date.isoformat()} baseline"
    if targets:
        what += f": target lesions {named(targets)}"
    if others:
        what += f"{';' if targets else ':'} also follow {named(others)}"
    if assessment.criteria == ResponseAnchor.LUGANO:
        what += " — PET-CT with Deauville score"
    interval = "at each restaging"
    if last.category == IUPD:
        interval = "in 4-8 weeks to confirm progression (iRECIST)"
    elif assessment.criteria == ResponseAnchor.LUGANO and last.category in (PMR, NMR):
        interval = "end-of-treatment PET-CT; biopsy a persisting Deauville 4-5 site"
    return {"what": what, "interval": interval, "anchor": assessment.criteria}


# ---------------------------------------------------------------------------------------------
# The therapy the response is read on


@dataclass(frozen=True)
class OngoingTherapy:
    regimen: str
    start_date: str | None
    intent: str | None
    drugs: tuple[str, ...]


_THEN: Final = re.compile(r"[,;]?\s*\b(?:then|followed by)\b", re.IGNORECASE)
_LOCAL_KINDS: Final = frozenset({"operation", "radiotherapy", "locoregional", "transplant"})
# Response that keeps a line going: the disease is controlled, progression on a checkpoint
# inhibitor is not yet confirmed, an interim PET shows a metabolic response, or the scan could
# not be evaluated (no line is abandoned without progression being shown).
CONTROLLED: Final = frozenset({CR, PR, SD, IUPD, CMR, PMR, NE})


def _iso(value: object) -> date | None:
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def ongoing_therapy(case: Mapping[str, Any], when: date | None = None) -> OngoingTherapy | None:
    """The systemic therapy still being given (no end date, no stop reason, started on or
    before ``when``), the most recently started if several; None when none is recorded."""
    diagnosis = case.get("diagnosis")
    therapies = diagnosis.get("prior_therapies") if isinstance(diagnosis, Mapping) else None
    if not isinstance(therapies, list):
        return None
    found: list[OngoingTherapy] = []
    for therapy in therapies:
        if not isinstance(therapy, Mapping):
            continue
        regimen = therapy.get("regimen")
        if not isinstance(regimen, str) or not regimen.strip():
            continue
        if therapy.get("kind") in _LOCAL_KINDS or therapy.get("end_date") is not None:
            continue
        if therapy.get("stop_reason") is not None:
            continue
        # "carboplatin + pemetrexed + pembrolizumab x4, then pembrolizumab + pemetrexed
        # maintenance": what is being given now is the last phase
        current = _THEN.split(regimen)[-1].strip(" ,;.")
        drugs = tuple(sorted({d for m in mentions(current) for d in m.drugs}))
        if not drugs:
            current = regimen.strip()
            drugs = tuple(sorted({d for m in mentions(current) for d in m.drugs}))
        if not drugs:
            continue  # nothing systemic recognised: not a line to continue
        start = therapy.get("start_date")
        start_text = start if isinstance(start, str) and _ISO_DATE.match(start) else None
        started = _iso(start_text)
        if when is not None and started is not None and started > when:
            continue
        intent = therapy.get("intent")
        found.append(
            OngoingTherapy(current, start_text, intent if isinstance(intent, str) else None, drugs)
        )
    if not found:
        return None
    return max(enumerate(found), key=lambda pair: (pair[1].start_date or "", pair[0]))[1]


def continues_current_line(
    case: Mapping[str, Any],
) -> tuple[ResponseAssessment, OngoingTherapy] | None:
    """The computed response and the ongoing therapy when the response says to keep giving it:
    the disease is controlled (CR, PR, SD), progression on immunotherapy is unconfirmed (iUPD),
    or an interim PET shows a metabolic response (CMR, PMR). Neoadjuvant courses are left to
    their planned sequence (surgery follows)."""
    assessment = case_response(case)
    if assessment is None or assessment.latest.category not in CONTROLLED:
        return None
    therapy = ongoing_therapy(case, assessment.latest.date)
    if therapy is None or therapy.intent == "neoadjuvant":
        return None
    return assessment, therapy


_OPERATION: Final = re.compile(
    r"\b(?:then|followed by)\b.*\b(?:surgery|mastectomy|lumpectomy|resection|lobectomy|"
    r"hepatectomy|operation|breast-conserving)\b",
    re.IGNORECASE,
)


def residual_after_neoadjuvant(case: Mapping[str, Any]) -> bool | None:
    """Residual disease after a neoadjuvant course that an operation followed: the last scan
    since the course began is not a complete response (the specimen's pathology confirms it).
    None when the history or the measurements do not say."""
    assessment = case_response(case)
    if assessment is None:
        return None
    diagnosis = case.get("diagnosis")
    therapies = diagnosis.get("prior_therapies") if isinstance(diagnosis, Mapping) else None
    if not isinstance(therapies, list):
        return None
    courses = [
        t
        for t in therapies
        if isinstance(t, Mapping)
        and (
            t.get("intent") == "neoadjuvant"
            or (t.get("intent") is None and "neoadjuvant" in str(t.get("regimen") or "").lower())
        )
    ]
    if not courses:
        return None
    began = [d for t in courses if (d := _iso(t.get("start_date"))) is not None]
    ended = [d for t in courses if (d := _iso(t.get("end_date"))) is not None]
    since = max(ended or began) if (ended or began) else None
    operated = any(_OPERATION.search(str(t.get("regimen") or "")) for t in courses) or any(
        isinstance(t, Mapping)
        and t.get("kind") == "operation"
        and (
            since is None or ((d := _iso(t.get("start_date") or t.get("end_date"))) and d >= since)
        )
        for t in therapies
    )
    if not operated:
        return None
    start = min(began) if began else None
    last = assessment.latest
    if start is not None and last.date < start:
        return None
    return last.category not in (CR, CMR)


CONTINUE_SOURCE: Final = (
    "Restaging on treatment (RECIST 1.1 / mRECIST / iRECIST / Lugano): a line is continued while "
    "the disease is controlled (CR, PR, SD), while progression on a checkpoint inhibitor is "
    "unconfirmed (iUPD, Seymour et al. 2017) and after an interim metabolic response (CMR/PMR, "
    "Cheson et al. 2014); only a confirmed progression ends it."
)


def continues_current_line_fact(case: Mapping[str, Any]) -> CalcResult:
    """True when the computed response says the therapy being given goes on; False otherwise
    (never unknown: without serial measurements nothing says to continue)."""
    found = continues_current_line(case)
    if found is None:
        return CalcResult("continues_current_line", False, {}, [], CONTINUE_SOURCE)
    assessment, therapy = found
    return CalcResult(
        "continues_current_line",
        True,
        {"diagnosis.prior_therapies": therapy.regimen, "lesions": assessment.criteria},
        [],
        CONTINUE_SOURCE,
        f"{therapy.regimen}: {assessment.latest.label} on {assessment.latest.date.isoformat()}",
    )
