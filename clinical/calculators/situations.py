"""The case's situation: histology and variant, site, emergency, a newer biopsy that reads
another histology, transformation, collision - each with the phrase it was read from.

The structured fields are read first (the lymphoma entity named by the histology), then the
free text with the medspaCy reader and the situation dictionary (clinical/text/situations.yaml),
negation-aware (ConText): "no cord compression on MRI" is not a cord compression, "history of
hypercalcaemia in 2019" is not an emergency now, "suspected transformation" is not a
transformation. Whether the knowledge base covers a situation is the coverage map's question
(clinical/coverage.py); this module only says what the case is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache, lru_cache
from typing import Any, Final

import yaml

from clinical.calculators.lymphoma import ENTITY_SOURCE, INDOLENT_ENTITIES, classify_lymphoma
from clinical.results import CalcResult, lookup
from clinical.text.concepts import SITUATIONS_PATH, situation_dictionary
from clinical.text.notes import reference_date
from clinical.text.reader import Finding, case_texts, read_text
from clinical.text.values import when

SOURCE: Final = (
    "Situation reader (clinical/calculators/situations.py): the lymphoma entity from the "
    "histology (WHO 5th edition / ICC 2022), then the free text read with the situation "
    "dictionary clinical/text/situations.yaml and ConText (negated, hypothetical, uncertain "
    "and family mentions do not count; a past emergency is not a present one)."
)

KINDS: Final = (
    "emergency",
    "site",
    "histology_variant",
    "histology_change",
    "transformation",
    "collision",
)

# Where a kind of situation may be read from. A variant histology is the diagnosis's, not a
# comorbidity's ("history of Hodgkin lymphoma" in a breast cancer patient is not the breast
# tumour's histology); an emergency may be written anywhere but in the medication list.
_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "histology_variant": (
        "diagnosis.histology",
        "diagnosis.subtype",
        "index_lesion.description",
        "notes",
    ),
    "histology_change": ("diagnosis.histology", "diagnosis.subtype", "notes"),
    "transformation": (
        "diagnosis.histology",
        "diagnosis.subtype",
        "index_lesion.description",
        "notes",
    ),
    "collision": ("diagnosis.histology", "diagnosis.subtype", "index_lesion.description", "notes"),
    "emergency": (
        "patient.comorbidities",
        "organ_function.autoimmune_disease",
        "index_lesion.description",
        "notes",
    ),
    "site": ("diagnosis.histology", "diagnosis.subtype", "index_lesion.description", "notes"),
}
# Only the histology fields for these: the word alone says little elsewhere.
_HISTOLOGY_ONLY: Final = frozenset({"lymphoma_in_solid_organ"})

# The reader marks "developed cord compression 2 days ago" historical as it does "history of
# hypercalcaemia": a historical mention of an emergency is a present one only when its sentence
# says it is recent; otherwise it is a past episode (not the question before the board now).
_RECENT: Final = re.compile(
    r"\b(?:today|yesterday|now|currently|tonight|last\s+night|this\s+(?:week|morning|"
    r"afternoon|evening)|on\s+admission|since\s+(?:yesterday|admission|this)|\d+\s+"
    r"(?:hours?|days?)\s+ago|(?:a\s+)?(?:few|two|three|several)\s+(?:hours|days)\s+ago|"
    r"present(?:s|ed|ing)?\s+with|admitted|ongoing)\b",
    re.IGNORECASE,
)

# The aggressive entities an indolent one (INDOLENT_ENTITIES) transforms into.
_AGGRESSIVE: Final = frozenset({"dlbcl", "hgbl", "burkitt"})

ENTITY_LABELS: Final[Mapping[str, str]] = {
    "classic_hodgkin": "classic Hodgkin lymphoma",
    "nlphl": "nodular lymphocyte-predominant Hodgkin lymphoma",
    "mantle_cell": "mantle cell lymphoma",
    "mzl_gastric_malt": "gastric MALT lymphoma",
    "mzl_extragastric_malt": "extragastric MALT lymphoma",
    "mzl_splenic": "splenic marginal zone lymphoma",
    "mzl_nodal": "nodal marginal zone lymphoma",
    "burkitt": "Burkitt lymphoma",
    "hgbl": "high-grade B-cell lymphoma",
    "pmbcl": "primary mediastinal B-cell lymphoma",
    "dlbcl": "diffuse large B-cell lymphoma",
    "follicular": "follicular lymphoma",
    "cll_sll": "chronic lymphocytic leukaemia / small lymphocytic lymphoma",
    "t_cell": "T-cell or NK-cell lymphoma",
    "other": "a lymphoma entity the histology does not name clearly",
}


@dataclass(frozen=True)
class Situation:
    """One recognised situation and where it was read."""

    id: str  # a situation of situations.yaml, or "lymphoma_entity:<entity>"
    kind: str  # one of KINDS
    label: str
    phrase: str  # the sentence (or field value) it was read from
    source: str  # the case-file field
    words: str = ""  # the matched words

    def as_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "phrase": self.phrase,
            "source": self.source,
            "words": self.words,
        }


@dataclass(frozen=True)
class Spec:
    id: str
    kind: str
    label: str
    cancers: tuple[str, ...] = ()  # empty: every cancer


@cache
def catalogue() -> dict[str, Spec]:
    """Every situation the dictionary knows, with its kind, label and cancers."""
    raw = yaml.safe_load(SITUATIONS_PATH.read_text(encoding="utf-8"))
    specs = {
        str(key): Spec(
            id=str(key),
            kind=str(value["kind"]),
            label=str(value["label"]),
            cancers=tuple(value.get("cancers") or ()),
        )
        for key, value in raw["situations"].items()
    }
    for spec in specs.values():
        if spec.kind not in KINDS:
            raise ValueError(f"situation {spec.id}: unknown kind {spec.kind!r}")
    for concept in raw["concepts"]:
        if concept["situation"] not in specs:
            raise ValueError(f"concept {concept['id']}: unknown situation")
    return specs


@cache
def _concept_situation() -> dict[str, str]:
    raw = yaml.safe_load(SITUATIONS_PATH.read_text(encoding="utf-8"))
    return {str(c["id"]): str(c["situation"]) for c in raw["concepts"]}


def entity_label(entity: str) -> str:
    return ENTITY_LABELS.get(entity, entity.replace("_", " "))


# A variant histology named in the notes belongs to the index tumour only when the sentence is
# about it: "squamous cell carcinoma of the skin excised in 2015" is another (past) tumour.
_OTHER_TUMOUR: Final = re.compile(
    r"\b(?:skin|cutaneous|cervix|cervical\s+(?:cancer|carcinoma)|head\s+and\s+neck|oesophag\w*|"
    r"esophag\w*|anal|anus|vulva\w*|oral|larynx|laryngeal|tongue|tonsil\w*|bladder|prostate|"
    r"colon|rectal|rectum|thyroid|kidney|renal|testicular|ovar\w*|endometri\w*|uter\w*)\b",
    re.IGNORECASE,
)
# ... unless the organ is where the index tumour spread ("biopsy of a renal metastasis").
_METASTASIS: Final = re.compile(r"\bmetasta\w*", re.IGNORECASE)
_PATHOLOGY: Final = re.compile(
    r"\b(?:biops\w*|re-?biops\w*|histolog\w*|patholog\w*|specimen|cytology|resection|core)\b",
    re.IGNORECASE,
)


# An emergency dated more than this many days before the case's reference date is a past
# episode, whatever else its sentence says ("Admitted 6 weeks ago with haematemesis; banded"):
# the board treats the cancer, and the rules about recent events (no bevacizumab within 6 months
# of a bleed) still read the date. Two weeks covers an emergency still being managed.
EMERGENCY_WINDOW_DAYS: Final = 14


def _days_ago(sentence: str, as_of: str) -> int | None:
    days: int | None = when(sentence, date.fromisoformat(as_of) if as_of else None)["days_ago"]
    return days


def _counts(finding: Finding, spec: Spec, as_of: str = "") -> bool:
    """Whether a mention states the situation now."""
    if spec.kind == "emergency":
        # A date only ever makes a mention past: an endoscopy dated the day of the newest
        # record is not for that an emergency now (the case's dates are when it was written up).
        days = _days_ago(finding.sentence, as_of)
        if days is not None and days > EMERGENCY_WINDOW_DAYS:
            return False
    if spec.kind == "histology_variant" and finding.source == "notes":
        if _OTHER_TUMOUR.search(finding.sentence) and not _METASTASIS.search(finding.sentence):
            return False
        if finding.assertion == "historical":
            # A past mention is the index tumour's only in a pathology sentence ("re-biopsy in
            # March showed small-cell carcinoma").
            return _PATHOLOGY.search(finding.sentence) is not None
    if finding.assertion == "present":
        return True
    if finding.assertion != "historical":
        return False  # negated, possible, hypothetical, a relative's
    if spec.kind == "emergency":
        return _RECENT.search(finding.sentence) is not None
    # A variant histology, a site or a biopsy result stays true once recorded ("re-biopsy in
    # March 2026 showed small-cell carcinoma").
    return True


def _allowed(spec: Spec, source: str, cancer: str) -> bool:
    if spec.cancers and cancer not in spec.cancers:
        return False
    if spec.id in _HISTOLOGY_ONLY:
        return source in ("diagnosis.histology", "diagnosis.subtype")
    return source in _FIELDS[spec.kind]


def _recorded_histology(case: Mapping[str, Any]) -> str:
    parts = [lookup(case, "diagnosis.histology"), lookup(case, "diagnosis.subtype")]
    return "; ".join(p for p in parts if isinstance(p, str) and p.strip())


@lru_cache(maxsize=256)
def _read(
    cancer: str, histology: str, site: str, texts: tuple[tuple[str, str], ...], as_of: str = ""
) -> tuple[Situation, ...]:
    specs = catalogue()
    by_concept = _concept_situation()
    vocabulary = situation_dictionary()
    found: dict[str, Situation] = {}
    recorded_entity = (
        classify_lymphoma(histology, site) if cancer == "lymphoma" and histology else ""
    )
    if recorded_entity:
        found[f"lymphoma_entity:{recorded_entity}"] = Situation(
            id=f"lymphoma_entity:{recorded_entity}",
            kind="histology_variant",
            label=entity_label(recorded_entity),
            phrase=histology,
            source="diagnosis.histology",
            words=histology,
        )
    recorded_variants: set[str] = set()
    biopsies: list[Finding] = []
    variants_by_sentence: dict[str, list[tuple[str, Finding]]] = {}
    for source, text in texts:
        for finding in read_text(text, source=source, vocabulary=vocabulary):
            situation = by_concept[finding.concept]
            spec = specs[situation]
            if spec.kind == "histology_change":
                if finding.assertion in ("present", "historical") and source in _FIELDS[spec.kind]:
                    biopsies.append(finding)
                continue
            if not _allowed(spec, source, cancer) or not _counts(finding, spec, as_of):
                continue
            if spec.kind == "histology_variant":
                variants_by_sentence.setdefault(finding.sentence, []).append((situation, finding))
                if source in ("diagnosis.histology", "diagnosis.subtype"):
                    recorded_variants.add(situation)
            found.setdefault(
                situation,
                Situation(
                    id=situation,
                    kind=spec.kind,
                    label=spec.label,
                    phrase=finding.sentence.strip(),
                    source=source,
                    words=finding.words,
                ),
            )
    # One mention read as two variants ("combined hepatocellular-cholangiocarcinoma" is not
    # also a pure cholangiocarcinoma): the longer words stay.
    variants = [s for s in found.values() if s.kind == "histology_variant"]
    for short in variants:
        if any(
            other is not short
            and other.phrase == short.phrase
            and short.words.casefold() in other.words.casefold()
            and len(other.words) > len(short.words)
            for other in variants
        ):
            found.pop(short.id, None)
    # A newer biopsy: does its sentence read another histology than the one recorded?
    for finding in biopsies:
        change = _change(
            finding,
            cancer,
            site,
            recorded_entity,
            recorded_variants,
            variants_by_sentence.get(finding.sentence, []),
        )
        if change is not None and change not in found:
            spec = specs[change]
            found[change] = Situation(
                id=change,
                kind=spec.kind,
                label=spec.label,
                phrase=finding.sentence.strip(),
                source=finding.source,
                words=finding.words,
            )
    return tuple(found.values())


def _change(
    finding: Finding,
    cancer: str,
    site: str,
    recorded_entity: str,
    recorded_variants: set[str],
    variants: Sequence[tuple[str, Finding]],
) -> str | None:
    """ "histology_change" (or "transformation", indolent to aggressive lymphoma) when the
    biopsy's sentence names a histology other than the recorded one; None when it names the
    same one or none."""
    if cancer == "lymphoma":
        entity = classify_lymphoma(finding.sentence, site)
        if entity in ("other", recorded_entity) or not recorded_entity:
            return None
        if recorded_entity in INDOLENT_ENTITIES and entity in _AGGRESSIVE:
            return "transformation"
        return "histology_change"
    new = {situation for situation, _ in variants} - recorded_variants
    return "histology_change" if new else None


def recognise(case: Mapping[str, Any]) -> list[Situation]:
    """Every situation the case states, each once, with its phrase and field."""
    cancer = lookup(case, "cancer_type")
    if not isinstance(cancer, str):
        return []
    site = lookup(case, "index_lesion.site")
    texts = tuple(
        (source, text)
        for source, text in case_texts(case)
        if source not in ("patient.medications", "diagnosis.prior_therapies")
    )
    found = list(
        _read(
            cancer,
            _recorded_histology(case),
            site if isinstance(site, str) else "",
            texts,
            reference_date(case).isoformat(),
        )
    )
    # A structured field states a site as well as the text does.
    count = lookup(case, "staging.brain_metastases_count")
    spec = catalogue()["brain_metastases"]
    if (
        isinstance(count, int)
        and not isinstance(count, bool)
        and count >= 1
        and cancer in spec.cancers
        and not any(s.id == spec.id for s in found)
    ):
        found.append(
            Situation(
                id=spec.id,
                kind=spec.kind,
                label=spec.label,
                phrase=f"brain metastases: {count}",
                source="staging.brain_metastases_count",
                words=str(count),
            )
        )
    return found


def situations(case: Mapping[str, Any]) -> CalcResult:
    """``derived.situations``: the ids of the situations the case states (an empty list when
    none; a knowledge unit written for a situation names its id)."""
    found = recognise(case)
    ids = sorted({s.id for s in found})
    detail = "; ".join(f"{s.label}: '{s.phrase[:120]}' ({s.source})" for s in found)
    return CalcResult(
        name="situations",
        value=ids,
        inputs_used={"texts": len(case_texts(case))},
        inputs_missing=[],
        source=f"{SOURCE} {ENTITY_SOURCE}" if lookup(case, "cancer_type") == "lymphoma" else SOURCE,
        detail=detail,
    )
