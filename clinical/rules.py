"""The typed rules of the knowledge base (format ``mdtboard.kb/1``): sources, atomic
recommendation units, the conditions under which a unit applies and the action it takes —
a therapy step, a safety rule, a surveillance interval or a staging statement.

Pure Python (pydantic), no Django: the curator's import validates bundles with these models,
the guideline engine and the safety gate read the same models, and the safety policy (which
rules veto, omit or restrict a drug) is defined once, as methods of :class:`SafetyAction`.

Applicability is structured, so the guideline engine can decide deterministically whether a
unit applies to a case: ``context.all`` (every condition must hold) and ``context.any`` (at
least one must hold, when given). A condition names a *fact*: a dotted case-file path
("labs.creatinine_mg_dl", "organ_function.varices"), a derived fact ("derived.bclc",
"derived.child_pugh_class", "derived.tnm_stage", "derived.breast_subtype",
"derived.ann_arbor_stage", "derived.ipi", "derived.egfr_ckd_epi_2021",
"derived.crcl_cockcroft_gault", "derived.albi_grade"), or "derived.line" (the line of therapy
now being decided: number of prior therapies + 1). A fact that is null makes the condition
*unknown*, never true or false: a gate whose inputs are missing reports "unknown".
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from clinical.text.preferences import DECLINE_TOPICS
from clinical.vocab import (
    Modality,
    Phase,
    ResponseAnchor,
    SafetyEffect,
    Severity,
    UnitCancerType,
    UnitIntent,
    UnitKind,
)

FORMAT_ID = "mdtboard.kb/1"
KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{1,79}$"
FACT_PATTERN = r"^(derived\.[a-z0-9_]+|[a-z_]+\.[a-z0-9_]+|[a-z_]+)$"


Op = Literal[
    "eq",
    "ne",
    "in",
    "not_in",
    "lt",
    "le",
    "gt",
    "ge",
    "is_true",
    "is_false",
    "present",
    "contains_any",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class Condition(_Strict):
    """One test on a fact. ``contains_any`` matches list facts (comorbidities, medications)
    and free text case-insensitively by substring; ``present`` is true when the fact is not
    null (it is the one operator that is never unknown)."""

    fact: Annotated[str, Field(pattern=FACT_PATTERN, max_length=80)]
    op: Op
    value: Any = None

    @model_validator(mode="after")
    def _value_fits_op(self) -> Condition:
        needs_list = self.op in ("in", "not_in", "contains_any")
        needs_none = self.op in ("is_true", "is_false", "present")
        if needs_list and not (isinstance(self.value, list) and self.value):
            raise ValueError(f"operator {self.op!r} needs a non-empty list as value")
        if needs_none and self.value is not None:
            raise ValueError(f"operator {self.op!r} takes no value")
        if self.op in ("lt", "le", "gt", "ge") and (
            isinstance(self.value, bool) or not isinstance(self.value, int | float)
        ):
            raise ValueError(f"operator {self.op!r} needs a number as value")
        if self.op in ("eq", "ne") and self.value is None:
            raise ValueError(f"operator {self.op!r} needs a value")
        if not _all_finite(self.value):
            # NaN and infinity are not JSON: the database would refuse the version.
            raise ValueError("value must not contain NaN or infinity")
        return self


def _all_finite(value: Any) -> bool:
    """False when a float anywhere in ``value`` (lists and mappings included) is NaN or
    infinite."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


class Context(_Strict):
    """When a unit applies. Empty means: whenever its cancer type matches."""

    all: tuple[Condition, ...] = ()
    any: tuple[Condition, ...] = ()
    exceptions: tuple[str, ...] = ()  # stated in words, for the clinician (not evaluated)


class Grade(_Strict):
    """The guideline's own grade, verbatim, and our ordinal: 1 = strongest evidence and
    recommendation (e.g. NCCN category 1, ESMO I/A), 5 = weakest (expert opinion)."""

    system: Annotated[str, Field(min_length=2, max_length=40)]
    native: Annotated[str, Field(min_length=1, max_length=80)]
    ordinal: Annotated[int, Field(ge=1, le=5)]


# Topics a patient can decline in their stated preferences (``derived.declines``): one
# vocabulary, the one the preferences reader produces.
PREFERENCE_TOPICS = DECLINE_TOPICS


# The preference of a last resort (supportive care when the patient declines what is offered):
# it never leads while another option is only waiting for a check or a precondition.
LAST_RESORT: Final = 9


class TherapyAction(_Strict):
    """A treatment a guideline recommends in the unit's context.

    ``role``: an *option* is one way to treat the index lesion; the options that apply to a
    patient compete, and one of them becomes the recommended pathway (the others ranked
    alternatives). An *adjunct* goes with whatever pathway is chosen (antiviral prophylaxis,
    bone-modifying agent, fertility counselling), or only with a pathway that contains one of
    ``with_modalities`` (adjuvant therapy after surgery), or only with a pathway whose primary
    steps give one of ``with_agents`` (antiemetics for emetogenic chemotherapy, G-CSF for a
    regimen with a high febrile-neutropenia risk): a drug or class name the lexicon knows, a
    combination "a + b" that one step gives whole (an anthracycline with cyclophosphamide), or
    words the lexicon does not know, matched as written ("dose-dense").
    ``care_class``: the supportive care an adjunct is one level of ("antiemetic"): a pathway
    takes one adjunct of a class, the one of best ``preference`` (the highest emetic risk its
    drugs reach), never two side by side.
    ``preference``: the guideline's order among options that apply to the same patient
    (1 = preferred); ties go to the stronger grade. ``when``: in words, when this option is
    chosen instead of the preferred one. ``declined_if``: preference topics that take the
    option out of the pathway when the patient declines them. ``dose_adjustments``: a
    reduced-dose regimen says how; it is its own plan item, never merged into the full dose.
    ``interchangeable``: groups of ``agents`` of which any one will do ("R-ICE, R-DHAP or
    R-GDP": cisplatin or carboplatin); a contraindication to one withdraws it and the regimen
    stays with the others, instead of the whole option leaving the plan.
    ``option``: the MDT option the step belongs to, in a tumour board's words ("liver
    transplantation", "CAR T-cell therapy"); steps sharing it are one option. A main option
    that does not apply to the patient is named in the plan's rejected options with the
    conditions that rule it out, so the plan answers "resection, ablation, TACE or
    transplant?"; steps without one (dose variants, special situations) are not listed.
    """

    type: Literal["therapy"] = "therapy"
    modality: Modality
    description: Annotated[str, Field(min_length=3, max_length=400)]
    agents: tuple[str, ...] = ()
    intent: UnitIntent
    role: Literal["option", "adjunct"] = "option"
    preference: Annotated[int, Field(ge=1, le=LAST_RESORT)] = 5
    with_modalities: tuple[Modality, ...] = ()
    when: Annotated[str, Field(max_length=300)] = ""
    declined_if: tuple[Literal[PREFERENCE_TOPICS], ...] = ()  # type: ignore[valid-type]
    dose_adjustments: tuple[Annotated[str, Field(min_length=3, max_length=300)], ...] = ()
    interchangeable: tuple[tuple[str, ...], ...] = ()
    option: Annotated[str, Field(max_length=80)] = ""
    # A step written for a special situation (an emergency, a variant histology, a newer
    # biopsy; context on ``derived.situations``): what the board must decide and whom it
    # involves, shown when the plan abstains (consult/engine/abstention.py).
    board_decides: tuple[Annotated[str, Field(min_length=3, max_length=300)], ...] = ()
    specialists: tuple[Annotated[str, Field(min_length=3, max_length=120)], ...] = ()
    # Left out of the content when unset, so that adding them changed no existing unit's hash.
    with_agents: tuple[Annotated[str, Field(min_length=2, max_length=120)], ...] = Field(
        default=(), exclude_if=lambda v: not v
    )
    care_class: Annotated[str, Field(pattern=r"^[a-z0-9_]*$", max_length=40)] = Field(
        default="", exclude_if=lambda v: not v
    )

    @model_validator(mode="after")
    def _with_modalities_for_adjuncts(self) -> TherapyAction:
        if self.with_modalities and self.role != "adjunct":
            raise ValueError("with_modalities is for adjuncts (role: adjunct)")
        if (self.with_agents or self.care_class) and self.role != "adjunct":
            raise ValueError("with_agents and care_class are for adjuncts (role: adjunct)")
        return self

    @model_validator(mode="after")
    def _interchangeable_agents_of_the_regimen(self) -> TherapyAction:
        for group in self.interchangeable:
            if len(set(group)) < 2:
                raise ValueError("an interchangeable group names at least two agents")
            unknown = [a for a in group if a not in self.agents]
            if unknown:
                raise ValueError(f"interchangeable agents not in agents: {', '.join(unknown)}")
        return self


class SafetyAction(_Strict):
    """For contraindications, interactions and organ-function gates: which plan agents (or
    modalities) the rule restricts, how badly, and what to do about it.

    Effects, when the rule fires for this patient: ``remove`` (critical or major: the drug
    leaves the pathway and every alternative; the next safe option takes its place),
    ``condition`` (kept with the advice as a precondition; with ``demotes`` the option cannot
    start until the condition is met, so another safe option goes first and this one becomes
    an alternative "once" it is), ``adjust`` (kept at an adjusted dose: ``advice`` says how,
    and ``calculation`` names a derived fact whose value is shown with it, e.g. the Calvert
    carboplatin dose), ``flag`` (a warning or an action for the patient, nothing withheld).
    ``omit``: a remove rule that withdraws only the agents it names from a regimen that goes
    on without them ("R-CHOP without vincristine"). ``addressed_by``: phrases that, in an
    alternative's ``when``, say it waits until the contraindication no longer holds ("after
    delivery", "once LVEF recovers"): such an alternative stays, never as the pathway.
    ``agents_from``: a derived fact listing the patient's prior regimens
    (``derived.progressed_on``, ``derived.intolerant_of``) whose drugs are the rule's agents, less
    those of ``rechallenge`` (drugs a guideline re-uses after progression, such as trastuzumab
    beyond progression or rituximab in salvage regimens).
    ``check``: a flag that is a patient-level check, reported on every plan it concerns with its
    result (fail when the rule holds, pass when it does not, unknown when its inputs are
    missing), so a clinician sees it was made (the HCC liver-function gate); ``shows``: derived
    facts whose values the result states ("Child-Pugh A, score 5; ALBI grade 1").
    ``verified_by``: for a rule that asks for a test or an examination before the drug ("DPD
    testing before capecitabine", "endoscopy before bevacizumab"), the facts that record its
    result ("biomarkers.dpd_status"): the precondition is met once they are all recorded (what
    they show is judged by the rules about those facts), and not met — the gate ``unknown``,
    asking for them — until then. A firing condition without it is met only when its action is
    recorded, which a dossier does not say: it stays ``unknown`` with the action to confirm.
    ``partners`` (effect ``partner``, "requires partner"): the drug is given only together with
    one of these (ovarian function suppression with an aromatase inhibitor before the
    menopause, a GnRH agonist with one in a man); when the rule fires for an item that gives
    none of them, the gate adds the first drug of the list to it, with the advice.
    """

    type: Literal["safety"] = "safety"
    gate: Annotated[str, Field(pattern=r"^[a-z0-9_]+$", max_length=40)]
    agents: tuple[str, ...] = ()
    modalities: tuple[Modality, ...] = ()
    severity: Severity
    effect: SafetyEffect
    advice: Annotated[str, Field(min_length=3, max_length=400)]
    demotes: bool = False
    calculation: Annotated[str, Field(pattern=r"^derived\.[a-z0-9_]+$", max_length=80)] | None = (
        None
    )
    omit: bool = False
    addressed_by: tuple[Annotated[str, Field(min_length=3, max_length=80)], ...] = ()
    # Left out of the content when unset, so that adding them changed no existing unit's hash.
    agents_from: Annotated[str, Field(pattern=r"^derived\.[a-z0-9_]+$", max_length=80)] | None = (
        Field(default=None, exclude_if=lambda v: v is None)
    )
    rechallenge: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)
    check: bool = Field(default=False, exclude_if=lambda v: v is False)
    shows: tuple[Annotated[str, Field(pattern=FACT_PATTERN, max_length=80)], ...] = Field(
        default=(), exclude_if=lambda v: not v
    )
    verified_by: tuple[Annotated[str, Field(pattern=FACT_PATTERN, max_length=80)], ...] = Field(
        default=(), exclude_if=lambda v: not v
    )
    partners: tuple[Annotated[str, Field(min_length=2, max_length=80)], ...] = Field(
        default=(), exclude_if=lambda v: not v
    )

    @model_validator(mode="after")
    def _targets_something(self) -> SafetyAction:
        if self.rechallenge and not self.agents_from:
            raise ValueError("rechallenge is for rules that take their agents from a fact")
        if (
            not self.agents
            and not self.modalities
            and not self.agents_from
            and self.effect != "flag"
        ):
            raise ValueError(
                "a safety rule that removes, conditions or adjusts must name agents or modalities"
            )
        if self.demotes and self.effect != "condition":
            raise ValueError("demotes is for condition rules")
        if self.calculation and self.effect != "adjust":
            raise ValueError("calculation is for adjust rules")
        if self.omit and (self.effect != "remove" or not self.agents):
            raise ValueError("omit is for remove rules that name agents")
        if self.addressed_by and self.effect != "remove":
            raise ValueError("addressed_by is for remove rules")
        if self.check and self.effect != "flag":
            raise ValueError("check is for flag rules")
        if self.verified_by and not self.conditions():
            raise ValueError("verified_by is for condition rules (a precondition)")
        if (self.effect is SafetyEffect.PARTNER) != bool(self.partners):
            raise ValueError("a partner rule names its partners, and only a partner rule does")
        if self.partners and not self.agents:
            raise ValueError("a partner rule names the agents that need the partner")
        return self

    # --- the safety policy: one definition, read by the gate, the consensus, Safety's votes
    # and the curator's diagnostics, so that they cannot disagree ---------------------------

    def vetoes(self) -> bool:
        """Whether the rule, when it fires, removes the plan items it targets: a "remove" rule
        of critical or major severity. A minor "remove" only conditions them. A critical
        "adjust" vetoes too, as an omission (``omits``): a critical hazard is not dosed around."""
        if self.effect is SafetyEffect.ADJUST:
            return self.severity is Severity.CRITICAL
        return self.effect is SafetyEffect.REMOVE and self.severity in (
            Severity.CRITICAL,
            Severity.MAJOR,
        )

    def omits(self) -> bool:
        """Whether a vetoing rule withdraws only the agents it names, the regimen going on
        without them: marked ``omit``, or a critical "adjust" (vincristine in Charcot-Marie-Tooth
        disease never stays in the regimen at a reduced dose)."""
        return self.omit or (
            self.effect is SafetyEffect.ADJUST and self.severity is Severity.CRITICAL
        )

    def conditions(self) -> bool:
        """Whether the rule, when it fires, keeps the items it targets only on a condition (a
        precondition, or waiting behind another option): a "condition" rule, or a "remove"
        rule too minor to veto."""
        return self.effect is SafetyEffect.CONDITION or (
            self.effect is SafetyEffect.REMOVE and not self.vetoes()
        )

    def restricts(self) -> bool:
        """Whether the rule withholds or conditions what it targets (it vetoes or conditions):
        the rules that win over a therapy step recommending the same drug ("safety first")."""
        return self.vetoes() or self.conditions()

    @property
    def risk(self) -> float:
        """The risk term of the conflict score this rule adds when it fires."""
        return self.severity.risk


class SurveillanceAction(_Strict):
    type: Literal["surveillance"] = "surveillance"
    phase: Phase
    what: Annotated[str, Field(min_length=3, max_length=300)]
    interval: Annotated[str, Field(min_length=3, max_length=120)]
    anchor: ResponseAnchor
    # Drug-specific monitoring: the interval belongs to the plan only while its pathway gives
    # one of these drugs (blood counts on a CDK4/6 inhibitor); empty = whatever the pathway.
    agents: list[Annotated[str, Field(min_length=2, max_length=60)]] = Field(default_factory=list)


class StagingAction(_Strict):
    type: Literal["staging"] = "staging"
    system: Annotated[str, Field(min_length=2, max_length=40)]
    statement: Annotated[str, Field(min_length=3, max_length=400)]


Action = Annotated[
    TherapyAction | SafetyAction | SurveillanceAction | StagingAction,
    Field(discriminator="type"),
]

_ACTION_FOR_KIND: dict[UnitKind, type[BaseModel]] = {
    UnitKind.THERAPY_STEP: TherapyAction,
    UnitKind.CONTRAINDICATION: SafetyAction,
    UnitKind.INTERACTION: SafetyAction,
    UnitKind.ORGAN_FUNCTION_GATE: SafetyAction,
    UnitKind.SURVEILLANCE_INTERVAL: SurveillanceAction,
    UnitKind.STAGING_RULE: StagingAction,
}


class SourceSpec(_Strict):
    key: Annotated[str, Field(pattern=KEY_PATTERN)]
    organisation: Annotated[str, Field(min_length=2, max_length=120)]
    title: Annotated[str, Field(min_length=3, max_length=300)]
    version: Annotated[str, Field(min_length=1, max_length=40)]
    year: Annotated[int, Field(ge=1990, le=2100)]
    jurisdiction: Annotated[str, Field(min_length=2, max_length=40)]
    url: Annotated[str, Field(max_length=500)] = ""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not re.match(r"^https?://[^\s]+$", value):
            raise ValueError("url must be an http(s) address")
        return value


class UnitSpec(_Strict):
    key: Annotated[str, Field(pattern=KEY_PATTERN)]
    source: Annotated[str, Field(pattern=KEY_PATTERN)]
    kind: UnitKind
    cancer_type: UnitCancerType
    title: Annotated[str, Field(min_length=3, max_length=200)]
    text: Annotated[str, Field(min_length=10, max_length=2000)]
    anchor: Annotated[str, Field(min_length=1, max_length=200)]
    grade: Grade
    context: Context = Context()
    action: Action

    @model_validator(mode="after")
    def _action_matches_kind(self) -> UnitSpec:
        expected = _ACTION_FOR_KIND[self.kind]
        if not isinstance(self.action, expected):
            raise ValueError(
                f"a {self.kind.value} unit needs an action of type "
                f"{expected.model_fields['type'].default!r}"
            )
        return self


class Bundle(_Strict):
    format: Literal["mdtboard.kb/1"]
    sources: tuple[SourceSpec, ...]
    units: tuple[UnitSpec, ...]

    @model_validator(mode="after")
    def _references_hold(self) -> Bundle:
        source_keys = [s.key for s in self.sources]
        duplicates = {k for k in source_keys if source_keys.count(k) > 1}
        if duplicates:
            raise ValueError(f"duplicate source keys: {sorted(duplicates)}")
        unit_keys = [u.key for u in self.units]
        duplicates = {k for k in unit_keys if unit_keys.count(k) > 1}
        if duplicates:
            raise ValueError(f"duplicate unit keys: {sorted(duplicates)}")
        missing = sorted({u.source for u in self.units} - set(source_keys))
        if missing:
            raise ValueError(f"units cite sources that the bundle does not define: {missing}")
        return self


def content_hash(content: Mapping[str, Any]) -> str:
    """SHA-256 of a unit's content in canonical JSON: the version's identity, the same in
    the database and in an in-memory bundle."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def unit_content(unit: UnitSpec) -> dict[str, Any]:
    """The versioned content of a unit (everything but its identity), JSON-ready."""
    return unit.model_dump(mode="json", exclude={"key"})
