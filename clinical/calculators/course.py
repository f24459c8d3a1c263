"""The patient's course in time: the prior treatments read as a timeline, and what a tumour board
derives from it (issue 23).

Every prior treatment (``diagnosis.prior_therapies[]``) is read once as a :class:`Course`: its
kind (systemic, operation, radiotherapy, locoregional, transplant), its intent (neoadjuvant,
adjuvant, consolidation, maintenance, curative, palliative), its dates, its outcome and its
worst toxicity - the FORMAT.md §4 fields where recorded, else the regimen's own words ("adjuvant
cisplatin-vinorelbine", "durvalumab consolidation after chemoradiation", "right
hemihepatectomy"). Each fact below says in its ``detail`` which entries it was read from.

- ``line``: the line of palliative systemic therapy being planned (adjuvant, neoadjuvant,
  consolidation and maintenance courses are not metastatic lines; in lymphoma the first
  curative immunochemotherapy is the first line);
- ``months_since_last_treatment`` and ``months_since_platinum`` / ``_immunotherapy`` /
  ``_anti_cd20`` / ``_endocrine``;
- ``relapse_timing``: early or late by the threshold of the cancer;
- ``operations_done``: the operations on record, for every cancer;
- ``oligoprogression``: progression in a few sites while the current systemic therapy still
  controls the rest;
- ``rechallenge_barred``: drugs a severe prior toxicity rules out (a grade >= 3 immune-related
  adverse event bars every checkpoint inhibitor);
- ``days_since_bleeding``: how recent the last recorded bleeding is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any, Final

from clinical import lexicon
from clinical.calculators.patient import _LOCAL, _SYSTEMIC, early_relapse
from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import clause_at, negated_at

KINDS: Final = ("systemic", "operation", "radiotherapy", "locoregional", "transplant", "other")
INTENTS: Final = (
    "neoadjuvant",
    "adjuvant",
    "consolidation",
    "maintenance",
    "curative",
    "palliative",
)
# Solid tumours: a course given around an operation or radiotherapy with curative intent is not a
# line of therapy for metastatic disease (NCCN/ESMO line definitions: first-line therapy for
# advanced disease may follow adjuvant therapy).
_NOT_A_LINE_SOLID: Final = frozenset({"neoadjuvant", "adjuvant", "consolidation", "curative"})
# Lymphoma: the first curative immunochemotherapy is the first line; consolidation (ASCT,
# radiotherapy) and maintenance belong to the line they follow.
_NOT_A_LINE_LYMPHOMA: Final = frozenset({"consolidation"})

COURSE_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[] (FORMAT.md §4: kind, intent, start_date, end_date, "
    "stop_reason, toxicity; in older files the regimen's words: 'adjuvant', 'neoadjuvant', "
    "'perioperative', 'consolidation', 'maintenance', 'chemoradiation', an operation's name). "
    "Lines of therapy as NCCN and ESMO count them: only systemic therapy for advanced disease "
    "starts a line; adjuvant, neoadjuvant, consolidation and maintenance courses do not (in "
    "lymphoma the first curative immunochemotherapy is the first line, NCCN B-cell lymphomas "
    "2025, second-line therapy). Exception (lung): a relapse within 6 months of the end of "
    "(neo)adjuvant platinum chemotherapy counts that course as the first line - platinum-"
    "refractory disease (the convention of first-line NSCLC trials, e.g. IMpower150 excluded "
    "patients treated with adjuvant chemotherapy within 6 months; KEYNOTE-189 asked for 12)."
)

_WORD_INTENTS: Final = (
    ("neoadjuvant", re.compile(r"\bneo-?adjuvant\b|\bpre-?operative\b|\bperi-?operative\b", re.I)),
    ("adjuvant", re.compile(r"(?<!neo)(?<!neo-)\badjuvant\b|\bpost-?operative\b", re.I)),
    (
        "consolidation",
        re.compile(r"\bconsolidat\w*\b|\bpacific\b|\bautologous\b|\basct\b|\bauto-?sct\b", re.I),
    ),
    (
        "curative",
        re.compile(
            r"\bchemo-?radi\w*|\bconcurrent\b|\bdefinitive\b|\bcurative\b|\bradical\b", re.I
        ),
    ),
    ("palliative", re.compile(r"\bpalliative\b|\bmetastatic\b|\bfirst[-\s]line\b", re.I)),
)
_MAINTENANCE = re.compile(r"\bmaintenance\b", re.I)
# "X x4, then Y maintenance" is a whole line with its maintenance, not a maintenance course.
_SEQUENCE = re.compile(r"\bthen\b|\bfollowed\s+by\b|\bx\s*\d|\b\d+\s*cycles?\b", re.I)

# Operations by organ: tag -> words (the FORMAT §4 kind "operation" or the regimen's words).
OPERATIONS: Final[Mapping[str, re.Pattern[str]]] = {
    "liver_resection": re.compile(
        r"\bhepatectom\w*|\b(?:liver|hepatic)\s+resection|\bsectionectom\w*|\bbisegmentectom\w*"
        r"|\blobectomy\s+of\s+the\s+liver|\bliver\s+segmentectom\w*|\bsegmentectomy\s+(?:of\s+)?"
        r"(?:segment|s)\s*[ivx\d]",
        re.I,
    ),
    "liver_transplant": re.compile(
        r"\b(?:liver|hepatic|orthotopic)\s+transplant\w*|\bolt\b|\bldlt\b", re.I
    ),
    "lobectomy": re.compile(r"\b(?:bi)?lobectom\w*(?!\s+of\s+the\s+liver)", re.I),
    "pneumonectomy": re.compile(r"\bpneumonectom\w*", re.I),
    "sublobar_resection": re.compile(
        r"\bwedge\s+resection|\banatomic(?:al)?\s+segmentectomy|\blung\s+segmentectomy"
        r"|\bsublobar\b",
        re.I,
    ),
    "mastectomy": re.compile(r"(?<!partial\s)(?<!segmental\s)\bmastectom(?:y|ies)\b", re.I),
    "breast_conserving": re.compile(
        r"\bbreast[-\s]conserving\s+(?:surgery|therapy|operation)|\blumpectom\w*"
        r"|\bwide\s+local\s+excision|\bquadrantectom\w*|\b(?:partial|segmental)\s+mastectomy",
        re.I,
    ),
    "splenectomy": re.compile(r"\bsplenectom\w*", re.I),
    "gastrectomy": re.compile(r"\bgastrectom\w*", re.I),
    "orchiectomy": re.compile(r"\borch(?:i|id)ectom\w*", re.I),
    "metastasectomy": re.compile(r"\bmetastasectom\w*", re.I),
}
# Which cancer's primary operation each tag is (an operation done on the index organ).
PRIMARY_OPERATIONS: Final[Mapping[str, frozenset[str]]] = {
    "hcc": frozenset({"liver_resection"}),
    "lung_adenocarcinoma": frozenset({"lobectomy", "pneumonectomy", "sublobar_resection"}),
    "breast": frozenset({"mastectomy", "breast_conserving"}),
    "lymphoma": frozenset({"splenectomy", "gastrectomy", "orchiectomy"}),
}
_NOT_DONE = re.compile(
    r"\b(?:planned|plan|scheduled|proposed|propose|awaiting|await|candidate|recommend\w*"
    r"|consider\w*|declin\w*|refus\w*|prefer\w*|wish\w*|wants?|would|will|option|offered"
    r"|discuss\w*|feasible|possible|unless|if|eligible|listed|evaluat\w*|assess\w*)\b",
    re.I,
)

_DATE = re.compile(r"^(?:19|20)\d\d-\d\d-\d\d$")
DAYS_PER_MONTH: Final = 30.4375


@dataclass(frozen=True)
class Course:
    """One prior treatment, read."""

    index: int
    regimen: str
    kind: str
    kind_how: str  # "recorded" or "read from the regimen"
    intent: str | None
    intent_how: str
    line_field: int | None
    start: date | None
    end: date | None
    stop_reason: str | None
    best_response: str | None
    months_to_relapse: float | None
    toxicity_organ: str | None
    toxicity_grade: int | None
    drugs: frozenset[str]

    @property
    def label(self) -> str:
        return f"#{self.index + 1} {self.regimen or self.kind}"

    @property
    def classes(self) -> frozenset[str]:
        found: set[str] = set()
        for drug in self.drugs:
            found |= lexicon.classes_of(drug)
        return frozenset(found)


def _iso(value: object) -> date | None:
    if isinstance(value, str) and _DATE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _drugs(text: str) -> frozenset[str]:
    """The drugs a regimen gives (named or by its acronym), classes named alone spelled out
    ("checkpoint inhibitor")."""
    if not text:
        return frozenset()
    reading = lexicon.read(text)
    drugs = set(reading.drugs | reading.regimen_drugs)
    if not drugs:
        for cls in reading.classes:
            drugs |= lexicon.members(cls)
    return frozenset(drugs)


def _kind(entry: Mapping[str, Any], regimen: str) -> tuple[str, str]:
    raw = entry.get("kind")
    if isinstance(raw, str) and raw.strip().lower() in KINDS:
        return raw.strip().lower(), "recorded"
    if not regimen:
        return "systemic", "no kind or regimen recorded: counted as systemic (cautious)"
    if _SYSTEMIC.search(regimen) or not _LOCAL.search(regimen):
        return "systemic", "read from the regimen"
    lower = regimen.casefold()
    if re.search(r"transplant|\basct\b", lower):
        return "transplant", "read from the regimen"
    if re.search(r"radio|radiation|irradiation|\bgy\b|sbrt|sabr|stereotactic|brachy|isrt", lower):
        return "radiotherapy", "read from the regimen"
    if re.search(r"ablat|tace|tare|sirt|emboli|y-?90|rfa|mwa|microwave|cryo|percutaneous", lower):
        return "locoregional", "read from the regimen"
    return "operation", "read from the regimen"


def _intent(entry: Mapping[str, Any], regimen: str) -> tuple[str | None, str]:
    raw = entry.get("intent")
    if isinstance(raw, str) and raw.strip().lower() in INTENTS:
        return raw.strip().lower(), "recorded"
    if _MAINTENANCE.search(regimen) and not _SEQUENCE.search(regimen):
        return "maintenance", "read from the regimen ('maintenance')"
    for intent, pattern in _WORD_INTENTS:
        match = pattern.search(regimen)
        if match and not negated_at(regimen, match.start(), match.end()):
            return intent, f"read from the regimen ('{match.group(0)}')"
    return None, "not recorded"


def courses(case: Mapping[str, Any]) -> list[Course] | None:
    """Every prior treatment read, in the order listed; None when no history is recorded."""
    raw = lookup(case, "diagnosis.prior_therapies")
    if not isinstance(raw, list):
        return None
    found: list[Course] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, Mapping):
            continue
        regimen = entry.get("regimen")
        regimen = regimen.strip() if isinstance(regimen, str) else ""
        kind, kind_how = _kind(entry, regimen)
        intent, intent_how = _intent(entry, regimen)
        line = _number(entry.get("line"))
        toxicity = entry.get("toxicity")
        organ = grade = None
        if isinstance(toxicity, Mapping):
            organ = toxicity.get("organ") if isinstance(toxicity.get("organ"), str) else None
            value = _number(toxicity.get("grade"))
            grade = int(value) if value is not None else None
        stop = entry.get("stop_reason")
        response = entry.get("best_response")
        found.append(
            Course(
                index=index,
                regimen=regimen,
                kind=kind,
                kind_how=kind_how,
                intent=intent,
                intent_how=intent_how,
                line_field=int(line) if line is not None else None,
                start=_iso(entry.get("start_date")),
                end=_iso(entry.get("end_date")),
                stop_reason=stop.strip().lower() if isinstance(stop, str) else None,
                best_response=response.strip().upper() if isinstance(response, str) else None,
                months_to_relapse=_number(entry.get("months_to_relapse")),
                toxicity_organ=organ.strip().lower() if organ else None,
                toxicity_grade=grade,
                drugs=_drugs(regimen),
            )
        )
    return found


_NOT_NOW: Final = frozenset({"prior_therapies"})


def _dates(value: Any, skip_keys: frozenset[str], skip: bool = False) -> Iterator[date]:
    if isinstance(value, str):
        found = _iso(value)
        if found is not None and not skip:
            yield found
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _dates(inner, skip_keys, skip or key in skip_keys)
    elif isinstance(value, list):
        for inner in value:
            yield from _dates(inner, skip_keys, skip)


def assessment_date(
    case: Mapping[str, Any], *, skip_keys: frozenset[str] = _NOT_NOW
) -> tuple[date, str]:
    """The date the case describes ("now"): the newest date recorded outside the treatment
    history (a measurement, an endoscopy, a bleeding) and the keys skipped, else today."""
    today = date.today()  # noqa: DTZ011
    found = [d for d in _dates(dict(case), skip_keys) if d <= today]
    if found:
        return max(found), f"the newest date recorded in the case ({max(found).isoformat()})"
    return today, "today (no assessment date recorded)"


def _months(start: date, end: date) -> float:
    return round((end - start).days / DAYS_PER_MONTH, 1)


# --- line of therapy -----------------------------------------------------------------------------

PLATINUM_REFRACTORY_MONTHS: Final = 6


def _counts_as_line(course: Course, cancer: str, next_course: Course | None) -> tuple[bool, str]:
    if course.kind != "systemic":
        return False, f"{course.kind} ({course.kind_how})"
    if course.line_field == 0:
        return False, "recorded as line 0"
    not_a_line = _NOT_A_LINE_LYMPHOMA if cancer == "lymphoma" else _NOT_A_LINE_SOLID
    if course.intent == "maintenance":
        return False, f"maintenance ({course.intent_how}): part of the line it follows"
    if course.intent in not_a_line:
        if (
            cancer == "lung_adenocarcinoma"
            and course.intent in ("neoadjuvant", "adjuvant")
            and "platinum" in course.classes
            and course.months_to_relapse is not None
            and course.months_to_relapse < PLATINUM_REFRACTORY_MONTHS
            and next_course is None
        ):
            return True, (
                f"{course.intent} platinum with relapse {course.months_to_relapse:g} months "
                f"after it (< {PLATINUM_REFRACTORY_MONTHS}): counted as the first line"
            )
        return False, f"{course.intent} ({course.intent_how}): not a line for advanced disease"
    return True, "systemic" + (f", {course.intent}" if course.intent else "")


def palliative_line(case: Mapping[str, Any]) -> CalcResult:
    """The line of systemic therapy for advanced disease being planned: 1 + the prior lines
    (None when the history is not recorded)."""
    name = "line"
    inputs = Inputs(case)
    read = courses(case)
    if read is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, COURSE_SOURCE)
    cancer = str(lookup(case, "cancer_type") or "other")
    inputs.used["diagnosis.prior_therapies"] = len(read)
    counted: list[Course] = []
    notes: list[str] = []
    for position, course in enumerate(read):
        later = read[position + 1 :]
        counts, why = _counts_as_line(course, cancer, later[0] if later else None)
        notes.append(f"{course.label}: {'a line' if counts else 'not a line'} ({why})")
        if counts:
            counted.append(course)
    numbers = {c.line_field for c in counted if c.line_field is not None and c.line_field >= 1}
    prior = len(counted)
    if counted and all(c.line_field is not None and c.line_field >= 1 for c in counted):
        prior = len(numbers)  # one line recorded in two entries (induction, then maintenance)
    detail = f"{prior} prior line(s) of systemic therapy for advanced disease: " + "; ".join(notes)
    return inputs.result(name, prior + 1, COURSE_SOURCE, detail if read else "no prior therapy")


# --- time since treatments -----------------------------------------------------------------------

CLASS_FACTS: Final = {
    "months_since_platinum": ("platinum",),
    "months_since_immunotherapy": ("ici",),
    "months_since_anti_cd20": ("anti_cd20",),
    "months_since_endocrine": ("endocrine", "serm", "serd"),
}
TIME_SOURCE: Final = (
    "Months from the end of the treatment (end_date; for the latest course the recorded "
    "months_to_relapse when there is one) to the date the case describes (the newest date "
    "recorded outside the treatment history, else today). Drug classes as the drug lexicon "
    "resolves the regimen (clinical/lexicon.py, ATC classes)."
)


def _since(case: Mapping[str, Any], chosen: list[Course], name: str) -> CalcResult:
    inputs = Inputs(case)
    if not chosen:
        return inputs.result(name, None, TIME_SOURCE, "no such treatment on record")
    latest = max(chosen, key=lambda c: (c.end or c.start or date.min, c.index))
    read = courses(case) or []
    newest = max(read, key=lambda c: (c.end or c.start or date.min, c.index)) if read else None
    if newest is not None and latest.index == newest.index and latest.months_to_relapse is not None:
        value = latest.months_to_relapse
        detail = f"{latest.label}: relapse {value:g} months after it (recorded)"
        return inputs.result(name, value, TIME_SOURCE, detail)
    if latest.end is None:
        inputs.missing.append("diagnosis.prior_therapies[].end_date")
        return inputs.result(name, None, TIME_SOURCE, f"{latest.label}: end date not recorded")
    today, how = assessment_date(case)
    value = max(_months(latest.end, today), 0.0)
    detail = f"{latest.label}: ended {latest.end.isoformat()}, {value:g} months before {how}"
    return inputs.result(name, value, TIME_SOURCE, detail)


def months_since_last_treatment(case: Mapping[str, Any]) -> CalcResult:
    read = courses(case)
    if read is None:
        inputs = Inputs(case)
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result("months_since_last_treatment", None, TIME_SOURCE)
    return _since(case, read, "months_since_last_treatment")


def _class_since(name: str) -> Any:
    wanted = CLASS_FACTS[name]

    def calc(case: Mapping[str, Any]) -> CalcResult:
        chosen = [c for c in courses(case) or [] if c.classes & set(wanted)]
        return _since(case, chosen, name)

    calc.__name__ = name
    calc.__doc__ = f"Months since the last course with {' or '.join(wanted)}."
    return calc


months_since_platinum = _class_since("months_since_platinum")
months_since_immunotherapy = _class_since("months_since_immunotherapy")
months_since_anti_cd20 = _class_since("months_since_anti_cd20")
months_since_endocrine = _class_since("months_since_endocrine")


# --- relapse timing ------------------------------------------------------------------------------

# cancer -> (threshold in months, the course it is measured from, source)
RELAPSE_THRESHOLDS: Final[Mapping[str, tuple[int, str, str]]] = {
    "lymphoma": (
        12,
        "the end of the last immunochemotherapy line",
        "NCCN B-cell lymphomas 2025 (DLBCL second-line therapy): relapse within 12 months of "
        "first-line chemoimmunotherapy, or refractory disease, is early (CAR-T cell therapy "
        "second line, ZUMA-7/TRANSFORM); later relapse is late (salvage and ASCT).",
    ),
    "breast": (
        12,
        "the end of adjuvant endocrine therapy",
        "ESO-ESMO ABC5 2020 (Cardoso F et al., Ann Oncol 2020), endocrine resistance: relapse "
        "on adjuvant endocrine therapy or within 12 months of its end is endocrine-resistant "
        "(early); later relapse is endocrine-sensitive (late).",
    ),
    "lung_adenocarcinoma": (
        6,
        "the end of (neo)adjuvant or consolidation therapy",
        "First-line NSCLC trial convention (IMpower150: adjuvant chemotherapy ended >= 6 "
        "months before): an earlier relapse is treated as after a first line.",
    ),
    "hcc": (
        24,
        "the resection or ablation",
        "EASL HCC guideline 2018 / BCLC 2022: recurrence within 2 years of resection or "
        "ablation is early (intrahepatic spread of the first tumour); later recurrence is "
        "late (de novo).",
    ),
}


def _relapse_anchor(cancer: str, read: list[Course]) -> Course | None:
    if cancer == "lymphoma":
        chosen = [c for c in read if c.kind == "systemic" and c.intent != "maintenance"]
    elif cancer == "breast":
        chosen = [c for c in read if c.classes & {"endocrine", "serm", "serd"}]
    elif cancer == "lung_adenocarcinoma":
        chosen = [
            c
            for c in read
            if c.kind in ("systemic", "radiotherapy")
            and c.intent in ("neoadjuvant", "adjuvant", "consolidation", "curative")
        ]
    elif cancer == "hcc":
        chosen = [c for c in read if c.kind in ("operation", "locoregional")]
        chosen = chosen or [c for c in read if not c.drugs and c.kind != "systemic"]
    else:
        chosen = []
    if not chosen:
        return None
    return max(chosen, key=lambda c: (c.end or c.start or date.min, c.index))


def relapse_timing(case: Mapping[str, Any]) -> CalcResult:
    """early | late: how soon the disease came back after the treatment the cancer's guideline
    measures from (None when there is no relapse, no such treatment or no timing)."""
    name = "relapse_timing"
    inputs = Inputs(case)
    cancer = str(lookup(case, "cancer_type") or "other")
    setting = lookup(case, "diagnosis.setting")
    read = courses(case)
    if cancer not in RELAPSE_THRESHOLDS:
        return inputs.result(name, None, COURSE_SOURCE, "no relapse threshold for this cancer")
    months, anchor_words, source = RELAPSE_THRESHOLDS[cancer]
    if setting not in ("recurrent", "progressive"):
        return inputs.result(name, None, source, "not a relapse (setting)")
    if read is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, source)
    anchor = _relapse_anchor(cancer, read)
    if anchor is None:
        return inputs.result(name, None, source, f"no {anchor_words} on record")
    if anchor.best_response in ("SD", "PD") and cancer == "lymphoma":
        return inputs.result(name, "early", source, f"{anchor.label}: refractory")
    if anchor.stop_reason == "progression" and cancer in ("lymphoma", "breast"):
        return inputs.result(name, "early", source, f"{anchor.label}: progression on it")
    since = _since(case, [anchor], name)
    if since.value is None:
        inputs.missing.extend(since.inputs_missing)
        return inputs.result(name, None, source, since.detail)
    value = float(since.value)  # type: ignore[arg-type]
    timing = "early" if value < months else "late"
    sign = "<" if timing == "early" else ">="
    detail = f"{since.detail} ({sign} {months} months after {anchor_words})"
    return inputs.result(name, timing, source, detail)


# --- operations ----------------------------------------------------------------------------------

OPERATIONS_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[] (kind 'operation' or the regimen's words), the notes "
    "and the lesion description; planned, proposed, declined or negated operations are not "
    "counted. An operation done is not offered again for the same disease (the pathway continues "
    "with what follows it: adjuvant therapy, surveillance)."
)


# In free text an operation counts as done only when its clause says so ("underwent a right
# hepatectomy", "status post lobectomy"): "the anaesthetist rates hepatectomy high risk" is not.
_DONE_CUE = re.compile(
    r"\b(?:underwent|undergone|had|after|following|status\s+post|s/p|previous(?:ly)?|prior"
    r"|resected|performed|done|operated)\b",
    re.I,
)


def _done_in(text: str, pattern: re.Pattern[str], *, needs_cue: bool = False) -> bool:
    for match in pattern.finditer(text):
        if negated_at(text, match.start(), match.end()):
            continue
        clause = clause_at(text, match.start(), match.end())
        if _NOT_DONE.search(clause):
            continue
        if needs_cue and not _DONE_CUE.search(clause):
            continue
        return True
    return False


def operations_done(case: Mapping[str, Any]) -> CalcResult:
    """The operations on record (tags of OPERATIONS), [] when none."""
    name = "operations_done"
    inputs = Inputs(case)
    sources: list[tuple[str, str]] = []
    for course in courses(case) or []:
        if course.regimen and course.kind in ("operation", "systemic", "other", "transplant"):
            sources.append((course.label, course.regimen))
    for path in ("notes", "index_lesion.description"):
        value = lookup(case, path)
        if isinstance(value, str) and value.strip():
            sources.append((path, value))
            inputs.used[path] = value
    done: dict[str, str] = {}
    for where, text in sources:
        free_text = where in ("notes", "index_lesion.description")
        for tag, pattern in OPERATIONS.items():
            if tag not in done and _done_in(text, pattern, needs_cue=free_text):
                done[tag] = where
    # A completion mastectomy replaces the breast-conserving operation.
    if "mastectomy" in done:
        done.pop("breast_conserving", None)
    detail = "; ".join(f"{tag.replace('_', ' ')} ({where})" for tag, where in done.items())
    return inputs.result(name, list(done), OPERATIONS_SOURCE, detail or "no operation on record")


def primary_operation_done(case: Mapping[str, Any]) -> CalcResult:
    """The operation of the cancer's own primary that is on record for the disease being
    planned ("none_recorded" otherwise): a relapse (setting recurrent or progressive) is a new
    question, its operation is decided again."""
    name = "primary_operation_done"
    inputs = Inputs(case)
    cancer = str(lookup(case, "cancer_type") or "other")
    setting = lookup(case, "diagnosis.setting")
    done = operations_done(case)
    own = [t for t in done.value or [] if t in PRIMARY_OPERATIONS.get(cancer, frozenset())]  # type: ignore[union-attr]
    if setting in ("recurrent", "progressive"):
        detail = f"relapse: earlier operation(s) {', '.join(own) or 'none'} do not decide it"
        return inputs.result(name, "none_recorded", OPERATIONS_SOURCE, detail)
    if not own:
        return inputs.result(name, "none_recorded", OPERATIONS_SOURCE, done.detail)
    return inputs.result(name, own[0], OPERATIONS_SOURCE, done.detail)


# --- oligoprogression ----------------------------------------------------------------------------

OLIGO_MAX_SITES: Final = 3
OLIGO_SOURCE: Final = (
    "ESTRO-EORTC consensus on oligometastatic disease (Guckenberger M et al., Lancet Oncol "
    "2020): oligoprogression = progression of up to 3 (at most 5) lesions while the other "
    "disease stays controlled on systemic therapy. NCCN NSCLC 2025 (EGFR/ALK, limited "
    "progression) and ESMO mNSCLC 2023: continue the systemic therapy and treat the progressing "
    "sites locally (stereotactic radiotherapy). Read from lesions[] (new lesions after the "
    "first measurement), the notes ('oligoprogression', 'one new lesion ... otherwise stable')."
)
_OLIGO_WORDS = re.compile(
    r"\boligo-?progress\w*|\b(?:single|solitary|one|isolated|two|three|2|3)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:lesion|metasta\w*|nodule|site|focus|node|deposit)s?\b[^.]{0,120}?\b(?:otherwise"
    r"|elsewhere|other\s+(?:lesions?|sites?|disease|metasta\w*)|remaining|rest\s+of\s+the"
    r"\s+disease)[^.]{0,40}?\b(?:stable|controlled|responding|response|unchanged|regress\w*)",
    re.I,
)
_WIDESPREAD = re.compile(
    r"\b(?:multiple|diffuse|widespread|numerous|innumerable|disseminated|several)\s+"
    r"(?:[\w-]+\s+){0,3}?(?:lesions|metasta\w*|nodules|deposits)|\bgenerali[sz]ed\s+progression|\bsystemic\s+progression"
    r"|\b(?:widespread|diffuse|multifocal|multi-?site|disseminated|polymetastatic)\s+"
    r"(?:disease\s+)?progression|\bprogression\s+(?:at|in)\s+(?:multiple|several|many|numerous)\b",
    re.I,
)


_GROWS: Final = (
    r"(?:grow\w*|grown|progress\w*|enlarg\w*|increas\w*|bigger|larger|new|active|avid"
    r"|hypermetabolic|worse\w*|expand\w*|appear\w*|emerg\w*)"
)
_FEW: Final = r"(?:only|sole|single|isolated|solitary|lone|one|two|2|a\s+single|a\s+solitary)"
_SITE: Final = (
    r"(?:sites?|lesions?|things?|areas?|deposits?|metasta\w*|foc(?:us|i)|nodules?|nodes?"
    r"|places?|spots?|masse?s?)"
)
_CONTROLLED: Final = (
    r"(?:stable|controlled|responding|respond\w*|response|unchanged|regress\w*|shrink\w*"
    r"|shrunk|smaller|quiescent|inactive|clear)"
)
# Oligoprogression in a clinician's prose: "the only site growing is the adrenal", "the adrenal
# is the only lesion that is progressing", "isolated progression of the adrenal deposit",
# "progression confined to one site", "the adrenal is enlarging; everything else remains in
# response". Each match is read with the negation reader ("not the only site growing").
_OLIGO_PROSE: Final = (
    re.compile(
        rf"\b{_FEW}\s+(?:[\w-]+\s+){{0,3}}?{_SITE}\s+(?:(?:that|which)\s+)?"
        rf"(?:is\s+|are\s+|has\s+|have\s+)?(?:been\s+|still\s+)?(?:of\s+|with\s+)?{_GROWS}",
        re.I,
    ),
    re.compile(
        r"\b(?:isolated|solitary|single[-\s]site|limited|focal|local(?:ised|ized)?)\s+"
        r"(?:disease\s+)?(?:progression|growth|enlargement)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:progression|growth|progressive\s+disease|PD)\s+(?:is\s+|was\s+)?(?:only\s+)?"
        r"(?:limited|confined|restricted|isolated)\s+to\s+(?:the\s+|a\s+|an\s+)?"
        r"(?:one|two|single|solitary|\w+\s+(?:lesion|site|deposit|metastasis|node))\b",
        re.I,
    ),
    re.compile(
        r"\b(?:progress\w*|grow\w*|grown|enlarg\w*)\s+only\s+(?:in|at|of)\b"
        r"|\bonly\s+(?:the\s+)?(?:[\w-]+\s+){1,3}?(?:has|have|is|are)\s+"
        r"(?:grown|progress\w*|enlarg\w*|growing)",
        re.I,
    ),
    re.compile(
        rf"\b{_GROWS}\b[^.;]{{0,120}}?[,;:-]?\s*(?:but\s+|while\s+|whereas\s+|and\s+)?"
        rf"(?:otherwise|everything\s+else|all\s+other\s+(?:sites?|lesions?|disease|metasta\w*)"
        rf"|(?:the\s+)?rest\s+of\s+the\s+disease|other\s+sites?|elsewhere|disease\s+elsewhere)"
        rf"\s+(?:[\w-]+\s+){{0,3}}?{_CONTROLLED}",
        re.I,
    ),
)


def _new_lesions(case: Mapping[str, Any]) -> list[str] | None:
    raw = lookup(case, "lesions")
    if not isinstance(raw, list) or not raw:
        return None
    firsts: list[tuple[str, date]] = []
    for lesion in raw:
        if not isinstance(lesion, Mapping):
            continue
        dated = [
            _iso(m.get("date")) for m in lesion.get("measurements") or [] if isinstance(m, Mapping)
        ]
        dates = [d for d in dated if d is not None]
        if dates:
            firsts.append((str(lesion.get("lesion_id") or lesion.get("site") or "?"), min(dates)))
    if not firsts:
        return None
    earliest = min(d for _, d in firsts)
    return [name for name, first in firsts if first > earliest]


def oligoprogression(case: Mapping[str, Any]) -> CalcResult:
    """True: the disease progresses in a few sites on a systemic therapy that controls the rest;
    False: it does not (widespread progression, or the setting is not progression on
    treatment); None: the setting, the systemic therapy or the extent is not recorded."""
    name = "oligoprogression"
    inputs = Inputs(case)
    setting = lookup(case, "diagnosis.setting")
    if not setting:
        return inputs.result(name, None, OLIGO_SOURCE, "disease setting not recorded")
    if setting != "progressive":
        # Newly diagnosed, recurrent after completed treatment or residual after neoadjuvant
        # therapy: nothing progresses on a current systemic therapy, so the question is
        # answered (no), not open.
        return inputs.result(name, False, OLIGO_SOURCE, f"not progressing on treatment ({setting})")
    read = courses(case) or []
    systemic = [c for c in read if c.kind == "systemic"]
    if not systemic:
        return inputs.result(name, None, OLIGO_SOURCE, "no systemic therapy on record")
    texts = [
        str(v)
        for v in (lookup(case, "notes"), lookup(case, "index_lesion.description"))
        if isinstance(v, str)
    ]
    for text in texts:
        for match in _WIDESPREAD.finditer(text):
            if negated_at(text, match.start(), match.end()):
                continue
            # "multiple bone metastases remain stable" is widespread disease, controlled: not
            # widespread progression.
            if re.search(rf"\b{_CONTROLLED}\b", clause_at(text, match.start(), match.end()), re.I):
                continue
            return inputs.result(name, False, OLIGO_SOURCE, f"stated: '{match.group(0)}'")
    for text in texts:
        for match in _OLIGO_WORDS.finditer(text):
            if not negated_at(text, match.start(), match.start() + 1):
                return inputs.result(name, True, OLIGO_SOURCE, f"stated: '{match.group(0)}'")
        for pattern in _OLIGO_PROSE:
            for match in pattern.finditer(text):
                if not negated_at(text, match.start(), match.start() + 1):
                    detail = f"stated: '{match.group(0)}'"
                    return inputs.result(name, True, OLIGO_SOURCE, detail)
    new = _new_lesions(case)
    if new is not None:
        if 0 < len(new) <= OLIGO_MAX_SITES:
            detail = f"{len(new)} new lesion(s) on serial imaging ({', '.join(new)})"
            return inputs.result(name, True, OLIGO_SOURCE, detail)
        if len(new) > OLIGO_MAX_SITES:
            detail = f"{len(new)} new lesions (> {OLIGO_MAX_SITES})"
            return inputs.result(name, False, OLIGO_SOURCE, detail)
    return inputs.result(name, None, OLIGO_SOURCE, "extent of the progression not recorded")


# --- toxicity that bars a rechallenge -----------------------------------------------------------

RECHALLENGE_SOURCE: Final = (
    "ASCO guideline on immune-related adverse events (Schneider BJ et al., J Clin Oncol 2021) "
    "and ESMO toxicity guideline 2022 (Haanen J et al.): after a grade 3-4 immune-related "
    "adverse event of the lung, heart, nerves, liver, kidney or colon, checkpoint inhibitors "
    "are permanently discontinued (endocrine irAEs controlled by replacement excepted); any "
    "grade 4 toxicity bars the drugs that caused it; anthracycline cardiotoxicity bars further "
    "anthracycline (ESC cardio-oncology guideline 2022). Read from prior_therapies[].toxicity "
    "and the recorded immune-related adverse event (patient.prior_irae_*)."
)
_ENDOCRINE_ORGANS = re.compile(
    r"thyroid|hypothyroid|hyperthyroid|adrenal|pituitar|hypophys|endocrin|diabet", re.I
)
_HEART = re.compile(r"heart|cardi|myocard|lvef|ejection", re.I)


def rechallenge_barred(case: Mapping[str, Any]) -> CalcResult:
    """The drugs (canonical names) a severe prior toxicity rules out; [] when none."""
    name = "rechallenge_barred"
    inputs = Inputs(case)
    barred: dict[str, str] = {}
    events: list[tuple[str, str | None, int | None, frozenset[str]]] = []
    for course in courses(case) or []:
        if course.toxicity_grade is not None:
            events.append(
                (course.label, course.toxicity_organ, course.toxicity_grade, course.drugs)
            )
    organ = lookup(case, "patient.prior_irae_organ")
    grade = _number(lookup(case, "patient.prior_irae_grade"))
    if isinstance(organ, str) and grade is not None:
        agent = lookup(case, "patient.prior_irae_agent")
        drugs = _drugs(agent) if isinstance(agent, str) else frozenset()
        events.append(
            ("recorded immune-related adverse event", organ, int(grade), drugs | {"<ici>"})
        )
    ici = sorted(lexicon.members("ici"))
    for where, organ_name, grade_value, drugs in events:
        if grade_value is None:
            continue
        classes: set[str] = set()
        for drug in drugs:
            classes |= lexicon.classes_of(drug)
        is_ici = "ici" in classes or "<ici>" in drugs
        words = f"{organ_name or 'organ not stated'} grade {grade_value}"
        if is_ici and grade_value >= 3 and not _ENDOCRINE_ORGANS.search(organ_name or ""):
            for drug in ici:
                barred.setdefault(drug, f"{where}: immune-related {words}")
        if grade_value >= 4:
            for drug in drugs - {"<ici>"}:
                barred.setdefault(drug, f"{where}: {words}")
        if "anthracycline" in classes and grade_value >= 2 and _HEART.search(organ_name or ""):
            for drug in sorted(lexicon.members("anthracycline")):
                barred.setdefault(drug, f"{where}: anthracycline cardiotoxicity {words}")
    reasons = dict.fromkeys(barred.values())
    detail = "; ".join(reasons) or "no toxicity on record that bars a rechallenge"
    return inputs.result(name, sorted(barred), RECHALLENGE_SOURCE, detail)


# --- recency of events ---------------------------------------------------------------------------

RECENCY_SOURCE: Final = (
    "Days from the recorded bleeding (organ_function.recent_bleeding_date, or the date the notes "
    "give) to the date the case describes. Baveno VII (de Franchis R et al., J Hepatol 2022): "
    "after variceal bleeding, secondary prophylaxis (band ligation with a non-selective beta-"
    "blocker) comes first; anti-VEGF therapy is not started while bleeding is recent."
)


def days_since_bleeding(case: Mapping[str, Any]) -> CalcResult:
    name = "days_since_bleeding"
    inputs = Inputs(case)
    when = _iso(lookup(case, "organ_function.recent_bleeding_date"))
    if when is None:
        return inputs.result(name, None, RECENCY_SOURCE, "no dated bleeding on record")
    today, how = assessment_date(case, skip_keys=_NOT_NOW | {"recent_bleeding_date"})
    days = max((today - when).days, 0)
    site = lookup(case, "organ_function.recent_bleeding_site") or "site not stated"
    detail = f"{site} bleeding on {when.isoformat()}, {days} days before {how}"
    return inputs.result(name, days, RECENCY_SOURCE, detail)


def early_relapse_with_course(case: Mapping[str, Any]) -> CalcResult:
    """``patient.early_relapse`` (months_to_relapse or a refractory best response), and where
    those are not recorded the relapse timing the dates give (``relapse_timing``)."""
    base = early_relapse(case)
    if base.value is not None:
        return base
    timing = relapse_timing(case)
    if timing.value is None:
        return base
    return CalcResult(
        name=base.name,
        value=timing.value == "early",
        inputs_used={**base.inputs_used, **timing.inputs_used},
        inputs_missing=[],
        source=timing.source,
        detail=f"from the dates: {timing.detail}",
    )


PLATINUM_NAIVE_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[] (drug classes as the drug lexicon resolves each "
    "regimen, adjuvant and neoadjuvant courses included). NCCN NSCLC 2025 (subsequent therapy) "
    "and ESMO mNSCLC 2023: after first-line checkpoint-inhibitor monotherapy, the next line is "
    "platinum-based chemotherapy; docetaxel follows platinum."
)


def platinum_naive(case: Mapping[str, Any]) -> CalcResult:
    """True: a history is recorded and no course gave a platinum drug; False: one did; None: no
    history recorded."""
    name = "platinum_naive"
    inputs = Inputs(case)
    read = courses(case)
    if read is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, PLATINUM_NAIVE_SOURCE)
    given = [c for c in read if "platinum" in c.classes]
    if given:
        detail = "platinum given: " + "; ".join(c.label for c in given)
        return inputs.result(name, False, PLATINUM_NAIVE_SOURCE, detail)
    detail = f"no platinum in {len(read)} prior treatment(s)"
    return inputs.result(name, True, PLATINUM_NAIVE_SOURCE, detail)


GELF_SOURCE: Final = (
    "GELF criteria (Brice P et al., J Clin Oncol 1997;15:1110-1117) as ESMO follicular lymphoma "
    "2021 (Dreyling M et al., Ann Oncol 2021) uses them to end watchful waiting: a mass >= 7 cm, "
    "three or more nodal sites >= 3 cm, B symptoms, symptomatic splenomegaly, organ compression, "
    "pleural effusion or ascites, cytopenias (haemoglobin < 10 g/dL, platelets < 100, "
    "neutrophils < 1.0 x 10^9/L), leukaemic phase, raised LDH. Read from the staging and lab "
    "fields and, with negation, from the notes and the lesion description."
)
_GELF_WORDS = re.compile(
    r"\bcompress\w*|\bhydronephros\w*|\b(?:ureteric|ureteral|biliary|bowel)\s+obstruct\w*"
    r"|\bpleural\s+effusion|\beffusions?\b|\bascites\b|\bsymptomatic\s+splenomegaly"
    r"|\bsplenomegaly\b|\bleuka?emic\b|\bcirculating\s+(?:lymphoma|malignant)\s+cells"
    r"|\bthree\s+or\s+more\s+nodal\s+sites|\b(?:3|three|four|five|multiple)\s+nodal\s+"
    r"(?:sites|regions)\s+(?:of\s+|each\s+)?(?:>|>=|≥|over|at\s+least)?\s*3\s*cm",
    re.I,
)


def gelf_high_burden(case: Mapping[str, Any]) -> CalcResult:
    """True when a GELF criterion is met (treatment, not watchful waiting); False when none is
    and B symptoms, bulk and the blood counts are recorded; None otherwise (the counts or the
    symptoms not recorded: watchful waiting cannot be confirmed)."""
    name = "gelf_high_burden"
    inputs = Inputs(case)
    met: list[str] = []
    if inputs.boolean("staging.b_symptoms") is True:
        met.append("B symptoms")
    if inputs.boolean("staging.bulky_disease") is True:
        met.append("bulky disease")
    size = inputs.number("index_lesion.size_mm", minimum=0, maximum=1000, record_missing=False)
    if size is not None and size >= 70:
        met.append(f"mass {size:g} mm (>= 70 mm)")
    limits = (
        ("labs.hemoglobin_g_dl", 10.0, "haemoglobin"),
        ("labs.platelets_10e9_l", 100.0, "platelets"),
        ("labs.anc_10e9_l", 1.0, "neutrophils"),
    )
    for path, limit, label in limits:
        value = inputs.number(path, minimum=0, maximum=10000)
        if value is not None and value < limit:
            met.append(f"{label} {value:g} (< {limit:g})")
    ldh = _number(lookup(case, "biomarkers.ldh_u_l"))
    uln = _number(lookup(case, "biomarkers.ldh_uln_u_l"))
    if ldh is not None and uln and ldh > uln:
        met.append(f"LDH {ldh:g} above the upper limit {uln:g}")
    for path in ("notes", "index_lesion.description"):
        text = lookup(case, path)
        if not isinstance(text, str):
            continue
        for match in _GELF_WORDS.finditer(text):
            if negated_at(text, match.start(), match.end()):
                continue
            met.append(f"stated: '{match.group(0)}'")
            break
    if met:
        return inputs.result(name, True, GELF_SOURCE, "; ".join(met))
    if inputs.missing:
        return inputs.result(name, None, GELF_SOURCE, "no GELF criterion recorded, data missing")
    return inputs.result(name, False, GELF_SOURCE, "no GELF criterion met")
