"""Critical patient facts written only in free text, read into the structured fields the
safety rules test.

The case format lets a clinician leave a structured field empty and write the fact in the
comorbidities, the medication list or the notes instead ("renal transplant 2015", "ulcerative
colitis flare on prednisolone 40 mg", "G2P1 at 22/40", "EF 35%"). A rule that tests
``diagnosis.transplant_history`` or ``organ_function.lvef_pct`` would then not fire: a hidden
contraindication. :func:`complete_from_text` fills such an empty field from what the text
states, and only an empty one: where the structured field and the text disagree, the
structured field wins and the disagreement is reported, so the team can reconcile them.

Every fact read keeps the words it was read from, so the plan can show it as "read from the
text" for the clinician to check. Negation and history are read the way a clinician reads
them (``clinical/text/negation.py``): "no history of autoimmune disease or
transplant", "not pregnant", "stopped tacrolimus", "does not want children"; a stable
endocrinopathy on replacement ("Hashimoto's on levothyroxine") is inactive autoimmunity, which
does not exclude immunotherapy (ESMO Guidelines: Haanen J et al., Management of toxicities
from immunotherapy, Ann Oncol 2022;33:1217-1238, section on pre-existing autoimmune disease).

Rule-based, not a language model: what it cannot read it leaves empty, and a rule whose input
stays empty reports ``unknown``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from clinical.results import lookup
from clinical.text.negation import clause_at, negated_at

CLINICAL_TEXT_SOURCE: Final = (
    "Rule-based reading of the comorbidities, medications and notes "
    "(clinical/text/clinicaltext.py), with NegEx-style negation; a structured field "
    "always wins over the text."
)

# Where the facts are written, most specific first.
_HISTORY_TEXTS: Final = (
    "patient.comorbidities",
    "organ_function.autoimmune_disease",
    "notes",
    "index_lesion.description",
    "diagnosis.subtype",
)
_LIST_TEXTS: Final = ("patient.comorbidities", "patient.medications")


@dataclass(frozen=True)
class TextFact:
    """One structured fact read from free text."""

    path: str  # the case-file field it stands for
    value: Any
    phrase: str  # the clause it was read from
    source: str  # the case-file path of that text

    def as_dict(self) -> dict[str, Any]:
        return {
            "fact": self.path,
            "value": self.value,
            "phrase": self.phrase,
            "source": self.source,
        }


def _texts(case: Mapping[str, Any], paths: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for path in paths:
        value = lookup(case, path)
        if isinstance(value, str) and value.strip():
            yield path, value
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, str) and item.strip():
                    yield path, item


def _prior_regimens(case: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    therapies = lookup(case, "diagnosis.prior_therapies")
    if isinstance(therapies, list):
        for therapy in therapies:
            if isinstance(therapy, Mapping) and isinstance(therapy.get("regimen"), str):
                yield "diagnosis.prior_therapies", therapy["regimen"]


# Someone else's history: "mother has lupus", "family history of myasthenia", "his brother's
# liver transplant".
_FAMILY: Final = re.compile(
    r"\b(?:mother|father|sister|brother|son|daughter|husband|wife|partner|aunt|uncle|cousin"
    r"|grand\w+|sibling\w*|parent\w*|family\s+history|FHx?)\b",
    re.IGNORECASE,
)


def _affirmed(text: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """Mentions that state the finding for the patient: not negated, not a relative's."""
    for match in pattern.finditer(text):
        if negated_at(text, match.start(), match.end()):
            continue
        if _FAMILY.search(clause_at(text, match.start(), match.end())):
            continue
        yield match


# --- transplant -------------------------------------------------------------------------------

_TRANSPLANT_KINDS: Final = (
    (
        "kidney",
        re.compile(
            r"\b(?:kidney|renal)(?:[-\s]+(?:and|&)[-\s]+pancreas)?[-\s]+(?:transplant\w*|graft"
            r"|allograft)|\b(?:KTx|KTR)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "liver",
        re.compile(
            r"\b(?:orthotopic\s+|living[-\s]donor\s+)?(?:liver|hepatic)[-\s]+(?:transplant\w*"
            r"|allograft)|\bOLT[x]?\b|\bLTx\b",
            re.IGNORECASE,
        ),
    ),
    (
        "allogeneic_hsct",
        re.compile(
            r"\ballo(?:geneic)?[-\s]*(?:HSCT|SCT|BMT|HCT|(?:haemato|hemato)poietic|stem[-\s]*cell"
            r"|bone[-\s]+marrow|transplant)\w*",
            re.IGNORECASE,
        ),
    ),
    (
        "other",
        re.compile(
            r"\b(?:heart|cardiac|lung|pulmonary|pancreas|intestinal|small[-\s]bowel"
            r"|solid[-\s]organ)[-\s]+transplant\w*|\btransplant\s+recipient|\bpost[-\s]transplant"
            r"|\bPTLD\b",
            re.IGNORECASE,
        ),
    ),
)
# A transplant that is an option, not a history: "listed for", "candidate", "referral".
_TRANSPLANT_PROSPECT: Final = re.compile(
    r"\bcandida\w*|\beligib\w*|\bevaluat\w*|\bassess\w*|\bwork[-\s]?up|\brefer\w*|\blist\w*"
    r"|\bwait\w*|\bcriteria\b|\bconsider\w*|\bdiscuss\w*|\bbridg\w*|\bplann\w*|\boption\w*"
    r"|\bsuitab\w*|\bmilan\b|\bucsf\b|\bup[-\s]to[-\s]7\b|\bdownstag\w*|\bfor\s+(?:a\s+)?"
    r"(?:liver\s+|renal\s+|kidney\s+)?transplant|\bif\b|\bwould\b|\bcould\b|\bintend\w*|\baim\w*",
    re.IGNORECASE,
)
# In running text (notes), a history needs a word of history or a date.
_HISTORY_MARK: Final = re.compile(
    r"\bs/p\b|\bstatus\s+post\b|\bhistory\s+of\b|\bh/o\b|\bhx\b|\bprior\b|\bprevious\w*|\bpast\b"
    r"|\breceived\b|\bunderwent\b|\bhad\s+an?\b|\bsince\b|\brecipient\b|\btransplanted\b"
    r"|\bgraft\s+function|\bfunctioning\s+graft|\b(?:19|20)\d\d\b|\bago\b|\bpost[-\s]"
    r"|\bafter\s+(?:an?\s+)?(?:kidney|renal|liver|allo)",
    re.IGNORECASE,
)
_NO_TRANSPLANT: Final = re.compile(
    r"\b(?:no|never|denies|nil)\b(?:\s+(?:known|prior|previous|past|other))?\s+(?:history|hx|h/o)"
    r"\b[^.;:\n]{0,60}?\btransplant|\bno\s+(?:prior|previous|history\s+of)\s+(?:\w+\s+){0,2}?"
    r"transplant|\btransplant(?:\s+history)?\s*:\s*(?:none|no|nil)\b",
    re.IGNORECASE,
)


def _transplant(case: Mapping[str, Any]) -> TextFact | None:
    sources = [*_texts(case, _HISTORY_TEXTS), *_prior_regimens(case)]
    for source, text in sources:
        listed = source in _LIST_TEXTS or source == "diagnosis.prior_therapies"
        for kind, pattern in _TRANSPLANT_KINDS:
            for match in _affirmed(text, pattern):
                clause = clause_at(text, match.start(), match.end())
                if _TRANSPLANT_PROSPECT.search(clause):
                    continue
                if kind == "allogeneic_hsct" and re.search(r"\bauto", clause, re.IGNORECASE):
                    continue
                if not listed and not _HISTORY_MARK.search(clause):
                    continue
                return TextFact("diagnosis.transplant_history", kind, clause, source)
    for source, text in _texts(case, _HISTORY_TEXTS):
        negative = _NO_TRANSPLANT.search(text)
        if negative:
            return TextFact(
                "diagnosis.transplant_history", "none", clause_at(text, *negative.span()), source
            )
    return None


# --- immunosuppression from the medication list --------------------------------------------

_IMMUNOSUPPRESSANTS: Final = re.compile(
    r"\b(?:tacrolimus|prograf|advagraf|envarsus|ciclosporin|cyclosporin[e]?|neoral|sandimmun\w*"
    r"|mycophenol\w*|cellcept|myfortic|MMF|azathioprine|imuran|sirolimus|rapamune|belatacept"
    r"|methotrexate|leflunomide|tofacitinib|baricitinib|upadacitinib|filgotinib|infliximab"
    r"|adalimumab|etanercept|certolizumab|golimumab|tocilizumab|sarilumab|abatacept"
    r"|ustekinumab|vedolizumab|secukinumab|ixekizumab|risankizumab|guselkumab|anakinra"
    r"|belimumab|anifrolumab|ocrelizumab|natalizumab|fingolimod|certican|zortress)\b",
    re.IGNORECASE,
)
# Everolimus is an immunosuppressant at transplant doses (0.75-1.5 mg twice daily) and an
# anticancer drug at 10 mg daily: below 5 mg a dose, or with a transplant, it counts.
_EVEROLIMUS: Final = re.compile(r"\beverolimus\b", re.IGNORECASE)
# Prednisone-equivalent factors (BNF, "Glucocorticoid therapy": prednisolone 5 mg =
# methylprednisolone 4 mg = dexamethasone 750 micrograms = hydrocortisone 20 mg = deflazacort 6 mg).
_STEROIDS: Final = {
    "prednisolone": 1.0,
    "prednisone": 1.0,
    "methylprednisolone": 1.25,
    "medrol": 1.25,
    "dexamethasone": 20 / 3,
    "hydrocortisone": 0.25,
    "deflazacort": 5 / 6,
}
_STEROID_RE: Final = re.compile(r"\b(" + "|".join(_STEROIDS) + r")\b", re.IGNORECASE)
_NOT_SYSTEMIC: Final = re.compile(
    r"\b(?:inhal\w*|cream|ointment|topical|eye\s+drops?|nasal|spray|enema|foam|suppositor\w*"
    r"|intra-?articular|ear\s+drops?)\b",
    re.IGNORECASE,
)
_PAST: Final = re.compile(
    r"\b(?:previous(?:ly)?|prior|former(?:ly)?|past|until|stopped|discontinued|ceased"
    r"|completed|tapered\s+off|weaned|held|no\s+longer)\b",
    re.IGNORECASE,
)
_DOSE: Final = re.compile(r"(\d+(?:\.\d+)?)\s*mg\b", re.IGNORECASE)
_TIMES: Final = (
    (re.compile(r"\b(?:qds|qid|four\s+times)\b|\bq6h\b", re.IGNORECASE), 4),
    (re.compile(r"\b(?:tds|tid|three\s+times)\b|\bq8h\b", re.IGNORECASE), 3),
    (re.compile(r"\b(?:bd|bid|b\.i\.d|twice)\b|\bq12h\b", re.IGNORECASE), 2),
)


def _daily_mg(entry: str, start: int) -> float | None:
    dose = _DOSE.search(entry, start)
    if dose is None:
        return None
    times = next((n for pattern, n in _TIMES if pattern.search(entry)), 1)
    return float(dose.group(1)) * times


def _current(entry: str) -> bool:
    return not _PAST.search(entry)


def immunosuppressants(case: Mapping[str, Any]) -> list[str]:
    """The patient's current systemic immunosuppressants (not steroids), as written."""
    transplant = lookup(case, "diagnosis.transplant_history") not in (None, "none")
    found = []
    for _source, entry in _texts(case, ("patient.medications",)):
        if not _current(entry):
            continue
        if any(_affirmed(entry, _IMMUNOSUPPRESSANTS)):
            found.append(entry)
            continue
        match = _EVEROLIMUS.search(entry)
        if match:
            per_dose = _DOSE.search(entry, match.end())
            if transplant or (per_dose is not None and float(per_dose.group(1)) < 5):
                found.append(entry)
    return found


def _immunosuppression(case: Mapping[str, Any]) -> TextFact | None:
    medications = lookup(case, "patient.medications")
    if not isinstance(medications, list):
        return None
    high: str | None = None
    low: str | None = None
    unknown_dose: str | None = None
    for _source, entry in _texts(case, ("patient.medications",)):
        match = _STEROID_RE.search(entry)
        if not match or not _current(entry) or _NOT_SYSTEMIC.search(entry):
            continue
        if negated_at(entry, match.start(), match.end()):
            continue
        daily = _daily_mg(entry, match.end())
        if daily is None:
            unknown_dose = unknown_dose or entry
            continue
        equivalent = daily * _STEROIDS[match.group(1).casefold()]
        if equivalent >= 10:
            high = high or entry
        else:
            low = low or entry
    other = immunosuppressants(case)
    path = "organ_function.immunosuppression"
    if high:
        return TextFact(path, "high_dose_steroids", high, "patient.medications")
    if other:
        return TextFact(path, "other_immunosuppressant", other[0], "patient.medications")
    if unknown_dose:
        return None  # a steroid of unstated dose: the rules ask for it
    if low:
        return TextFact(path, "low_dose_steroids", low, "patient.medications")
    phrase = "; ".join(str(m) for m in medications) or "no current medication"
    return TextFact(path, "none", phrase, "patient.medications")


# --- autoimmune disease and its activity ----------------------------------------------------

# Endocrine or skin autoimmunity that is stable on replacement unless the text says otherwise.
_REPLACED: Final = re.compile(
    r"\bhashimoto\w*|\bautoimmune\s+thyroid\w*|\bautoimmune\s+hypothyroid\w*|\bgraves\w*"
    r"|\btype\s*(?:1|i)\s+diabet\w*|\bT1DM?\b|\bvitiligo\b|\baddison\w*",
    re.IGNORECASE,
)
_AUTOIMMUNE: Final = re.compile(
    r"\bmyasthen\w*|\bulcerative\s+colitis|\bcrohn\w*|\binflammatory\s+bowel"
    r"|\blupus\b|\brheumatoid\b|\bpsoria\w*|\bmultiple\s+sclerosis"
    r"|\bautoimmune\s+(?:hepatitis|disease|encephalitis|colitis|\w+itis)|\bsarcoid\w*"
    r"|\bvasculitis|\bscleroderma|\bsystemic\s+sclerosis|\bsj[oö]gren\w*|\bankylosing"
    r"|\b(?:dermato|poly)myositis|\bguillain|\bcoeliac|\bceliac|\bprimary\s+biliary"
    r"|\bprimary\s+sclerosing|\bgiant\s+cell\s+arteritis|\bgranulomatosis\s+with"
    r"|\bbehcet\w*|\bimmune\s+thrombocytop\w*|\bautoimmune\s+haemoly\w*"
    r"|\bautoimmune\s+hemoly\w*",
    re.IGNORECASE,
)
# Abbreviations, in capitals and only as a listed comorbidity ("MS" is also milliseconds).
_AUTOIMMUNE_ABBREVIATIONS: Final = re.compile(r"\b(?:UC|IBD|SLE|RA|MS|ITP|MG)\b")
_ACTIVE: Final = re.compile(
    r"\bflar\w*|(?<![\w-])active\b|\buncontrolled|\brelaps\w*|\bexacerbat\w*|\bcrisis\b"
    r"|\brefractory|\bpoorly\s+controlled|\bnot\s+(?:well\s+)?controlled|\bescalat\w*"
    r"|\bsteroid[-\s]dependent|\bhospitali[sz]\w*|\bbloody\s+diarrh\w*|\bnewly\s+diagnosed",
    re.IGNORECASE,
)
_INACTIVE: Final = re.compile(
    r"\binactive\b|\bquiescent|\bremission|\bstable\b|\bcontrolled\b|\bresolved\b|\bremote\b"
    r"|\bchildhood\b|\bburnt[-\s]out|\bno\s+(?:recent\s+)?(?:flares?|activity|relapses?)\b"
    r"|\bnot\s+active\b|\blevothyroxine|\beuthyroid|\bthymectom\w*|\boff\s+(?:all\s+)?treatment"
    r"|\bno\s+(?:current\s+)?treatment",
    re.IGNORECASE,
)
_NO_AUTOIMMUNE: Final = re.compile(
    r"\b(?:no|never|denies|nil)\b(?:\s+(?:known|prior|previous|past|other))?"
    r"(?:\s+(?:history|hx|h/o)\s+of)?\s+autoimmun\w*|\bautoimmune(?:\s+disease)?\s*:\s*"
    r"(?:none|no|nil)\b",
    re.IGNORECASE,
)


def _activity(clause: str, replaced: bool, on_immunosuppression: bool) -> str | None:
    if any(_affirmed(clause, _ACTIVE)):
        return "active"
    if _INACTIVE.search(clause):
        return "inactive"
    if on_immunosuppression:
        # Needing systemic immunosuppression now is active disease for the immunotherapy
        # trials' exclusions (ICI SmPCs, section 4.4).
        return "active"
    return "inactive" if replaced else None


def autoimmune(case: Mapping[str, Any]) -> tuple[TextFact | None, TextFact | None]:
    """(organ_function.autoimmune_disease, organ_function.autoimmune_activity) from the text:
    the disease named, and its activity when the text says (or the medication list shows
    systemic immunosuppression); (none, none) on an explicit "no autoimmune disease"."""
    suppression = _immunosuppression(case)
    on_drugs = suppression is not None and suppression.value in (
        "high_dose_steroids",
        "other_immunosuppressant",
    )
    # Immunosuppression for a transplant is not autoimmune activity.
    transplant = _transplant(case)
    if lookup(case, "diagnosis.transplant_history") not in (None, "none") or (
        transplant is not None and transplant.value != "none"
    ):
        on_drugs = False
    texts = list(_texts(case, _HISTORY_TEXTS))
    best: tuple[TextFact, TextFact | None] | None = None
    for source, text in texts:
        patterns = [(_AUTOIMMUNE, False), (_REPLACED, True)]
        if source in _LIST_TEXTS:
            patterns.append((_AUTOIMMUNE_ABBREVIATIONS, False))
        for pattern, replaced in patterns:
            for match in _affirmed(text, pattern):
                clause = clause_at(text, match.start(), match.end())
                disease = TextFact("organ_function.autoimmune_disease", clause, clause, source)
                value = _activity(clause, replaced, on_drugs)
                act = (
                    TextFact("organ_function.autoimmune_activity", value, clause, source)
                    if value
                    else None
                )
                rank = {"active": 3, None: 2, "inactive": 1}[value]
                if (
                    best is None
                    or rank
                    > {"active": 3, None: 2, "inactive": 1}[best[1].value if best[1] else None]
                ):
                    best = (disease, act)
    if best is not None:
        return best
    for source, text in texts:
        negative = _NO_AUTOIMMUNE.search(text)
        if negative and not re.search(r"\bactive\b", negative.group(0), re.IGNORECASE):
            clause = clause_at(text, *negative.span())
            return (
                TextFact("organ_function.autoimmune_disease", "none", clause, source),
                TextFact("organ_function.autoimmune_activity", "none", clause, source),
            )
    return None, None


# --- pregnancy and breastfeeding -------------------------------------------------------------

_WEEKS: Final = (
    re.compile(r"\b(\d{1,2})\s*(?:\+\s*\d\s*)?/\s*40\b"),
    re.compile(
        r"\b(\d{1,2})\s*(?:\+\s*\d\s*)?(?:completed\s+)?(?:weeks?|wks?)'?\s*(?:of\s+)?"
        r"(?:gestation|pregnan\w*|GA)\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?:gestational\s+age|gestation|GA)\s*(?:of\s*|:\s*|=\s*|at\s*)?(\d{1,2})\s*"
        r"(?:\+\s*\d\s*)?(?:weeks?|wks?|w)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\bpregnant\b[^.;\n\d]{0,20}?(\d{1,2})\s*(?:weeks?|wks?)\b", re.IGNORECASE),
)
_PREGNANT: Final = re.compile(
    r"\bpregnant\b|\b(?:current|ongoing|confirmed|viable|intra-?uterine|singleton|twin)\s+"
    r"pregnancy|\b(?:first|second|third|1st|2nd|3rd)\s+trimester\b",
    re.IGNORECASE,
)
# "wants to become pregnant", "if she were pregnant", "was pregnant in 2019".
_NOT_NOW: Final = re.compile(
    r"\b(?:become|becoming|get|getting|fall|falling|conceive|wish\w*|want\w*|plan\w*|hop\w*"
    r"|desire\w*|try\w*|future|if|when|before|after|was|were|had|while|previous\w*|prior"
    r"|past|avoid\w*|contracept\w*|delivered|postpartum|post-partum)\b",
    re.IGNORECASE,
)
_NOT_PREGNANT: Final = re.compile(
    r"\bnot\s+(?:currently\s+)?pregnant\b|\bpregnancy\s+test\s+(?:was\s+|is\s+)?negative"
    r"|\bnegative\s+(?:urine\s+|serum\s+)?(?:pregnancy\s+test|(?:beta-?|β-?|b-?)?hcg)"
    r"|\b(?:beta-?|β-?|b-?)hcg\s+(?:was\s+|is\s+)?negative|\bpregnancy\s+(?:has\s+been\s+)?"
    r"(?:excluded|ruled\s+out)|\bpostpartum\b|\bpost-partum\b|\bdelivered\b",
    re.IGNORECASE,
)
_BREASTFEEDING: Final = re.compile(
    r"\bbreast[-\s]?feed\w*|\bbreast[-\s]?fed\b|\blactating\b|\blactation\b"
    r"|\bnursing\s+(?:her\s+|an?\s+|the\s+)?(?:infant|baby|child|newborn)",
    re.IGNORECASE,
)


def _pregnancy(case: Mapping[str, Any]) -> list[TextFact]:
    found: list[TextFact] = []
    for source, text in _texts(case, _HISTORY_TEXTS):
        for pattern in _WEEKS:
            for match in _affirmed(text, pattern):
                clause = clause_at(text, match.start(), match.end())
                if _NOT_NOW.search(text[max(0, match.start() - 40) : match.start()]):
                    continue
                weeks = int(match.group(1))
                if 1 <= weeks <= 42:
                    return [
                        TextFact("patient.pregnant", True, clause, source),
                        TextFact("patient.gestational_age_weeks", weeks, clause, source),
                    ]
        for match in _affirmed(text, _PREGNANT):
            clause = clause_at(text, match.start(), match.end())
            before = text[max(0, match.start() - 40) : match.start()]
            if _NOT_NOW.search(before) or _NOT_PREGNANT.search(clause):
                continue
            found = [TextFact("patient.pregnant", True, clause, source)]
    if found:
        return found
    for source, text in _texts(case, _HISTORY_TEXTS):
        negative = _NOT_PREGNANT.search(text)
        if negative:
            clause = clause_at(text, *negative.span())
            return [TextFact("patient.pregnant", False, clause, source)]
    return []


def _breastfeeding(case: Mapping[str, Any]) -> TextFact | None:
    negative: TextFact | None = None
    for source, text in _texts(case, _HISTORY_TEXTS):
        for match in _BREASTFEEDING.finditer(text):
            clause = clause_at(text, match.start(), match.end())
            before = text[max(0, match.start() - 40) : match.start()]
            if negated_at(text, match.start(), match.end()) or re.search(
                r"\b(?:stopped|finished|weaned|ceased|completed|wish\w*|want\w*|plan\w*|hop\w*"
                r"|future|after|previous\w*|prior)\b",
                before,
                re.IGNORECASE,
            ):
                negative = negative or TextFact("patient.breastfeeding", False, clause, source)
                continue
            return TextFact("patient.breastfeeding", True, clause, source)
    return negative


# --- heart ------------------------------------------------------------------------------------

_LVEF: Final = re.compile(
    r"\b(?:LV\s*EF|LVEF|EF|ejection\s+fraction)\b[^0-9%.;\n]{0,30}?(\d{1,2}(?:\.\d+)?)\s*"
    r"(?:(?:-|–|to)\s*(\d{1,2}(?:\.\d+)?)\s*)?(?:%|percent|per\s*cent)",
    re.IGNORECASE,
)
_QTC: Final = re.compile(
    r"\bQTc[FB]?\b(?:\s+interval)?[^0-9.;\n]{0,20}?(\d{3})\s*(?:ms|msec|milliseconds)?\b",
    re.IGNORECASE,
)
_HEART_RATE: Final = re.compile(
    r"\b(?:heart\s+rate|HR|pulse|resting\s+HR|bradycardi\w*)\b[^0-9.;\n]{0,15}?(\d{2,3})\s*"
    r"(?:bpm|/\s*min|beats)|\b(\d{2,3})\s*bpm\b",
    re.IGNORECASE,
)


_LATER_PCT: Final = re.compile(
    r"\b(?:now|currently|down\s+to|fell\s+to|decreased\s+to|dropped\s+to|reduced\s+to"
    r"|declined\s+to)\s*(\d{1,2})\s*(?:%|percent)|(?:->|→)\s*(?=\d)(\d{1,2})\s*%",
    re.IGNORECASE,
)


def _number(case: Mapping[str, Any], path: str, pattern: re.Pattern[str]) -> TextFact | None:
    """The last value the texts state (text is usually written in time order: "LVEF 60 % in
    2020, 35 % now"); a range gives its lower end, the conservative reading for a threshold."""
    last: TextFact | None = None
    for source, text in _texts(case, _HISTORY_TEXTS):
        for match in pattern.finditer(text):
            groups = [float(g) for g in match.groups() if g is not None]
            if not groups:
                continue
            value = min(groups) if path == "organ_function.lvef_pct" else groups[0]
            clause = clause_at(text, match.start(), match.end())
            if path == "organ_function.lvef_pct":
                # "LVEF 62 % in 2020, now 38 %": the later value is the current one.
                scope = text[match.end() : match.end() + len(clause)]
                later = [m.group(1) or m.group(2) for m in _LATER_PCT.finditer(scope)]
                if later:
                    value = float(later[-1])
            number: int | float = int(value) if value == int(value) else value
            last = TextFact(path, number, clause, source)
    return last


# --- the whole reading -------------------------------------------------------------------------


def read_text_facts(case: Mapping[str, Any]) -> list[TextFact]:
    """Every critical structured fact the free text states, whatever the structured fields
    say (see :func:`complete_from_text` for which one wins)."""
    facts: list[TextFact] = []
    transplant = _transplant(case)
    if transplant is not None:
        facts.append(transplant)
    disease, activity = autoimmune(case)
    facts += [f for f in (disease, activity) if f is not None]
    suppression = _immunosuppression(case)
    if suppression is not None:
        facts.append(suppression)
    facts += _pregnancy(case)
    feeding = _breastfeeding(case)
    if feeding is not None:
        facts.append(feeding)
    for path, pattern, low, high in (
        ("organ_function.lvef_pct", _LVEF, 5, 90),
        ("organ_function.qtc_ms", _QTC, 300, 700),
        ("organ_function.heart_rate_bpm", _HEART_RATE, 20, 250),
    ):
        found = _number(case, path, pattern)
        if found is not None and low <= found.value <= high:
            facts.append(found)
    return facts


def _set(case: dict[str, Any], path: str, value: Any) -> None:
    section, key = path.split(".", 1)
    node = case.get(section)
    if not isinstance(node, dict):
        node = {}
        case[section] = node
    node[key] = value


def _same(structured: Any, read: Any) -> bool:
    if isinstance(structured, str) and isinstance(read, str):
        return structured.strip().casefold() == read.strip().casefold()
    if isinstance(structured, int | float) and isinstance(read, int | float):
        return abs(float(structured) - float(read)) < 1
    return bool(structured == read)


def _agrees(path: str, structured: Any, read: Any) -> bool:
    if path == "organ_function.autoimmune_disease":
        # Free-text field against free text: they disagree only on "none" against a disease.
        none = ("none", "no", "nil", "")
        return (str(structured).strip().casefold() in none) == (str(read).casefold() in none)
    if path == "organ_function.immunosuppression" and read == "none":
        return True  # the medication list may simply be incomplete
    return _same(structured, read)


def complete_from_text(
    case: Mapping[str, Any], *, skip: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The case with its empty critical fields filled from the text; the facts filled so
    (each with its phrase); and the disagreements between a structured field and the text
    (the structured value kept). ``skip``: fields the medspaCy reader (clinical/text/reader.py)
    already filled or compared, left to it."""
    completed = copy.deepcopy(dict(case))
    filled: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    # "Autoimmune disease: none" answers its activity too (and the other way round), so the
    # rule on active disease reads "passed", not "cannot be checked".
    disease = lookup(case, "organ_function.autoimmune_disease")
    activity = lookup(case, "organ_function.autoimmune_activity")
    if isinstance(disease, str) and disease.strip().casefold() in ("none", "no", "nil"):
        if activity is None:
            _set(completed, "organ_function.autoimmune_activity", "none")
    elif activity == "none" and disease is None:
        _set(completed, "organ_function.autoimmune_disease", "none")
    for fact in read_text_facts(case):
        if fact.path in skip:
            continue
        structured = lookup(case, fact.path)
        if structured is None or structured == "":
            _set(completed, fact.path, fact.value)
            filled.append(fact.as_dict())
        elif not _agrees(fact.path, structured, fact.value):
            conflicts.append({**fact.as_dict(), "structured": structured})
    # A transplant read from the text changes which drugs count as immunosuppressants.
    if any(f["fact"] == "diagnosis.transplant_history" for f in filled):
        suppression = _immunosuppression(completed)
        if suppression is not None and lookup(case, suppression.path) is None:
            _set(completed, suppression.path, suppression.value)
            filled = [f for f in filled if f["fact"] != suppression.path]
            filled.append(suppression.as_dict())
    return completed, filled, conflicts


# --- missing facts that other facts make likely ---------------------------------------------

_HEART_FAILURE: Final = re.compile(
    r"\bheart\s+failure|\bcardiac\s+failure|\bHF[rm]?EF\b|\bcardiomyopath\w*|\bNYHA\s+(?:class\s+)?"
    r"(?:II|III|IV|[234])\b|\breduced\s+(?:LV\s+)?(?:ejection\s+fraction|systolic\s+function)"
    r"|\bLV\s+(?:systolic\s+)?dysfunction|\bleft\s+ventricular\s+(?:systolic\s+)?dysfunction",
    re.IGNORECASE,
)
_TRANSPLANT_DRUGS: Final = re.compile(
    r"\b(?:tacrolimus|prograf|advagraf|envarsus|ciclosporin|cyclosporin[e]?|neoral|sirolimus"
    r"|rapamune|belatacept|mycophenol\w*|cellcept|myfortic|certican|zortress)\b",
    re.IGNORECASE,
)
_OBSTETRIC: Final = re.compile(
    r"\bantenatal|\bprenatal|\bobstetric\w*|\bfetal\b|\bfoetal\b|\bgravid\b|\bmidwi\w*",
    re.IGNORECASE,
)


def _first_stated(case: Mapping[str, Any], pattern: re.Pattern[str]) -> str | None:
    for _source, text in _texts(case, (*_HISTORY_TEXTS, "patient.medications")):
        for match in _affirmed(text, pattern):
            return clause_at(text, match.start(), match.end())
    return None


def likely_missing(case: Mapping[str, Any]) -> dict[str, str]:
    """Critical facts that are not recorded but that other facts of the case make likely: an
    unmeasured LVEF in heart failure, a transplant history in a patient on tacrolimus, a
    pregnancy status in a patient under obstetric care. Each with the reason, in words."""
    likely: dict[str, str] = {}
    if lookup(case, "organ_function.lvef_pct") is None:
        clause = _first_stated(case, _HEART_FAILURE)
        if clause:
            likely["organ_function.lvef_pct"] = f'heart failure on record, "{clause}"'
    if lookup(case, "diagnosis.transplant_history") is None:
        clause = _first_stated(case, _TRANSPLANT_DRUGS)
        if clause and lookup(case, "organ_function.autoimmune_disease") in (None, "none"):
            likely["diagnosis.transplant_history"] = (
                f'on a calcineurin or mTOR inhibitor or mycophenolate, "{clause}"'
            )
    if lookup(case, "patient.pregnant") is None:
        clause = _first_stated(case, _OBSTETRIC)
        if clause:
            likely["patient.pregnant"] = f'obstetric care on record, "{clause}"'
    return likely
