"""Patient-level derived facts: frailty, and the prior-therapy history (line, relapse timing)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from clinical.results import CalcResult, Inputs, lookup
from clinical.text.negation import affirms

FRAILTY_SOURCE: Final = (
    "Bellera CA, Rainfray M, Mathoulin-Pelissier S, et al. Screening older cancer patients: "
    "first evaluation of the G-8 geriatric screening tool. Ann Oncol 2012;23(8):2166-2172 "
    "(G8 0-17; <= 14 abnormal, prompting a comprehensive geriatric assessment). A G8 score can "
    "only screen: it yields fit or vulnerable, never frail; frail comes from the clinician."
)
PRIOR_THERAPY_SOURCE: Final = (
    "Read from diagnosis.prior_therapies[]. Early relapse: relapse within 12 months of the end "
    "of the most recent line or refractory disease (best response SD/PD), the cut-off used for "
    "early relapse/refractory disease in NCCN B-cell lymphoma guidelines (second-line therapy, "
    "relapse < 12 months) and ESMO DLBCL guidelines (Tilly H et al., Ann Oncol 2015 and "
    "updates)."
)

FRAILTY: Final = ("fit", "vulnerable", "frail")
G8_CUTOFF: Final = 14
REFRACTORY_RESPONSES: Final = ("SD", "PD")
EARLY_RELAPSE_MONTHS: Final = 12


def frailty(case: Mapping[str, Any]) -> CalcResult:
    """fit | vulnerable | frail: the clinician's patient.frailty, else from the G8 score."""
    name = "frailty"
    inputs = Inputs(case)
    stated = inputs.choice("patient.frailty", FRAILTY, record_missing=False)
    if stated is not None:
        return inputs.result(name, stated, FRAILTY_SOURCE, "clinician's assessment")
    invalid = list(inputs.missing)  # an unreadable patient.frailty is reported, then G8 tried
    g8 = inputs.number("patient.g8_score", minimum=0, maximum=17)
    if g8 is None:
        for path in invalid:
            if path not in inputs.missing:
                inputs.missing.append(path)
        if "patient.frailty" not in inputs.missing:
            inputs.missing.insert(0, "patient.frailty")
        return inputs.result(name, None, FRAILTY_SOURCE)
    inputs.missing.clear()
    value = "vulnerable" if g8 <= G8_CUTOFF else "fit"
    detail = f"G8 {g8:g} {'<=' if g8 <= G8_CUTOFF else '>'} {G8_CUTOFF}: screening only"
    return inputs.result(name, value, FRAILTY_SOURCE, detail)


def _therapies(case: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    raw = lookup(case, "diagnosis.prior_therapies")
    if not isinstance(raw, list):
        return None
    return [t for t in raw if isinstance(t, Mapping)]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def most_recent_therapy(therapies: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The latest line: highest `line` when every entry has one, else latest `end_date`
    (ISO dates compare as strings) when every entry has one, else the last entry listed."""
    if not therapies:
        return None
    lines = [_number(t.get("line")) for t in therapies]
    if all(n is not None for n in lines):
        return max(zip(lines, range(len(therapies)), therapies, strict=True))[2]
    ends = [t.get("end_date") for t in therapies]
    if all(isinstance(e, str) and e for e in ends):
        return max(zip(ends, range(len(therapies)), therapies, strict=True))[2]
    return therapies[-1]


def prior_regimens(case: Mapping[str, Any]) -> CalcResult:
    """Lower-case regimen strings of every prior therapy ([] when none; None when not recorded)."""
    inputs = Inputs(case)
    therapies = _therapies(case)
    if therapies is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result("prior_regimens", None, PRIOR_THERAPY_SOURCE)
    regimens = [
        str(t["regimen"]).strip().lower()
        for t in therapies
        if isinstance(t.get("regimen"), str) and str(t["regimen"]).strip()
    ]
    inputs.used["diagnosis.prior_therapies"] = len(therapies)
    detail = f"{len(therapies)} prior therapies, {len(regimens)} with a regimen recorded"
    return inputs.result("prior_regimens", regimens, PRIOR_THERAPY_SOURCE, detail)


def months_to_relapse(case: Mapping[str, Any]) -> CalcResult:
    """months_to_relapse of the most recent prior therapy (None if none or not recorded)."""
    name = "months_to_relapse"
    inputs = Inputs(case)
    therapies = _therapies(case)
    latest = most_recent_therapy(therapies) if therapies else None
    if latest is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, PRIOR_THERAPY_SOURCE, "no prior therapy recorded")
    months = _number(latest.get("months_to_relapse"))
    if months is None or months < 0:
        inputs.missing.append("diagnosis.prior_therapies[].months_to_relapse")
        return inputs.result(name, None, PRIOR_THERAPY_SOURCE)
    inputs.used["diagnosis.prior_therapies[].months_to_relapse"] = latest.get("months_to_relapse")
    value: int | float = int(months) if months == int(months) else months
    detail = f"line {latest.get('line', '?')} ({latest.get('regimen') or 'regimen n/a'})"
    return inputs.result(name, value, PRIOR_THERAPY_SOURCE, detail)


def early_relapse(case: Mapping[str, Any]) -> CalcResult:
    """True: the most recent line was refractory (best response SD/PD) or relapse came < 12
    months after it ended; False: relapse >= 12 months; None: no prior line or not recorded."""
    name = "early_relapse"
    inputs = Inputs(case)
    therapies = _therapies(case)
    latest = most_recent_therapy(therapies) if therapies else None
    if latest is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, PRIOR_THERAPY_SOURCE, "no prior therapy recorded")
    label = f"line {latest.get('line', '?')} ({latest.get('regimen') or 'regimen n/a'})"
    response = latest.get("best_response")
    response = response.strip().upper() if isinstance(response, str) else None
    if response in REFRACTORY_RESPONSES:
        inputs.used["diagnosis.prior_therapies[].best_response"] = response
        return inputs.result(
            name, True, PRIOR_THERAPY_SOURCE, f"{label}: best response {response} (refractory)"
        )
    months = _number(latest.get("months_to_relapse"))
    if months is None or months < 0:
        inputs.missing.append("diagnosis.prior_therapies[].months_to_relapse")
        if response is None:
            inputs.missing.append("diagnosis.prior_therapies[].best_response")
        return inputs.result(name, None, PRIOR_THERAPY_SOURCE, label)
    inputs.used["diagnosis.prior_therapies[].months_to_relapse"] = latest.get("months_to_relapse")
    early = months < EARLY_RELAPSE_MONTHS
    sign = "<" if early else ">="
    detail = f"{label}: relapse {months:g} months after the end ({sign} {EARLY_RELAPSE_MONTHS})"
    return inputs.result(name, early, PRIOR_THERAPY_SOURCE, detail)


LINE_SOURCE: Final = (
    "Line of systemic therapy: one more than the prior therapies that included systemic "
    "treatment. Surgery, local ablation, embolisation (TACE/TARE), radiotherapy and "
    "transplantation alone are local therapies and start no line (the convention of the "
    "treatment-line definitions in NCCN and ESMO guidelines: e.g. BCLC 2022 first-line systemic "
    "therapy after prior resection or TACE; ASCT consolidation belongs to its salvage line)."
)

# Named systemic agents and regimens (suffixes of drug classes, common regimen acronyms).
_SYSTEMIC: Final = re.compile(
    r"\w+(?:mab|nib|platin|taxel|rubicin|ciclib|parib|lisib|zomib|mustine|fosfamide|citabine|"
    r"trexed|relbine|poside|tecan|mide|leucel)\b"
    r"|\bchemo\w*|\bimmuno\w*|\bendocrine\b|\bhormon\w*|\bsystemic\b|\bcar[-\s]?t\b"
    r"|\btamoxifen\b|\bletrozole\b|\banastrozole\b|\bexemestane\b|\bfulvestrant\b"
    r"|\bcyclophosphamide\b|\bfluorouracil\b|\b5-?fu\b|\bchlorambucil\b|\bvincristine\b"
    r"|\bprednis\w*|\bmethotrexate\b|\bbevacizumab\b|\bsorafenib\b"
    r"|\b(?:r-?)?(?:chop|cvp|ice|dhap|dhax|gdp|gemox|abvd|beacopp|bendamustine|br|pola-?r-?chp)\b"
    r"|\b(?:folfox|folfiri|folfirinox|capox|xelox|ac|ec|tc|tch|tchp|cmf|fec|ddac|ac-t|ec-t)\b",
    re.IGNORECASE,
)
# Local treatments: any of these alone is not a line of systemic therapy.
_LOCAL: Final = re.compile(
    r"\bresect\w*|\w*ectomy\b|\bsurg\w*|\boperat\w*|\bexcision\b|\bablat\w*|\bradiofrequency\b"
    r"|\brfa\b|\bmwa\b|\bmicrowave\b|\bcryo\w*|\b(?:de-?)?tace\b|\btare\b|\bsirt\b|\by-?90\b"
    r"|\bemboli[sz]\w*|\bradioemboli\w*|\bradio\s?therap\w*|\bradiation\b|\birradiation\b"
    r"|\bisrt\b|\binrt\b|\bsbrt\b|\bsabr\b|\bstereotactic\b|\bbrachytherapy\b|\bgy\b"
    r"|\btransplant\w*|\basct\b|\blumpectomy\b|\bpercutaneous\b",
    re.IGNORECASE,
)


def _starts_a_line(regimen: object) -> bool:
    """Whether a prior therapy counts as a line of systemic therapy. Unreadable or missing
    regimens count (the cautious reading); only a recognisably local-only one does not."""
    if not isinstance(regimen, str) or not regimen.strip():
        return True
    return bool(_SYSTEMIC.search(regimen)) or not _LOCAL.search(regimen)


def treatment_line(case: Mapping[str, Any]) -> CalcResult:
    """The line of systemic therapy the case is being planned for: 1 + the prior therapies
    that included systemic treatment (None when prior therapies are not recorded)."""
    name = "line"
    inputs = Inputs(case)
    therapies = _therapies(case)
    if therapies is None:
        inputs.missing.append("diagnosis.prior_therapies")
        return inputs.result(name, None, LINE_SOURCE)
    systemic = [t for t in therapies if _starts_a_line(t.get("regimen"))]
    inputs.used["diagnosis.prior_therapies"] = len(therapies)
    local = len(therapies) - len(systemic)
    detail = f"{len(systemic)} prior systemic therapies"
    if local:
        detail += f"; {local} local therapies (surgery, ablation, radiotherapy ...) not counted"
    return inputs.result(name, len(systemic) + 1, LINE_SOURCE, detail)


PREGNANCY_SOURCE: Final = (
    "Trimester from patient.gestational_age_weeks when the case has it, else from a gestational "
    "age or trimester stated in the notes or comorbidities ('24 weeks' gestation', 'first "
    "trimester'); first < 14 weeks, second 14-27, third >= 28 (ESMO cancer, pregnancy and "
    "fertility guideline 2013, Peccatori FA et al.: no chemotherapy before about 14 weeks). A "
    "pregnancy without a stated gestational age is 'unknown': no chemotherapy decision before "
    "dating."
)
TRIMESTERS: Final = ("first", "second", "third", "unknown", "not_pregnant")
_WEEKS_RE: Final = re.compile(
    r"\b(\d{1,2})(?:\s*\+\s*\d)?\s*(?:weeks?|wks?)['\u2019]?\s*(?:of\s+)?"
    r"(?:gestation|pregnan|amenorrh|ga\b)"
    r"|\b(?:gestation(?:al\s+age)?|ga)\s*(?:of\s+|:\s*)?(\d{1,2})(?:\s*\+\s*\d)?\s*(?:weeks?|wks?)\b",
    re.IGNORECASE,
)
_TRIMESTER_WORDS: Final = (
    ("first", ("first trimester", "1st trimester")),
    ("second", ("second trimester", "2nd trimester")),
    ("third", ("third trimester", "3rd trimester")),
)


def trimester_for(weeks: float) -> str:
    if weeks < 14:
        return "first"
    return "second" if weeks < 28 else "third"


def pregnancy_trimester(case: Mapping[str, Any]) -> CalcResult:
    """first | second | third | unknown (pregnant, gestation not stated) | not_pregnant."""
    name = "pregnancy_trimester"
    inputs = Inputs(case)
    pregnant = inputs.boolean("patient.pregnant")
    if pregnant is None:
        return inputs.result(name, None, PREGNANCY_SOURCE)
    if not pregnant:
        return inputs.result(name, "not_pregnant", PREGNANCY_SOURCE)
    weeks = inputs.number(
        "patient.gestational_age_weeks", minimum=0, maximum=45, record_missing=False
    )
    if weeks is not None:
        return inputs.result(
            name, trimester_for(weeks), PREGNANCY_SOURCE, f"{weeks:g} weeks (recorded)"
        )
    texts = [inputs.text("notes", record_missing=False) or ""]
    comorbidities = lookup(case, "patient.comorbidities")
    if isinstance(comorbidities, list):
        texts += [str(c) for c in comorbidities if isinstance(c, str)]
    for text in texts:
        match = _WEEKS_RE.search(text)
        if match:
            stated = int(match.group(1) or match.group(2))
            detail = f"{stated} weeks, as stated: '{match.group(0)}'"
            return inputs.result(name, trimester_for(stated), PREGNANCY_SOURCE, detail)
        for trimester, words in _TRIMESTER_WORDS:
            if any(affirms(text, w) for w in words):
                return inputs.result(name, trimester, PREGNANCY_SOURCE, f"stated: {trimester}")
    detail = "pregnant; gestational age not recorded: date the pregnancy first"
    return inputs.result(name, "unknown", PREGNANCY_SOURCE, detail)


def pregnancy_recorded(case: Mapping[str, Any]) -> CalcResult:
    """True only when patient.pregnant is recorded as true; False otherwise, a missing value
    included. For steps whose alternative is worse when a recorded pregnancy is overlooked than
    when an unrecorded one is: PET-CT response imaging is planned unless a pregnancy is on record
    (a pregnant patient gets MRI and ultrasound instead)."""
    inputs = Inputs(case)
    pregnant = inputs.boolean("patient.pregnant", record_missing=False)
    detail = "pregnancy recorded" if pregnant else "no pregnancy on record"
    return inputs.result("pregnancy_recorded", pregnant is True, PREGNANCY_SOURCE, detail)
