"""Value readers of the clinical text reader: what a matched concept says within its sentence
(a grade, a percentage, a variant, a date, an organ). Each works on one bounded sentence.

A value reader returns the facts the mention sets, as (fact, value) pairs, the first being the
concept's own; an empty list when the sentence does not say enough to set anything (an "EGFR
TKI" names the gene without a result; "varices" without size or treatment says neither).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Final

from clinical.text.negation import negated_at

Facts = list[tuple[str, Any]]


@dataclass(frozen=True)
class Mention:
    """What a value reader sees: the sentence, the matched words and where they are."""

    sentence: str
    start: int  # of the matched words, within the sentence
    end: int
    negated: bool
    modifiers: tuple[str, ...]  # the ConText cue words that modify the mention
    as_of: date | None
    concept_fact: str
    concept_value: Any = None
    organ: str | None = None
    synonyms: Mapping[str, str] = field(default_factory=dict)
    # The next sentence of the text: a finding's status is often stated in the sentence after
    # it ("Grade III varices. Nothing was banded."). Only readers that say so look at it.
    following: str = ""

    @property
    def text(self) -> str:
        return self.sentence[self.start : self.end]

    @property
    def after(self) -> str:
        """The words after the mention up to the next comma, semicolon or 60 characters."""
        tail = self.sentence[self.end : self.end + 60]
        return re.split(r"[,;]", tail, maxsplit=1)[0]


# --- shared readers ---------------------------------------------------------------------------

_ROMAN: Final = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5}
_GRADE: Final = re.compile(
    r"\b(?:CTCAE\s+(?:v\d\s+)?)?(?:grade|gr\.?|G)\s*(?:=\s*)?([1-5]|iv|v|i{1,3})\b", re.IGNORECASE
)


def grade_near(sentence: str, start: int) -> int | None:
    """The CTCAE grade stated in the sentence nearest to position ``start``."""
    best: tuple[int, int] | None = None
    for match in _GRADE.finditer(sentence):
        raw = match.group(1).casefold()
        grade = int(raw) if raw.isdigit() else _ROMAN[raw]
        distance = abs(match.start() - start)
        if best is None or distance < best[0]:
            best = (distance, grade)
    return best[1] if best else None


_AGO: Final = re.compile(
    r"\b(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
    r"(day|week|month|year)s?\s+(?:ago|earlier|before|previously)\b",
    re.IGNORECASE,
)
_WORD_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_UNIT_DAYS: Final = {"day": 1, "week": 7, "month": 30, "year": 365}
_LAST: Final = re.compile(r"\b(yesterday|last\s+(?:week|month|year)|this\s+week)\b", re.IGNORECASE)
_LAST_DAYS: Final = {
    "yesterday": 1,
    "last week": 7,
    "this week": 3,
    "last month": 30,
    "last year": 365,
}
_ISO: Final = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_DMY: Final = re.compile(r"\b(\d{1,2})[/.](\d{1,2})[/.]((?:19|20)\d\d)\b")
_MONTHS: Final = {m.casefold(): i for i, m in enumerate(calendar.month_name) if m} | {
    m.casefold(): i for i, m in enumerate(calendar.month_abbr) if m
}
_MONTH_YEAR: Final = re.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?\s+((?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_YEAR: Final = re.compile(r"\b(?:in|since|during|from)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_RECENT: Final = re.compile(
    r"\brecent(?:ly)?\b|\bnew\b|\bongoing\b|\bactive\b|\bcurrent(?:ly)?\b", re.IGNORECASE
)


def when(sentence: str, as_of: date | None) -> dict[str, Any]:
    """When the sentence dates its event: {"date": ISO date or None, "days_ago": int or None,
    "recent": True when the sentence calls it recent}. A month or a year alone is read as its
    last day (the reading that makes an event most recent, the cautious one); a date after
    ``as_of`` is not an event date and is ignored."""
    found: date | None = None
    days_ago: int | None = None
    ago = _AGO.search(sentence)
    last = _LAST.search(sentence)
    if ago:
        raw = ago.group(1).casefold()
        count = int(raw) if raw.isdigit() else _WORD_NUMBERS[raw]
        days_ago = count * _UNIT_DAYS[ago.group(2).casefold()]
    elif last:
        days_ago = _LAST_DAYS[re.sub(r"\s+", " ", last.group(1).casefold())]
    else:
        for pattern, build in (
            (_ISO, lambda m: date(int(m[1]), int(m[2]), int(m[3]))),
            (_DMY, lambda m: date(int(m[3]), int(m[2]), int(m[1]))),
            (_MONTH_YEAR, _month_end),
            (_YEAR, lambda m: date(int(m[1]), 12, 31)),
        ):
            match = pattern.search(sentence)
            if match:
                try:
                    found = build(match)
                except ValueError:
                    found = None  # "31/02/2026": not a date
                if found is not None:
                    break
        if found is not None and as_of is not None:
            if found > as_of and pattern is not _YEAR and pattern is not _MONTH_YEAR:
                found = None
            elif found > as_of:
                found = as_of  # the current month or year: as recent as can be
            if found is not None:
                days_ago = (as_of - found).days
    if found is None and days_ago is not None and as_of is not None:
        found = as_of - timedelta(days=days_ago)
    return {
        "date": found.isoformat() if found else None,
        "days_ago": days_ago,
        "recent": bool(_RECENT.search(sentence)),
    }


def _month_end(match: re.Match[str]) -> date:
    month = _MONTHS[match.group(1).casefold().rstrip(".")]
    year = int(match.group(2))
    return date(year, month, calendar.monthrange(year, month)[1])


# --- per-concept readers ----------------------------------------------------------------------


def _fixed(m: Mention) -> Facts:
    return [(m.concept_fact, m.concept_value)]


_DRUG_CLASSES: Final = {"lmwh": "low-molecular-weight heparin", "doac": "DOAC", "noac": "DOAC"}


def drug_name(m: Mention) -> Facts:
    """The drug as its generic name ("Eliquis" is apixaban); a class or "anticoagulated"
    when no drug is named."""
    words = re.sub(r"\s+", " ", m.text.casefold()).strip()
    if words in _DRUG_CLASSES:
        return [(m.concept_fact, _DRUG_CLASSES[words])]
    if re.search(r"anticoagula|strong\s+cyp3a", words):
        return [(m.concept_fact, "unspecified")]
    words = re.sub("[\u2019']", "'", words)  # a typographic apostrophe reads as a plain one
    return [(m.concept_fact, m.synonyms.get(words, words))]


_VARICES_LARGE: Final = re.compile(
    r"\b(?:large|big|medium|F[23]|grade\s*(?:[23]|II|III)|moderate)\b", re.IGNORECASE
)
_VARICES_SMALL: Final = re.compile(r"\b(?:small|F1|grade\s*(?:1|I)|minor|tiny)\b", re.IGNORECASE)
_RED_SIGNS: Final = re.compile(
    r"\bred[-\s](?:wale|spots?|colou?r(?:\s+signs?)?|signs?)|\bcherry[-\s]red|\bRWM\b|"
    r"\bha?ematocystic",
    re.IGNORECASE,
)
_UNTREATED: Final = re.compile(
    r"\buntreated\b|\bnot\s+(?:yet\s+|been\s+)?(?:ligated|banded|treated|eradicated)\b"
    r"|\bno\s+(?:banding|ligation|EVL|treatment)\b|\bwithout\s+(?:banding|ligation|treatment)\b",
    re.IGNORECASE,
)
# Variceal therapy (Baveno VII 2022, primary and secondary prophylaxis): endoscopic (band
# ligation to eradication, sclerotherapy, glue, TIPS) or a non-selective beta-blocker.
_ENDOSCOPIC_THERAPY: Final = re.compile(
    r"\bband(?:ed|ing|s)?\b|\bligat(?:ed|ion)\b|\bEVL\b|\bEBL\b|\beradicat\w*|\bobliterat\w*"
    r"|\bsclerotherap\w*|\bcyanoacrylate\b|\bglue\b|\bTIPS\b",
    re.IGNORECASE,
)
_BETA_BLOCKER: Final = re.compile(
    r"\b(?:carvedilol|propranolol|nadolol|timolol|N?SBBs?)\b"
    r"|\b(?:non-?selective\s+)?(?:beta|\u03b2)[-\s]?block(?:er|ers|ade)\b",
    re.IGNORECASE,
)
# Words before a therapy that leave it not (yet) given: "nothing was banded", "awaiting
# banding", "needs a beta-blocker", "referred for ligation".
_NOT_YET_BEFORE: Final = re.compile(
    r"(?:\b(?:nothing|none|neither)\b(?:\s+\w+){0,3}"
    r"|\b(?:await\w*|pending|planned|plan(?:s|ning)?\s+(?:is\s+)?(?:for|to)|scheduled|booked"
    r"|due|referr\w*\s+for|yet\s+to(?:\s+be)?|to\s+be|not\s+yet|will|would|should|before"
    r"|until|consider\w*|needs?|needing|requires|recommend\w*|(?:candidate|listed|indicat\w*)\s+for)"
    r"(?:\s+(?:an?|the|further|urgent|prophylactic|endoscopic)){0,2})\s*$",
    re.IGNORECASE,
)
# ... or after it: "banding is planned", "ligation pending".
_NOT_YET_AFTER: Final = re.compile(
    r"^\s*(?:(?:is|was|has\s+been|will\s+be)\s+)?(?:planned|pending|awaited|scheduled|booked"
    r"|requested|recommended|to\s+follow|(?:is\s+)?due)\b",
    re.IGNORECASE,
)


def _therapy_given(text: str) -> bool | None:
    """Whether ``text`` says the varices were treated (True), that they were not or not yet
    (False), or says neither (None). Each therapy word is read with the negation reader
    (clinical/text/negation.py: "not banded", "no beta-blocker", "carvedilol stopped") and the
    not-yet words above. Endoscopic therapy given and never denied counts as treated; endoscopic
    therapy denied makes them untreated; otherwise a beta-blocker taken counts as treated, and
    one denied (or "untreated") makes them untreated."""
    given = {"endoscopic": False, "drug": False}
    denied = {"endoscopic": False, "drug": False}
    for kind, pattern in (("endoscopic", _ENDOSCOPIC_THERAPY), ("drug", _BETA_BLOCKER)):
        for match in pattern.finditer(text):
            before = text[max(0, match.start() - 60) : match.start()]
            before = re.split(r"[,:;]", before)[-1]
            not_given = (
                negated_at(text, match.start(), match.end())
                or _NOT_YET_BEFORE.search(before) is not None
                or _NOT_YET_AFTER.match(text, match.end()) is not None
            )
            if not_given:
                denied[kind] = True
            else:
                given[kind] = True
    if given["endoscopic"] and not denied["endoscopic"]:
        return True
    if denied["endoscopic"]:
        # "not banded" (or "banded, not yet eradicated": under way, not done) stays untreated
        # even on a beta-blocker: the cautious reading before an anti-VEGF drug.
        return False
    if given["drug"]:
        return True
    if denied["drug"] or _UNTREATED.search(text):
        return False
    return None


def varices(m: Mention) -> Facts:
    """Baveno VII (de Franchis R et al., J Hepatol 2022;76:959-974): large (F2-F3, grade
    II-III, medium or large) varices or any with red signs are high-risk; treated when banded /
    ligated / eradicated or on a non-selective beta-blocker. Whether they were treated is read
    in the mention's sentence, else in the next one ("Grade III varices with red wale marks.
    Nothing was banded."). The existing field's values: none | small | large_untreated |
    treated."""
    s = m.sentence
    treated = _therapy_given(s)
    if treated is None and m.following:
        treated = _therapy_given(m.following)
    if treated:
        return [(m.concept_fact, "treated")]
    red = next((r for r in _RED_SIGNS.finditer(s) if not negated_at(s, r.start(), r.end())), None)
    if _VARICES_LARGE.search(s) or red:
        return [(m.concept_fact, "large_untreated")]
    if _VARICES_SMALL.search(s):
        return [(m.concept_fact, "small")]
    if treated is False:
        # Untreated varices of unstated size: the cautious reading until endoscopy says.
        return [(m.concept_fact, "large_untreated")]
    return []


_BLEED_SITES: Final = (
    ("variceal", re.compile(r"\bvarice|\bvariceal", re.IGNORECASE)),
    ("intracranial", re.compile(r"intracranial|intracerebral|subarachnoid|subdural|stroke", re.I)),
    ("pulmonary", re.compile(r"ha?emoptysis|pulmonary|airway", re.IGNORECASE)),
    ("tumour", re.compile(r"\btumou?r\b", re.IGNORECASE)),
    (
        "gastrointestinal",
        re.compile(r"\bGI\b|gastro|ha?ematemesis|mela?ena|rectal|ha?ematochezia|ulcer", re.I),
    ),
)


def bleeding(m: Mention) -> Facts:
    """A bleeding event: its site and when it happened."""
    site = next((name for name, p in _BLEED_SITES if p.search(m.text)), None)
    if site is None:
        site = next((name for name, p in _BLEED_SITES if p.search(m.sentence)), "other")
    return [(m.concept_fact, {"site": site, **when(m.sentence, m.as_of)})]


_ICI: Final = re.compile(
    r"\b(nivolumab|pembrolizumab|ipilimumab|atezolizumab|durvalumab|avelumab|cemiplimab"
    r"|tremelimumab|dostarlimab|tislelizumab|toripalimab|sintilimab|camrelizumab|relatlimab"
    r"|retifanlimab|serplulimab)\b",
    re.IGNORECASE,
)
_IMMUNE_WORDS: Final = re.compile(
    r"\bimmune[-\s](?:related|mediated)|\birAE|\bcheckpoint|\bimmunotherapy|\bICI\b"
    r"|\banti-?PD-?L?1|\banti-?CTLA-?4|\bIO[-\s](?:related|induced)",
    re.IGNORECASE,
)
_IRAE_ORGANS: Final = (
    ("lung", re.compile(r"pneumonitis", re.I)),
    ("colon", re.compile(r"colitis|diarrho?ea", re.I)),
    ("liver", re.compile(r"hepatitis|transaminitis", re.I)),
    ("kidney", re.compile(r"nephritis", re.I)),
    ("heart", re.compile(r"myocarditis", re.I)),
    ("pituitary", re.compile(r"hypophysitis", re.I)),
    ("muscle", re.compile(r"myositis", re.I)),
    ("nervous_system", re.compile(r"encephalitis|myasthenia|neuropathy|guillain", re.I)),
    ("skin", re.compile(r"dermatitis|stevens|\bSJS\b|\bTEN\b|epidermal", re.I)),
    ("thyroid", re.compile(r"thyroiditis", re.I)),
    ("pancreas", re.compile(r"pancreatitis|diabetes", re.I)),
)


def irae(m: Mention) -> Facts:
    """A prior immune-related adverse event: organ, grade, agent and when. Needs an immune
    context in the sentence (a checkpoint inhibitor named, or "immune-related"): colitis
    alone may be infective."""
    agent = _ICI.search(m.sentence)
    if not agent and not _IMMUNE_WORDS.search(m.sentence):
        return []
    organ = m.organ or next((o for o, p in _IRAE_ORGANS if p.search(m.text)), "unspecified")
    event = {
        "organ": organ,
        "grade": grade_near(m.sentence, m.start),
        "agent": agent.group(1).casefold() if agent else None,
        **when(m.sentence, m.as_of),
    }
    return [("patient.prior_immune_adverse_events", event)]


def neuropathy(m: Mention) -> Facts:
    facts: Facts = [(m.concept_fact, True)]
    grade = grade_near(m.sentence, m.start)
    if grade is not None:
        facts.append(("organ_function.peripheral_neuropathy_grade", grade))
    return facts


_CKD_STAGE: Final = re.compile(r"(?:CKD|kidney\s+disease)\s*(?:stage\s*|G)?([1-5])([ab])?", re.I)
_EGFR_VALUE: Final = re.compile(
    r"(?:eGFR|creatinine\s+clearance|CrCl)\s*(?:of\s*|:\s*|=\s*|was\s+|is\s+)?(<\s*)?(\d{1,3})",
    re.I,
)


def _kdigo(value: float) -> str | None:
    if value < 15:
        return "end_stage"
    if value < 30:
        return "severe"
    if value < 60:
        return "moderate"
    return None  # 60 and above: no impairment by eGFR alone (KDIGO G1-G2)


def renal(m: Mention) -> Facts:
    """KDIGO 2012 categories: G3 (30-59) moderate, G4 (15-29) severe, G5 / dialysis end-stage."""
    t = m.text
    stage = _CKD_STAGE.search(t)
    if stage:
        value = {1: None, 2: None, 3: "moderate", 4: "severe", 5: "end_stage"}[int(stage[1])]
        return [(m.concept_fact, value)] if value else []
    number = _EGFR_VALUE.search(t)
    if number:
        value = _kdigo(float(number[2]) - (1 if number[1] else 0))
        return [(m.concept_fact, value)] if value else []
    if re.search(r"dialysis|ESRD|ESKD|end[-\s]stage", t, re.I):
        return [(m.concept_fact, "end_stage")]
    for word in ("severe", "moderate", "mild"):
        if re.search(rf"\b{word}\b", t, re.I):
            return [(m.concept_fact, word)]
    return [(m.concept_fact, "unspecified")]


def hepatic(m: Mention) -> Facts:
    t = m.text
    pugh = re.search(
        r"(?:Child[-\s–]?Pugh\s*(?:class\s*|score\s*|grade\s*)?|CP[-\s]?)([ABC])", t, re.I
    )
    if pugh:
        return [(m.concept_fact, f"child_pugh_{pugh[1].casefold()}")]
    if re.search(r"decompensat", m.sentence, re.I):
        return [(m.concept_fact, "decompensated_cirrhosis")]
    if re.search(r"cirrho", t, re.I):
        return [(m.concept_fact, "cirrhosis")]
    for word in ("severe", "moderate", "mild"):
        if re.search(rf"\b{word}\b", t, re.I):
            return [(m.concept_fact, word)]
    if re.search(r"liver\s+failure", t, re.I):
        return [(m.concept_fact, "severe")]
    return [(m.concept_fact, "unspecified")]


_PCT: Final = re.compile(
    r"(\d{1,2}(?:\.\d)?)\s*(?:(?:-|–|to)\s*(\d{1,2})\s*)?(?:%|percent|per\s*cent)"
)
_LATER_PCT: Final = re.compile(
    r"\b(?:now|currently|down\s+to|fell\s+to|decreased\s+to|dropped\s+to|reduced\s+to"
    r"|declined\s+to)\s*(\d{1,2})\s*(?:%|percent)|(?:->|→)\s*(\d{1,2})\s*%",
    re.IGNORECASE,
)


def lvef_pct(m: Mention) -> Facts:
    """The LVEF; a range gives its lower end, and a later value in the sentence ("62 % in
    2020, now 38 %") is the current one."""
    match = _PCT.search(m.text)
    if not match:
        return []
    value = min(float(g) for g in match.groups() if g is not None)
    later = [g1 or g2 for g1, g2 in _LATER_PCT.findall(m.sentence[m.end :])]
    if later:
        value = float(later[-1])
    if not 5 <= value <= 90:
        return []
    return [(m.concept_fact, int(value) if value == int(value) else value)]


def qtc_ms(m: Mention) -> Facts:
    match = re.search(r"(\d{3})", m.text)
    if not match or not 300 <= int(match[1]) <= 700:
        return []
    facts: Facts = [(m.concept_fact, int(match[1]))]
    return facts


_REPLACED: Final = re.compile(
    r"hashimoto|graves|type\s*(?:1|I)\s+diabetes|vitiligo|autoimmune\s+thyroiditis", re.I
)
_ACTIVE: Final = re.compile(
    r"\bflar\w*|(?<![\w-])active\b|\buncontrolled|\brelaps\w*|\bexacerbat\w*|\bcrisis\b"
    r"|\brefractory|\bpoorly\s+controlled|\bnot\s+(?:well\s+)?controlled|\bsteroid[-\s]dependent"
    r"|\bnewly\s+diagnosed|\bon\s+(?:high[-\s]dose\s+)?(?:prednis\w*|steroids|methotrexate"
    r"|azathioprine|mycophenol\w*|infliximab|adalimumab|vedolizumab|tacrolimus)",
    re.IGNORECASE,
)
_INACTIVE: Final = re.compile(
    r"\binactive\b|\bquiescent|\bremission|\bstable\b|\bcontrolled\b|\bresolved\b|\bremote\b"
    r"|\bchildhood\b|\bburnt[-\s]out|\bno\s+(?:recent\s+)?(?:flares?|activity|relapses?)\b"
    r"|\blevothyroxine|\beuthyroid|\bthymectom\w*|\boff\s+(?:all\s+)?treatment",
    re.IGNORECASE,
)


def autoimmune(m: Mention) -> Facts:
    """The disease named, and its activity when the sentence says (an endocrinopathy on
    replacement is inactive: ESMO 2022 immunotherapy toxicity guideline)."""
    name = re.sub(r"\s+", " ", m.text.strip())
    facts: Facts = [(m.concept_fact, name)]
    if _ACTIVE.search(m.sentence) and not re.search(
        r"\bno\s+(?:recent\s+)?(?:flares?|activity)|\bnot\s+active\b", m.sentence, re.I
    ):
        facts.append(("organ_function.autoimmune_activity", "active"))
    elif _INACTIVE.search(m.sentence) or _REPLACED.search(m.text):
        facts.append(("organ_function.autoimmune_activity", "inactive"))
    return facts


_WEEKS: Final = (
    re.compile(r"\b(\d{1,2})\s*(?:\+\s*\d\s*)?/\s*40\b"),
    re.compile(
        r"\b(\d{1,2})\s*(?:\+\s*\d\s*)?(?:weeks?|wks?)'?\s*(?:of\s+)?(?:gestation|pregnan\w*|GA)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:gestational\s+age|gestation|GA)\s*(?:of\s*|:\s*|=\s*|at\s*)?(\d{1,2})\s*(?:weeks?|wks?|w)\b",
        re.I,
    ),
    re.compile(r"\bpregnant\b[^.;\d]{0,20}?(\d{1,2})\s*(?:weeks?|wks?)\b", re.I),
)
_NOT_PREGNANT: Final = re.compile(
    r"\bpregnancy\s+test\s+(?:was\s+|is\s+)?negative|\bnegative\s+(?:urine\s+|serum\s+)?"
    r"(?:pregnancy\s+test|(?:beta-?|β-?|b-?)?hcg)|\bpostpartum\b|\bpost-partum\b|\bdelivered\b",
    re.IGNORECASE,
)


def pregnancy(m: Mention) -> Facts:
    if _NOT_PREGNANT.search(m.sentence) or re.search(r"post-?partum", m.text, re.I):
        return [(m.concept_fact, False)]
    if re.search(r"hCG|pregnancy\s+test", m.text, re.I):
        # A test named without a negative result states nothing.
        return []
    if re.fullmatch(r"pregnancy", m.text.strip(), re.I) and not re.search(
        r"\b(?:current|ongoing|confirmed|viable|intra-?uterine|singleton|twin|weeks?|trimester"
        r"|/40|gestation)\b",
        m.sentence,
        re.I,
    ):
        # "pregnancy" alone (a category, a plan, a test) states no pregnancy.
        return []
    facts: Facts = [(m.concept_fact, True)]
    for pattern in _WEEKS:
        match = pattern.search(m.sentence)
        if match and 1 <= int(match[1]) <= 42:
            facts.append(("patient.gestational_age_weeks", int(match[1])))
            break
    return facts


# NGS drivers: the gene's own field of the case file and what its words mean.
_RESULT_POSITIVE: Final = (
    r"(?:positive|detected|identified|present|mutat\w*|mutant|fusion|rearrang\w*|translocat\w*"
    r"|altered|alteration|variant)"
)
_DRIVERS: Final[tuple[tuple[str, str, tuple[tuple[str, str], ...], bool], ...]] = (
    # gene, fact, (pattern -> value) in order, whether an unspecified positive sets "positive"
    (
        "EGFR",
        "biomarkers.egfr",
        (
            (
                r"exon\s*19\s*del\w*|del(?:etion)?\s*(?:in\s+)?(?:exon\s*)?19|ex19\s*del|19\s*del|E746",
                "exon19del",
            ),
            (r"L858R", "L858R"),
            (
                r"exon\s*20\s*ins\w*|ex20\s*ins|insertion\s+(?:in\s+)?exon\s*20|A767|S768_D770",
                "exon20ins",
            ),
            (r"G719\w*|L861Q|S768I|exon\s*18|E709\w*|compound", "other"),
        ),
        False,
    ),
    (
        "KRAS",
        "biomarkers.kras",
        ((r"G12C", "G12C"), (r"G12[ADRSV]|G13\w*|Q61\w*|A146\w*", "other")),
        False,
    ),
    (
        "BRAF",
        "biomarkers.braf",
        (
            (r"V600E", "V600E"),
            (r"V600K|V600D|non-?V600|class\s+(?:II|III|2|3)|G469\w*|K601\w*", "other"),
        ),
        False,
    ),
    (
        "ALK",
        "biomarkers.alk",
        ((r"fusion|rearrang\w*|translocat\w*|positive|detected", "positive"),),
        True,
    ),
    (
        "ROS1",
        "biomarkers.ros1",
        ((r"fusion|rearrang\w*|translocat\w*|positive|detected", "positive"),),
        True,
    ),
    (
        "RET",
        "biomarkers.ret",
        ((r"fusion|rearrang\w*|translocat\w*|positive|detected", "positive"),),
        True,
    ),
    ("MET", "biomarkers.met_exon14", ((r"exon\s*14|ex14|METex14", "positive"),), False),
    (
        "ESR1",
        "biomarkers.esr1",
        ((r"Y537\w*|D538\w*|E380\w*|L536\w*|" + _RESULT_POSITIVE, "mutated"),),
        True,
    ),
    (
        "PIK3CA",
        "biomarkers.pik3ca",
        ((r"H1047\w*|E545\w*|E542\w*|" + _RESULT_POSITIVE, "mutated"),),
        True,
    ),
)
_BRCA: Final = re.compile(r"\bg?BRCA([12])\b", re.IGNORECASE)
_NEGATIVE_RESULT: Final = re.compile(
    r"negative|wild[-\s]?type|\bWT\b|not\s+detected|undetected|\bneg\b|absent|no\s+(?:\w+\s+){0,2}?"
    r"(?:mutation|fusion|rearrangement|alteration|variant|amplification|deletion|insertion)",
    re.IGNORECASE,
)
_NEGATED_TOPIC: Final = re.compile(
    r"mutation|fusion|rearrangement|alteration|variant|deletion|insertion|skipping|exon", re.I
)


def driver(m: Mention) -> Facts:
    """A driver result: the gene's field and the variant the words give (EGFR exon 19
    deletion, KRAS G12C, an ALK fusion...). A gene named without a result ("EGFR TKI",
    "ALK testing sent") sets nothing; a negated result ("EGFR wild-type", "no ALK fusion",
    "EGFR, ALK and ROS1 negative") sets the field to negative."""
    words = m.text.upper()
    fusion = re.search(r"-(ALK|ROS1|RET)$", words)
    gene = fusion.group(1) if fusion else re.sub(r"^G", "", words)
    after = m.after
    if gene.startswith("BRCA"):
        number = _BRCA.search(m.text)
        if m.negated:
            if _NEGATIVE_RESULT.search(" ".join(m.modifiers)) or _NEGATED_TOPIC.search(after):
                return [("biomarkers.germline_brca", "negative")]
            return []
        if re.search(r"somatic|tumou?r[-\s]only|\btBRCA", m.sentence, re.I):
            return []
        if number and re.search(
            r"mutat\w*|pathogenic|likely\s+pathogenic|carrier|positive|deleterious|variant",
            after,
            re.I,
        ):
            return [("biomarkers.germline_brca", f"BRCA{number[1]}")]
        return []
    spec = next((d for d in _DRIVERS if d[0] == gene), None)
    if spec is None:
        return []
    _, fact, variants, _unspecified = spec
    if m.negated:
        negative_cue = _NEGATIVE_RESULT.search(" ".join(m.modifiers))
        if gene == "MET" and not re.search(r"exon\s*14|ex14", after + " ".join(m.modifiers), re.I):
            return []
        if negative_cue or _NEGATED_TOPIC.search(after):
            return [(fact, "negative")]
        return []
    if fusion:
        return [(fact, "positive")]
    for pattern, value in variants:
        if re.search(pattern, after, re.IGNORECASE):
            return [(fact, value)]
    return []


READERS: Final[dict[str, Callable[[Mention], Facts]]] = {
    "drug_name": drug_name,
    "varices": varices,
    "bleeding": bleeding,
    "irae": irae,
    "neuropathy": neuropathy,
    "renal": renal,
    "hepatic": hepatic,
    "lvef_pct": lvef_pct,
    "qtc_ms": qtc_ms,
    "autoimmune": autoimmune,
    "pregnancy": pregnancy,
    "driver": driver,
}


def read_value(extract: str | None, mention: Mention) -> Facts:
    """The facts a mention sets: its value reader's, or the concept's fixed value."""
    if extract is None:
        return _fixed(mention)
    return READERS[extract](mention)
