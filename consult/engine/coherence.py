"""Whether a plan contradicts itself, read as a tumor board reads it: a pathway or an alternative
that gives what the same plan rules out, or an intent its steps do not bear out.

A pure function of a ``mdtboard.plan/1`` document: ``plan_findings(plan)`` returns a list of
``Finding`` (a property name, the items involved, one sentence for the clinician), empty when
the plan is coherent. Clinician review refuses an amended version with a finding; the engine's
pathway check (issue 23) adds its own properties to ``CHECKS`` and runs them after the gate.

Reading is deliberately precise rather than eager: a finding blocks a clinician's amendment, so
it is raised only where the words leave no doubt. Drugs are read with the engine's lexicon
(brands, regimens and classes resolved, negations left out); procedures by their family
(liver resection, lobectomy, ablation, chemoembolisation, SBRT, liver or stem-cell
transplant), and a procedure counts only in an item of its own modality ("radiotherapy after
surgery" does not recommend surgery).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from clinical import lexicon
from clinical.vocab import Modality

RECOMMENDS_RULED_OUT: Final = "recommends_ruled_out"
INTENT_CONTRADICTS_STEPS: Final = "intent_contradicts_steps"
TWO_BACKBONES: Final = "two_backbones_of_one_class"
BASELINE_AFTER_TREATMENT: Final = "baseline_after_treatment"
ALTERNATIVE_ALREADY_TRUE: Final = "alternative_when_already_true"
WRONG_SEX_WORDING: Final = "wording_for_the_wrong_sex"


@dataclass(frozen=True)
class Finding:
    """One way a plan contradicts itself."""

    property: str
    items: tuple[str, ...]  # the plan's own words for the items involved
    sentence: str


# --- procedures ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """A kind of procedure: its generic words, its specific kinds (tag -> words), the
    modalities of an item that can give it, and whether an item named only generically ("a
    resection") gives a specific kind the plan rules out ("liver resection")."""

    name: str
    generic: tuple[str, ...]
    specific: Mapping[str, tuple[str, ...]]
    modalities: frozenset[str]
    generic_gives_specific: bool


FAMILIES: Final[tuple[Family, ...]] = (
    Family(
        "surgery",
        (r"resect\w*", r"surgery", r"surgical", r"operation", r"excision"),
        {
            "liver_resection": (
                r"hepatectom\w*",
                r"(?:liver|hepatic)\s+resection",
                r"segmentectomy of the liver",
            ),
            "lobectomy": (r"lobectom\w*", r"bilobectom\w*"),
            "pneumonectomy": (r"pneumonectom\w*",),
            "sublobar": (r"segmentectom\w*", r"wedge\s+resection"),
            "mastectomy": (r"mastectom\w*",),
            "breast_conserving": (
                r"breast[- ]conserving",
                r"lumpectom\w*",
                r"wide\s+local\s+excision",
            ),
            "metastasectomy": (r"metastasectom\w*",),
        },
        frozenset({"surgery"}),
        True,
    ),
    Family(
        "transplant",
        (r"transplant\w*",),
        {
            "liver_transplant": (
                r"(?:liver|hepatic|orthotopic)\s+transplant\w*",
                r"transplant\w* of the liver",
            ),
            "stem_cell_transplant": (
                r"stem[- ]cell\s+transplant\w*",
                r"\b(?:auto|allo)-?sct\b",
                r"\bhsct\b",
                r"\basct\b",
                r"(?:autologous|allogeneic)\s+(?:stem[- ]cell\s+)?transplant\w*",
                r"bone\s+marrow\s+transplant\w*",
            ),
        },
        frozenset({"transplant", "systemic", "surgery"}),
        True,
    ),
    Family(
        "ablation",
        (
            r"ablat\w*",
            r"\brfa\b",
            r"\bmwa\b",
            r"radiofrequency",
            r"microwave",
            r"ethanol\s+injection",
        ),
        {},
        frozenset({"ablation"}),
        True,
    ),
    Family(
        "chemoembolisation",
        (r"chemoemboli[sz]\w*", r"\b(?:deb-?)?tace\b", r"transarterial\s+chemo\w*"),
        {},
        frozenset({"locoregional"}),
        True,
    ),
    Family(
        "radioembolisation",
        (r"radioemboli[sz]\w*", r"\btare\b", r"\bsirt\b", r"\by-?90\b", r"yttrium"),
        {},
        frozenset({"locoregional"}),
        True,
    ),
    Family(
        "radiotherapy",
        (r"radiotherap\w*", r"radiation", r"irradiat\w*", r"chemoradi\w*"),
        {
            "sbrt": (r"\bsbrt\b", r"\bsabr\b", r"stereotactic\s+(?:body|ablative)"),
            "radiosurgery": (r"\bsrs\b", r"radiosurgery"),
            "brachytherapy": (r"brachytherap\w*",),
            "whole_brain": (r"whole[- ]brain",),
        },
        frozenset({"radiotherapy"}),
        # "Whole-breast radiotherapy" is not SBRT: a specific kind ruled out is not given by
        # radiotherapy of another kind, however it is worded.
        False,
    ),
    Family(
        "observation",
        (
            r"watchful\s+waiting",
            r"watch[- ]and[- ]wait",
            r"active\s+(?:surveillance|observation)",
        ),
        {},
        frozenset({"surveillance"}),
        True,
    ),
)


def _words(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(patterns) + r")", re.IGNORECASE)


_GENERIC: Final = {f.name: _words(f.generic) for f in FAMILIES}
_SPECIFIC: Final = {
    (f.name, tag): _words(words) for f in FAMILIES for tag, words in f.specific.items()
}
# "unsuited to TACE", "no transplant", "instead of resection", "after surgery": named only to
# set it aside, or as what the item follows.
_SET_ASIDE = re.compile(
    r"\b(?:no|not|without|unsuited\s+to|unsuitable\s+for|ineligible\s+for|instead\s+of|"
    r"in\s+place\s+of|rather\s+than|unfit\s+for|declin\w*|contraindicat\w*|after|following|"
    r"once|previous|prior)\b[^.;,()]{0,30}$",
    re.IGNORECASE,
)
# "surgery if the tumour progresses": offered only under a condition, not as a step.
_CONDITIONAL = re.compile(
    r"^[\s,]*(?:only\s+)?(?:if|when|should|in\s+case|unless)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Procedures:
    """The procedure families a text names, each with the specific kinds it names."""

    kinds: Mapping[str, frozenset[str]]

    @property
    def families(self) -> frozenset[str]:
        return frozenset(self.kinds)


def procedures(text: str, *, set_aside: bool = True, conditional: bool = True) -> Procedures:
    """The procedures ``text`` names. With ``set_aside`` a mention closely preceded by "no",
    "after", "instead of"... does not count (what an item follows or replaces is not what it
    gives); without ``conditional`` neither does one followed by "if" or "when"."""
    lower = lexicon.normalise(text).lower()
    found: dict[str, set[str]] = {}

    def counts(match: re.Match[str]) -> bool:
        if set_aside and _SET_ASIDE.search(lower[: match.start()]):
            return False
        return conditional or not _CONDITIONAL.match(lower[match.end() :])

    for family in FAMILIES:
        tags = {
            tag
            for tag in family.specific
            if any(counts(m) for m in _SPECIFIC[(family.name, tag)].finditer(lower))
        }
        if tags or any(counts(m) for m in _GENERIC[family.name].finditer(lower)):
            found[family.name] = tags
    return Procedures({k: frozenset(v) for k, v in found.items()})


def _gives_procedure(ruled_out: Procedures, item: Procedures, modality: str) -> list[str]:
    """The families ruled out that the item gives."""
    out = []
    for family in FAMILIES:
        if family.name not in ruled_out.kinds or family.name not in item.kinds:
            continue
        if modality not in family.modalities:
            continue
        wanted, offered = ruled_out.kinds[family.name], item.kinds[family.name]
        if not wanted or wanted & offered or (not offered and family.generic_gives_specific):
            out.append(family.name)
    return out


# --- drugs --------------------------------------------------------------------------------------
# A ruled-out option that names several drugs in one of these ways names a combination, not a
# list of single drugs each ruled out ("carboplatin plus paclitaxel"; "lenvatinib or sorafenib").
_COMBINATION = re.compile(r"\bplus\b|\+|\bwith\b|\band\b|\bcombin\w*|\bdoublet\b|\btriplet\b")
_MONOTHERAPY = re.compile(r"\bmonotherap\w*|\balone\b|\bsingle[- ]agent\b", re.IGNORECASE)
_CHEMO_IMMUNO = re.compile(r"chemo-?immuno|immuno-?chemo", re.IGNORECASE)
# Chemotherapy with radiotherapy: an option of this kind is not given by the drugs alone.
_COMBINED_MODALITY = re.compile(r"combined[- ]modality|chemoradi\w*", re.IGNORECASE)
# "R-mini-CHOP" is not the full-dose "R-CHOP" a plan rules out for an older patient.
_DOSE_VARIANT = re.compile(
    r"\bmini\b|-mini-|attenuat\w*|reduced[- ]dose|dose[- ]reduced|dose[- ]adjusted|\bda-|"
    r"low[- ]dose|full[- ]dose|high[- ]dose|metronomic",
    re.IGNORECASE,
)
_SYSTEMIC_WORDS = re.compile(
    r"^\s*(?:all\s+|any\s+)?(?:palliative\s+|first-line\s+|adjuvant\s+|neoadjuvant\s+)?"
    r"systemic\s+(?:therap\w*|treatment\w*|anticancer\s+\w+)\b",
    re.IGNORECASE,
)
# The engine's note of where a withdrawn drug was: "capecitabine (in: Single-agent ...)".
_WHERE_FROM = re.compile(r"\s*\(in:.*$", re.DOTALL)
# An option that is follow-up ("Surveillance after resection") gives surveillance, not the
# operation it follows: resecting the lesion does not recommend what was ruled out.
_SURVEILLANCE_OPTION = re.compile(
    r"^\s*(?:active\s+)?"
    r"(?:surveillance|follow[- ]up|observation|watchful\s+waiting|watch\s+and\s+wait)\b",
    re.IGNORECASE,
)
# Drugs that protect or support rather than treat the cancer: a regimen ruled out is not
# "given" by an item because both list an antiemetic or a bone agent.
_SUPPORTIVE_CLASSES: Final = frozenset(
    {"bone_agent", "bisphosphonate", "antibiotic", "penicillin", "cephalosporin", "beta_lactam"}
)


def _core(drugs: Iterable[str]) -> set[str]:
    """The drugs that treat the cancer (all of them when none does: eradication therapy)."""
    drugs = set(drugs)
    return {d for d in drugs if not (lexicon.classes_of(d) & _SUPPORTIVE_CLASSES)} or drugs


def _item_given(item: Mapping[str, Any]) -> lexicon.Given:
    """The drugs an item gives. A referral gives none: the gate's "Before starting ribociclib:
    confirm ..." step names the drug it protects, it is not a second CDK4/6 backbone."""
    if str(item.get("modality") or "") == Modality.REFERRAL:
        return lexicon.given([], "")
    return lexicon.given(
        [str(a) for a in item.get("agents") or []],
        str(item.get("description") or ""),
        notes=[str(n) for n in item.get("dose_adjustments") or []],
    )


def _item_families(item: Mapping[str, Any]) -> set[str]:
    modality = str(item.get("modality") or "")
    families = set(procedures(_item_text(item)).families)
    families |= {f.name for f in FAMILIES if modality in f.modalities and not f.specific}
    if modality == "radiotherapy" or _COMBINED_MODALITY.search(_item_text(item)):
        families.add("radiotherapy")
    return families


def _gives_class(item: Mapping[str, Any], gives: lexicon.Given, cls: str) -> bool:
    if cls in ("chemotherapy", "immunotherapy") and _CHEMO_IMMUNO.search(_item_text(item)):
        return True
    return gives.gives_class(cls)


def _gives_ruled_out_drug(gives: lexicon.Given, drug: str, ruled_out: set[str]) -> bool:
    """Whether the item gives a ruled-out drug: by name, or by a class it names whose every
    member is ruled out. "A CNS-active ALK inhibitor is given" does not give lorlatinib when
    only lorlatinib is ruled out: alectinib fulfils it."""
    if drug in gives.drugs:
        return True
    return any(
        drug in members and members <= lexicon.with_parents(ruled_out)
        for members in (lexicon.members(cls) for cls in gives.open_classes)
    )


def _gives_ruled_out_drugs(option: str, item: Mapping[str, Any]) -> bool:
    """Whether the item gives the drugs (or drug classes) the option rules out."""
    ruled = lexicon.given([], option)
    gives = _item_given(item)
    text = _item_text(item)
    if bool(_DOSE_VARIANT.search(option)) != bool(_DOSE_VARIANT.search(text)):
        return False  # the same drugs at another dose is another option
    # What the option gives besides its drugs (radiotherapy, an operation) the item must give
    # too ("ABVD-based combined modality" is not ABVD alone).
    needed = set(procedures(option).families)
    if _COMBINED_MODALITY.search(option):
        needed.add("radiotherapy")
    if needed - _item_families(item):
        return False
    named = set(ruled.drugs)
    if named:
        wanted, offered = _core(named), _core(gives.drugs)
        if _MONOTHERAPY.search(option):
            return offered == wanted  # "rituximab monotherapy" is not given by BR
        regimen = bool(lexicon.read(option).regimen_drugs)
        if len(wanted) == 1 or not (regimen or _COMBINATION.search(option.lower())):
            # One drug, or a list of drugs each ruled out: any item that gives one of them.
            return any(_gives_ruled_out_drug(gives, d, wanted) for d in wanted)
        # A combination or a named regimen: an item that gives that combination, nothing less
        # and nothing more (carboplatin-pemetrexed ruled out for pembrolizumab with
        # carboplatin-pemetrexed is a choice, not a contradiction).
        return lexicon.with_parents(wanted) == lexicon.with_parents(offered)
    classes = set(ruled.open_classes)
    if _CHEMO_IMMUNO.search(option):
        classes |= {"chemotherapy", "immunotherapy"}
    return all(_gives_class(item, gives, c) for c in classes)


def _gives_ruled_out(option: str, item: Mapping[str, Any]) -> bool:
    modality = str(item.get("modality") or "")
    option = _WHERE_FROM.sub("", option)
    ruled = lexicon.given([], option)
    if ruled.drugs or ruled.open_classes:
        return _gives_ruled_out_drugs(option, item)
    if _SYSTEMIC_WORDS.search(option):
        return modality == "systemic"
    if _SURVEILLANCE_OPTION.search(option):
        text = _item_text(item)
        return modality == Modality.SURVEILLANCE or bool(_SURVEILLANCE_OPTION.search(text))
    own = _own_procedure(option)
    if own.kinds:
        return bool(_gives_procedure(own, procedures(_item_text(item)), modality))
    # Words neither the lexicon nor the procedure families know ("intensive induction"): the
    # item recommends them when it says them, not negated.
    return lexicon.written(option, _item_text(item))


def _own_procedure(option: str) -> Procedures:
    """The procedure an option is: the family it names first, with the specific kinds of that
    family it names ("Breast-conserving surgery ... with whole-breast radiotherapy" is an
    operation)."""
    lower = lexicon.normalise(option).lower()
    first: tuple[int, str] | None = None
    for family in FAMILIES:
        starts = [m.start() for m in _GENERIC[family.name].finditer(lower)]
        for tag in family.specific:
            starts += [m.start() for m in _SPECIFIC[(family.name, tag)].finditer(lower)]
        if starts and (first is None or min(starts) < first[0]):
            first = (min(starts), family.name)
    if first is None:
        return Procedures({})
    return Procedures({first[1]: procedures(option, set_aside=False).kinds[first[1]]})


# --- the properties -----------------------------------------------------------------------------
def _components(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    recommendation = plan.get("recommendation") or {}
    return [c for c in recommendation.get("components") or [] if isinstance(c, Mapping)]


def _item_text(item: Mapping[str, Any]) -> str:
    return str(item.get("description") or "").strip()


def _place(item: Mapping[str, Any]) -> str:
    if item.get("role") == "alternative":
        return f"alternative {item.get('rank') or ''}".strip()
    return f"pathway step {item.get('order') or ''}".strip()


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip(" ,;:") + "…"


def recommends_ruled_out(plan: Mapping[str, Any]) -> list[Finding]:
    """An item of the pathway or an alternative gives an option the plan rules out."""
    findings = []
    for rejected in plan.get("rejected_options") or []:
        if not isinstance(rejected, Mapping):
            continue
        option = str(rejected.get("option") or "").strip()
        if not option:
            continue
        for item in _components(plan):
            if item.get("role", "primary") not in ("primary", "alternative"):
                continue
            if _gives_ruled_out(option, item):
                text = _item_text(item)
                findings.append(
                    Finding(
                        RECOMMENDS_RULED_OUT,
                        (text, option),
                        f"The plan recommends “{_short(text)}” ({_place(item)}) but rules out "
                        f"“{_short(_WHERE_FROM.sub('', option))}”: keep one of them.",
                    )
                )
    return findings


ACTIVE: Final = frozenset(
    {"surgery", "ablation", "locoregional", "systemic", "radiotherapy", "transplant"}
)
_CURATIVE_LOCAL: Final = frozenset({"surgery", "ablation", "transplant", "radiotherapy"})
# Cellular and high-dose therapies, and eradication therapy (gastric MALT lymphoma), cure
# without chemotherapy; monoclonal antibodies or endocrine therapy alone do not.
_CURATIVE_SYSTEMIC_CLASSES: Final = frozenset({"chemotherapy", "car_t", "antibiotic"})
# An adjuvant step belongs to the curative treatment whose operation it follows (the operation
# may be on record rather than in the plan: adjuvant alectinib after a lobectomy).
_CURATIVE_SYSTEMIC_WORDS = re.compile(
    r"car[- ]?t\b|stem[- ]cell|high-dose|eradication|chemoradi|\badjuvant\b"
    r"|\bafter\s+(?:complete\s+|curative\s+)?(?:resection|surgery|operation)\b|post-?operative",
    re.IGNORECASE,
)
# A local treatment a palliative plan may give: for symptoms, a complication or a metastasis.
_PALLIATIVE_LOCAL = re.compile(
    r"palliat\w*|symptom\w*|relie\w*|decompress\w*|stabili[sz]\w*|fixation|bypass|stent\w*|"
    r"debulk\w*|cytoreduct\w*|toilet|bleed\w*|ha?emorrhag\w*|ha?emosta\w*|obstruct\w*|"
    r"fractur\w*|pain\w*|metasta\w*|brain|spinal|cord\s+compression|fungat\w*|ulcerat\w*",
    re.IGNORECASE,
)
_INTENT_WORDS: Final = {
    "curative": "curative",
    "palliative": "palliative",
    "surveillance": "surveillance",
}


def curative_capable(item: Mapping[str, Any]) -> bool:
    modality = str(item.get("modality") or "")
    if modality in _CURATIVE_LOCAL:
        return True
    # "TACE to downstage, then liver transplant": a step that leads to a curative one (but not
    # "surgery if the tumour progresses", offered only under a condition).
    named = procedures(_item_text(item), conditional=False).families
    if named & {"surgery", "transplant", "ablation", "radiotherapy"}:
        return True
    if modality != "systemic":
        return False
    gives = _item_given(item)
    if any(gives.gives_class(c) for c in _CURATIVE_SYSTEMIC_CLASSES):
        return True
    return bool(_CURATIVE_SYSTEMIC_WORDS.search(_item_text(item)))


def intent_contradicts_steps(plan: Mapping[str, Any]) -> list[Finding]:
    """The stated intent does not fit the recommended pathway: surveillance with an active
    treatment, a curative intent with no step that can cure, or a palliative intent with an
    operation, ablation or transplant aimed at the tumour rather than at a symptom."""
    intent = str((plan.get("recommendation") or {}).get("intent") or "")
    if intent not in _INTENT_WORDS:
        return []
    pathway = [c for c in _components(plan) if c.get("role", "primary") == "primary"]
    if not pathway:
        return []
    if intent == "surveillance":
        active = [c for c in pathway if str(c.get("modality") or "") in ACTIVE]
        return [
            Finding(
                INTENT_CONTRADICTS_STEPS,
                ("surveillance", _item_text(c)),
                f"The intent is surveillance, but {_place(c)} is an active treatment "
                f"(“{_short(_item_text(c))}”): make the intent curative or palliative, or "
                "move the treatment to the alternatives.",
            )
            for c in active
        ]
    if intent == "curative":
        if any(curative_capable(c) for c in pathway):
            return []
        return [
            Finding(
                INTENT_CONTRADICTS_STEPS,
                ("curative", *(_item_text(c) for c in pathway)),
                "The intent is curative, but no step of the pathway can cure (no operation, "
                "ablation, transplant, radiotherapy or curative systemic therapy): make the "
                "intent palliative or add the curative step.",
            )
        ]
    findings = []
    for c in pathway:
        modality = str(c.get("modality") or "")
        text = _item_text(c)
        aimed_at_tumour = modality == "transplant" or (
            modality in ("surgery", "ablation") and not _PALLIATIVE_LOCAL.search(text)
        )
        if aimed_at_tumour:
            findings.append(
                Finding(
                    INTENT_CONTRADICTS_STEPS,
                    ("palliative", text),
                    f"The intent is palliative, but {_place(c)} (“{_short(text)}”) treats the "
                    "tumour with curative aim: make the intent curative, or say what the step "
                    "palliates.",
                )
            )
    return findings


# --- the pathway as a whole (issue 23) ----------------------------------------------------------
# Drug classes of which a pathway gives one backbone at a time: two items each giving a member
# (letrozole in one, tamoxifen in another) are two backbones side by side, unless one follows
# the other ("then", "after", "switch to").
BACKBONES: Final[Mapping[str, frozenset[str]]] = {
    "endocrine backbone": frozenset({"aromatase_inhibitor", "serm", "serd"}),
    "CDK4/6 inhibitor": frozenset({"cdk46"}),
    "EGFR inhibitor": frozenset({"egfr_tki"}),
    "ALK inhibitor": frozenset({"alk_tki"}),
}
_SEQUENTIAL = re.compile(
    r"\bthen\b|\bafter\b|\bfollowing\b|\bfollowed\s+by\b|\bswitch\w*|\bat\s+progression\b"
    r"|\bonce\b|\bcompleti\w*|\bextended\b|\bsequen\w*",
    re.IGNORECASE,
)


def _backbone_classes(item: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The backbone classes of the drugs an item names ("with standard adjuvant endocrine
    therapy" names no backbone of its own)."""
    given: set[str] = set()
    for drug in _item_given(item).drugs:
        given |= lexicon.classes_of(drug)
    found: dict[str, frozenset[str]] = {}
    for name, classes in BACKBONES.items():
        hit = frozenset(classes & given)
        if hit:
            found[name] = hit
    return found


def two_backbones(plan: Mapping[str, Any]) -> list[Finding]:
    """Two items of the pathway each give a backbone of the same class side by side (two
    endocrine backbones, two CDK4/6 inhibitors)."""
    pathway = [c for c in _components(plan) if c.get("role", "primary") == "primary"]
    findings: list[Finding] = []
    for index, first in enumerate(pathway):
        mine = _backbone_classes(first)
        if not mine:
            continue
        for second in pathway[index + 1 :]:
            if _SEQUENTIAL.search(_item_text(second)) or _SEQUENTIAL.search(_item_text(first)):
                continue
            theirs = _backbone_classes(second)
            for name in mine.keys() & theirs.keys():
                findings.append(
                    Finding(
                        TWO_BACKBONES,
                        (_item_text(first), _item_text(second)),
                        f"The pathway gives two {name}s side by side: "
                        f"“{_short(_item_text(first))}” and “{_short(_item_text(second))}”: keep "
                        "one, or say that one follows the other.",
                    )
                )
    return findings


# A step done before the treatment it protects or stages: baseline tests, prophylaxis started
# before the first dose, fertility preservation, dental review before a bone agent.
_BASELINE = re.compile(
    r"\bbaseline\b|\bbefore\s+(?:the\s+)?(?:first|start\w*|treatment|chemo\w*|therapy|anti-?cd20"
    r"|rituximab|immunotherapy|systemic|each)|\bprior\s+to\s+(?:start\w*|treatment|therapy)"
    r"|\bpre-?treatment\b|\bscreen\w*\b|\bstaging\b|\bfertility\b|\boocyte"
    r"|\bsperm\b|\bcryopreserv\w*|\bdental\b|\bcardio-?oncology\b|\bechocardiogra\w*",
    re.IGNORECASE,
)
_NOT_BASELINE = re.compile(r"^\W*(?:\S+\s+){0,5}?(?:after|following|at\s+progression)\b", re.I)


def is_baseline(item: Mapping[str, Any]) -> bool:
    text = _item_text(item)
    if _NOT_BASELINE.search(text):
        return False
    modality = str(item.get("modality") or "")
    if modality == "antiviral" and re.search(r"prophyla\w*|pre-?emptive|before", text, re.I):
        return True
    return modality not in ACTIVE and bool(_BASELINE.search(text))


def baseline_after_treatment(plan: Mapping[str, Any]) -> list[Finding]:
    """A baseline or prophylaxis step placed after the treatment it protects (CNS staging,
    cardio-oncology, HBV prophylaxis "then", after months of treatment)."""
    pathway = sorted(
        (c for c in _components(plan) if c.get("role", "primary") == "primary"),
        key=lambda c: c.get("order") or 0,
    )
    first_active = next(
        (c for c in pathway if str(c.get("modality") or "") in ACTIVE and not is_baseline(c)),
        None,
    )
    if first_active is None:
        return []
    start = first_active.get("order") or 0
    return [
        Finding(
            BASELINE_AFTER_TREATMENT,
            (_item_text(c), _item_text(first_active)),
            f"“{_short(_item_text(c))}” ({_place(c)}) is done before or at the start of "
            f"“{_short(_item_text(first_active))}”, not after it: put it first or mark it "
            "concurrent.",
        )
        for c in pathway
        if is_baseline(c) and (c.get("order") or 0) > start and c.get("timing") != "before"
    ]


_FEMALE_ONLY = re.compile(
    r"\bpregnan\w*|\bcontracept\w*\s+(?:for\s+)?women|\bpremenopausal|\bpostmenopausal"
    r"|\bmenopaus\w*|\boocyte|\bovarian\s+(?:function|suppression)|\bbreastfeed\w*|\blactat\w*",
    re.IGNORECASE,
)
_PARENTHESES = re.compile(r"\([^()]*\)")
_IF_CLAUSE = re.compile(r"^\s*(?:if|when|unless|for)\b[^:]*:", re.IGNORECASE)
_MALE_ONLY = re.compile(r"\bsperm\b|\bsemen\b|\btesticular\s+function|\bandrolog\w*", re.I)


def wrong_sex_wording(plan: Mapping[str, Any], sex: str | None) -> list[Finding]:
    """Wording that only applies to the other sex: pregnancy or ovarian function for a man,
    sperm banking for a woman (needs the patient's recorded sex; nothing when not recorded)."""
    if sex not in ("male", "female"):
        return []
    pattern = _FEMALE_ONLY if sex == "male" else _MALE_ONLY
    findings = []
    for item in _components(plan):
        # What the item says it gives, not the criteria it lists: "(e.g. premenopausal N1 ...)"
        # and "If ...:" clauses are conditions.
        text = _PARENTHESES.sub(" ", _item_text(item))
        text = _IF_CLAUSE.sub(" ", text)
        match = pattern.search(text)
        if match and not re.search(
            r"partner", text[max(0, match.start() - 40) : match.end()], re.I
        ):
            findings.append(
                Finding(
                    WRONG_SEX_WORDING,
                    (_item_text(item), match.group(0)),
                    f"“{_short(_item_text(item))}” ({_place(item)}) speaks of "
                    f"“{match.group(0)}” for a {sex} patient: reword it for this patient.",
                )
            )
    return findings


def alternative_already_true(
    plan: Mapping[str, Any], holds: Callable[[str], bool | None]
) -> list[Finding]:
    """An alternative whose ``when`` is already true for this patient (``holds(when)`` True):
    then it is not a fallback, it should have led, or the pathway should say why not."""
    findings = []
    for item in _components(plan):
        if item.get("role") != "alternative":
            continue
        when = str(item.get("when") or "")
        if when and holds(when) is True:
            findings.append(
                Finding(
                    ALTERNATIVE_ALREADY_TRUE,
                    (_item_text(item), when),
                    f"{_place(item).capitalize()} is for “{_short(when)}”, which is already the "
                    "case for this patient: it should lead, or the plan should say why not.",
                )
            )
    return findings


Check = Callable[[Mapping[str, Any]], Sequence[Finding]]
# Every property a plan is checked for, in the order their findings are reported.
CHECKS: Final[tuple[Check, ...]] = (recommends_ruled_out, intent_contradicts_steps)
# The engine's pathway pass (issue 23) checks these too, after the gate, and repairs what it can
# (consult/engine/pathway_pass.py); clinician review keeps to CHECKS.
PATHWAY_CHECKS: Final[tuple[Check, ...]] = (*CHECKS, two_backbones, baseline_after_treatment)


def plan_findings(plan: Mapping[str, Any], checks: Iterable[Check] = CHECKS) -> list[Finding]:
    """Every way ``plan`` contradicts itself (empty: coherent)."""
    return [finding for check in checks for finding in check(plan)]
