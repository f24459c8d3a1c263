"""One recommended pathway: the options that apply compete, the best safe one is the pathway,
the rest are ranked alternatives with when they would be chosen, or rejected with the reason.

Used by the guideline engine's Treatment role (from the objections it must answer) and by the
safety gate after the Coordinator (from the knowledge base's rules, for any engine), so the
two always arrange a plan the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

from clinical import lexicon
from clinical.plan import RejectedOption
from clinical.rules import LAST_RESORT
from clinical.vocab import ComponentRole, Modality
from consult.engine.drug_monitoring import entries_given
from consult.engine.schemas import ProposedComponent
from consult.engine.sequence import in_sequence

MAX_ALTERNATIVES = 4
# Care that goes with any pathway whatever a member called it. (Supportive care is not here:
# best supportive care can be the pathway itself; a unit or a member marks an adjunct.)
ADJUNCT_MODALITIES = ("antiviral",)
DEFAULT_WHEN = "if the recommended pathway cannot be given"


def once(precondition: str) -> str:
    """When an option that waits for a precondition may start: "once the large varices have
    been treated"; a rule's advice that is not written as a precondition is quoted."""
    text = precondition.strip().rstrip(".")
    labelled = ":" in text[:30]  # "First trimester: no chemotherapy ..." is an instruction
    return f"once this is resolved: {text}" if labelled else f"once {text}"


def is_adjunct(component: ProposedComponent) -> bool:
    return component.adjunct or component.modality in ADJUNCT_MODALITIES


@dataclass
class Arrangement:
    components: list[ProposedComponent]  # the pathway in order, then alternatives by rank
    rejected: list[RejectedOption] = field(default_factory=list)

    @property
    def primary(self) -> list[ProposedComponent]:
        return [c for c in self.components if c.role == "primary"]

    @property
    def alternatives(self) -> list[ProposedComponent]:
        return [c for c in self.components if c.role == "alternative"]

    @property
    def option(self) -> ProposedComponent | None:
        """The chosen treatment option (the first primary that is not an adjunct)."""
        return next((c for c in self.primary if not is_adjunct(c)), None)


# What a patient declines when they decline every treatment aimed at the cancer: supportive
# care, antiviral prophylaxis and referrals stay on offer.
_ANTICANCER_MODALITIES: Final = frozenset(
    {
        Modality.SURGERY,
        Modality.ABLATION,
        Modality.LOCOREGIONAL,
        Modality.SYSTEMIC,
        Modality.RADIOTHERAPY,
        Modality.TRANSPLANT,
    }
)


# What a step is, in the words a patient declines: by its modality, and for a drug step by the
# classes of the drugs it gives ("will not have chemotherapy of any kind" declines nivolumab-
# ipilimumab with two cycles of carboplatin-pemetrexed as well as a platinum doublet).
_MODALITY_TOPICS: Final = {
    Modality.SURGERY: "surgery",
    Modality.RADIOTHERAPY: "radiotherapy",
    Modality.TRANSPLANT: "transplant",
}
_CLASS_TOPICS: Final = (
    ("chemotherapy", "chemotherapy"),
    ("immunotherapy", "immunotherapy"),
    ("endocrine", "endocrine_therapy"),
)


def _is_topics(component: ProposedComponent) -> frozenset[str]:
    return _topics_of(component.modality, tuple(component.agents), component.description)


@lru_cache(maxsize=1024)
def _topics_of(modality: Modality, agents: tuple[str, ...], description: str) -> frozenset[str]:
    """Cached: ``arrange`` asks it of each option several times while ordering them."""
    topics = {_MODALITY_TOPICS[modality]} if modality in _MODALITY_TOPICS else set()
    if modality == Modality.SYSTEMIC:
        gives = lexicon.given(list(agents), description)
        topics |= {topic for cls, topic in _CLASS_TOPICS if gives.gives_class(cls)}
    if modality in _ANTICANCER_MODALITIES:
        topics.add("anticancer_treatment")
    return frozenset(topics)


def _declined(component: ProposedComponent, declines: Collection[str]) -> list[str]:
    if not declines:
        return []
    topics = [topic for topic in component.declined_if if topic in declines]
    return topics + sorted(t for t in _is_topics(component) & set(declines) if t not in topics)


def _topic(topic: str) -> str:
    return topic.replace("_", " ")


def _declined_option(component: ProposedComponent, declines: Collection[str]) -> RejectedOption:
    topics = ", ".join(map(_topic, _declined(component, declines)))
    return RejectedOption(
        option=component.description,
        reason=f"declined by the patient ({topics}); to be offered again if they reconsider",
    )


# What a record says was already done, by modality: a step of that modality is not offered
# again. Read from derived facts (clinical/calculators/breast_local.py: the breast operation
# from the treatment history and notes, planned or declined operations not counted).
_DONE_FACTS: dict[str, dict[str, tuple[str, str]]] = {
    "derived.breast_surgery_done": {
        "breast_conserving": ("surgery", "breast-conserving surgery on record"),
        "mastectomy": ("surgery", "mastectomy on record"),
    },
}


# Every cancer's own operation (clinical/calculators/course.py: the operation of the primary on
# record for the disease being planned; a relapse is decided again), and a liver transplant
# (never offered twice for the same liver).
_PRIMARY_OPERATION_FACT = "derived.primary_operation_done"
_OPERATIONS_FACT = "derived.operations_done"


def modalities_done(facts: Mapping[str, object]) -> dict[str, str]:
    """modality -> what was done, for the patient whose facts these are."""
    done: dict[str, str] = {}
    for fact, values in _DONE_FACTS.items():
        found = values.get(str(facts.get(fact)))
        if found is not None:
            done.setdefault(found[0], found[1])
    primary = facts.get(_PRIMARY_OPERATION_FACT)
    if isinstance(primary, str) and primary != "none_recorded":
        done.setdefault("surgery", f"{primary.replace('_', ' ')} on record")
        if primary == "liver_resection":
            # The tumour was removed: no ablation or chemoembolisation of it either.
            done.setdefault("ablation", "liver resection of the tumour on record")
            done.setdefault("locoregional", "liver resection of the tumour on record")
            done.setdefault("radiotherapy", "liver resection of the tumour on record")
    operations = facts.get(_OPERATIONS_FACT)
    if isinstance(operations, list) and "liver_transplant" in operations:
        done.setdefault("transplant", "liver transplant on record")
    return done


def _drug_care(
    adjuncts: Sequence[ProposedComponent],
    pathway: Sequence[ProposedComponent],
    declines: Collection[str],
    rejected: list[RejectedOption],
) -> list[ProposedComponent]:
    """The adjuncts that go with the drugs the pathway gives (``with_agents``: antiemetics for
    emetogenic chemotherapy, G-CSF for a regimen of high febrile-neutropenia risk), one per
    ``care_class``: the best preference (the highest emetic risk reached), never two levels
    side by side. Nothing joins a pathway that gives none of the drugs."""
    modalities = {c.modality for c in pathway}
    triggered = [
        (a, given)
        for a in adjuncts
        if a.with_agents
        and (given := entries_given(a.with_agents, pathway))
        and (not a.with_modalities or modalities & set(a.with_modalities))
    ]
    joined: list[ProposedComponent] = []
    classes: set[str] = set()
    for adjunct, given in sorted(triggered, key=lambda t: t[0].preference):
        if adjunct.care_class and adjunct.care_class in classes:
            continue
        classes.add(adjunct.care_class)
        if _declined(adjunct, declines):
            rejected.append(_declined_option(adjunct, declines))
            continue
        adjunct.role, adjunct.rank, adjunct.when = ComponentRole.PRIMARY, None, ""
        # why it is there: the drugs of the pathway it follows, then the patient's facts
        reason = f"pathway gives: {', '.join(given)} \u2713"
        adjunct.rationale = [reason, *(r for r in adjunct.rationale if r != reason)]
        joined.append(adjunct)
    return joined


def arrange(
    components: Sequence[ProposedComponent],
    *,
    removed: Mapping[str, str] | None = None,
    demoted: Mapping[str, str] | None = None,
    held: Mapping[str, str] | None = None,
    declines: Collection[str] = (),
    done: Mapping[str, str] | None = None,
    max_alternatives: int = MAX_ALTERNATIVES,
) -> Arrangement:
    """Choose the pathway.

    ``removed``: description -> reason (a critical or major contraindication: the item leaves
    the pathway and every alternative). ``demoted``: description -> the precondition it waits
    for (a failed gate: every option that is not blocked goes first). ``held``: description ->
    when it may be given (a critical contraindication that will pass: after delivery, once the
    LVEF recovers): an alternative only, never the pathway. ``declines``: the
    preference topics the patient declines (an option they decline is not recommended to them:
    it goes to the rejected options with their decision as the reason). ``done``: modality ->
    what the record says was done (the breast operation of a patient referred for adjuvant
    therapy): no step of that modality is offered again, and the adjuncts that follow it
    (adjuvant endocrine therapy, radiotherapy after the operation) join as if it were in the
    pathway. Options keep the order
    the members gave them (primary before alternative, then rank), then guideline preference.
    """
    removed = dict(removed or {})
    demoted = demoted or {}
    held = held or {}
    done = done or {}
    for c in components:
        if c.modality in done and c.description not in removed:
            removed[c.description] = f"already done: {done[c.modality]}"
    rejected = [
        RejectedOption(option=c.description, reason=removed[c.description])
        for c in components
        if c.description in removed
    ]
    kept = [c.model_copy(deep=True) for c in components if c.description not in removed]
    options = [c for c in kept if not is_adjunct(c)]
    adjuncts = [c for c in kept if is_adjunct(c)]

    def blocked(c: ProposedComponent) -> str:
        if c.description in held:
            return held[c.description] or DEFAULT_WHEN
        if c.description in demoted:
            return once(demoted[c.description])
        topics = _declined(c, declines)
        if topics:
            return "if the patient reconsiders (declined: " + ", ".join(map(_topic, topics)) + ")"
        return ""

    def order(item: tuple[int, ProposedComponent]) -> tuple[Any, ...]:
        index, c = item
        return (
            # what the patient declines, then a last resort, then what only waits for a check
            bool(_declined(c, declines)),
            c.preference >= LAST_RESORT,
            bool(blocked(c)),
            c.role != "primary",
            c.rank or 0,
            c.preference,
            index,
        )

    ranked = [c for _, c in sorted(enumerate(options), key=order)]
    chosen: ProposedComponent | None = None
    if ranked and not _declined(ranked[0], declines) and ranked[0].description not in held:
        # The best option; if every option waits for a precondition, the best one leads
        # with that precondition stated (nothing safer is on offer).
        chosen = ranked.pop(0)
        if chosen.description in demoted:
            chosen.when = ""
    pathway: list[ProposedComponent] = []
    if chosen is not None:
        chosen.role, chosen.rank = ComponentRole.PRIMARY, None
        pathway.append(chosen)
    # An adjunct joins when the pathway has a step of a modality it follows: the chosen option
    # or an adjunct already in it (surgery after neoadjuvant therapy, then adjuvant endocrine
    # therapy after that surgery), so adjuncts are taken in as long as one more follows.
    # Care that follows the drugs (antiemetics, G-CSF) is decided once the rest has joined.
    waiting = [a for a in adjuncts if not a.with_agents]
    joined = True
    while joined:
        joined = False
        present = {c.modality for c in pathway} | set(done)
        for adjunct in list(waiting):
            follows = set(adjunct.with_modalities)
            if follows and not present & follows:
                continue
            if follows and chosen is None and not follows & set(done):
                continue
            waiting.remove(adjunct)
            joined = True
            if _declined(adjunct, declines):
                rejected.append(_declined_option(adjunct, declines))
                continue
            adjunct.role, adjunct.rank, adjunct.when = ComponentRole.PRIMARY, None, ""
            pathway.append(adjunct)
            present.add(adjunct.modality)
    pathway += _drug_care(adjuncts, pathway, declines, rejected)
    # An option the patient declines is not recommended to them: it is ruled out with their
    # decision as the reason (the summary says so), to be offered again if they reconsider.
    rejected += [_declined_option(c, declines) for c in ranked if _declined(c, declines)]
    ranked = [c for c in ranked if not _declined(c, declines)]
    alternatives = []
    for rank, option in enumerate(ranked, start=1):
        if rank > max_alternatives:
            rejected.append(
                RejectedOption(
                    option=option.description,
                    reason="less preferred than the pathway and the alternatives listed",
                )
            )
            continue
        reason = blocked(option)
        option.role, option.rank = ComponentRole.ALTERNATIVE, rank
        option.when = reason if reason else (option.when or DEFAULT_WHEN)
        alternatives.append(option)
    return Arrangement(components=in_sequence(pathway) + alternatives, rejected=rejected)
