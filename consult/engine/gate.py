"""The deterministic safety gate: always runs after the Coordinator, whatever the engine.

Two halves: ``findings.evaluate`` decides, purely, what each rule means for the plan (clear,
unknown, or fires with a kind of effect); this module applies each finding with the handler
of its kind (``HANDLERS``), then arranges the pathway.

Every published contraindication, interaction and organ-function gate is checked against the
plan items (pathway and alternatives), by the drugs they give (generic, brand, regimen or class,
``lexicon``) and their modality. When a rule fires:

- a critical or major "remove" takes the item out of the pathway and every alternative, and
  the next safe option becomes the pathway. Two exceptions keep the item without the drug: the
  agent has an interchangeable partner in the regimen (cisplatin -> carboplatin), or the rule
  ``omit``s it (R-CHOP without vincristine). An alternative whose ``when`` addresses the rule
  ("after delivery") is *held*: it stays an alternative, never the pathway;
- a "condition" that ``demotes`` puts the item behind every option that is not blocked; a
  critical one holds it (never the pathway, even when nothing safer is on offer);
- a plain "condition" (and a minor "remove") stays attached as the action the item requires
  (premedication, a baseline test, prophylaxis); an "adjust" adds the dose adjustment (with its
  calculated value); a "flag" warns.

Each rule checked is reported with its status: ``fail`` when the item cannot be given as
planned (removed, held, demoted), ``pass`` when it can (the rule does not fire, or the item
goes ahead with the required action, the adjusted dose, without the withdrawn agent, or with
a warning), ``unknown`` when the inputs are missing (it asks for the data, never passes
silently). ``effect`` says which, ``action`` what must be done. Only rules that concern an item
of the plan are reported (and flags about the patient whatever the plan); rules about
pregnancy or breastfeeding are left out for a patient who cannot be pregnant. Each decision
leaves a conflict record with the safety-first rationale.

Two checks are shown whatever the plan: a rule marked ``check`` (the HCC liver-function gate)
with the values it read, and the allergy check (``with_allergy_check``, added by the
deliberation), which sums up the ``allergy_*`` rules and the drugs the recorded allergies name:
failed, passed or not checked.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clinical import lexicon
from clinical.plan import ConflictRecord, Flag, GateResult, PlanComponent, RejectedOption
from clinical.rules import SafetyAction
from clinical.vocab import ComponentRole, GateEffect, GateStatus, Modality, SafetyEffect, Severity
from consult.engine.consensus import conflict_record
from consult.engine.dosing import dose_note
from consult.engine.findings import (
    FIRES,
    REPRODUCTIVE_FACTS,
    Finding,
    Kind,
    cannot_be_pregnant,
    evaluate,
    readable,
)
from consult.engine.hygiene import Excluded, clean_text, without_partners
from consult.engine.matching import addressed, agents_overlap, norm_name, substitution, targets
from consult.engine.pathway import ADJUNCT_MODALITIES, arrange, modalities_done, once
from consult.engine.protocols import Evidence
from consult.engine.schemas import ProposedComponent


@dataclass
class GateOutcome:
    components: list[PlanComponent]
    gates: list[GateResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    rejected: list[RejectedOption] = field(default_factory=list)
    conflicts: list[ConflictRecord] = field(default_factory=list)
    needs_data: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    # Plan items waiting for a precondition (demoted) or for the contraindication to pass (held).
    blocked: dict[str, str] = field(default_factory=dict)
    # The facts a critical rule about a pathway item needs before it starts, first of the
    # data requests ("organ_function.lvef_pct (for common.gate.anthracycline-lvef)").
    confirm_needs: list[str] = field(default_factory=list)
    # What to confirm before the pathway starts ("Confirm before starting doxorubicin: LVEF").
    confirm_first: list[str] = field(default_factory=list)

    @property
    def option(self) -> PlanComponent | None:
        """The recommended treatment option (the first primary item that is not an adjunct)."""
        return next(
            (
                c
                for c in self.components
                if c.role == "primary" and not (c.adjunct or c.modality in ADJUNCT_MODALITIES)
            ),
            None,
        )

    @property
    def safe_pathway(self) -> bool:
        """Whether the pathway has an option that waits for nothing."""
        option = self.option
        return option is not None and option.description not in self.blocked


def _as_plan(
    component: ProposedComponent, conditions: list[str], order: int, waits_for: str = ""
) -> PlanComponent:
    return PlanComponent(
        waits_for=waits_for if component.role == "primary" else "",
        role=component.role,
        order=order if component.role == "primary" else None,
        rank=component.rank if component.role == "alternative" else None,
        when=component.when if component.role == "alternative" else "",
        modality=component.modality,
        description=component.description,
        agents=list(component.agents),
        dose_adjustments=list(component.dose_adjustments),
        evidence=list(component.evidence),
        conditions=conditions,
        adjunct=component.adjunct,
        rationale=list(component.rationale),
    )


def label_of(fact: str, labels: Mapping[str, str]) -> str:
    """A fact as a clinician reads it: "organ_function.lvef_pct" -> "LVEF (%)"."""
    return labels.get(fact) or fact.split(".")[-1].replace("_", " ")


def _calculated(
    rule: SafetyAction,
    facts: Mapping[str, Any],
    component: ProposedComponent,
    labels: Mapping[str, str],
) -> str:
    name = rule.calculation
    if not name:
        return ""
    # A dose is worked out for the regimen of this item (its AUC, its mg/m2), in words.
    note = dose_note(name, component, facts)
    if note is not None:
        return f": {note}"
    value = facts.get(name)
    label = labels.get(name) or name.removeprefix("derived.").replace("_", " ")
    return f" [{label}: {value}]" if value is not None else f" [{label}: not calculable]"


def relevant_need(need: str, facts: Mapping[str, Any]) -> bool:
    """Whether a data request ("patient.pregnant (for unit)") concerns this patient: a
    pregnancy status is not asked of a patient who cannot be pregnant."""
    fact = need.split(" ", 1)[0]
    return not (fact in REPRODUCTIVE_FACTS and cannot_be_pregnant(facts))


@dataclass
class _Application:
    """What applying the findings has decided so far, for one run of the gate."""

    items: list[ProposedComponent]
    facts: Mapping[str, Any]
    labels: Mapping[str, str]
    outcome: GateOutcome
    removed: dict[str, str] = field(default_factory=dict)
    demoted: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)
    # Agents the gate withdrew from an item (an interchangeable partner took their place, or
    # the regimen goes on without them).
    withdrawn: dict[int, set[str]] = field(default_factory=dict)
    conditions: dict[str, list[str]] = field(default_factory=dict)
    # What the rules that fired exclude for this patient: no plan item may name it.
    excluded_names: list[str] = field(default_factory=list)
    excluded_modalities: list[str] = field(default_factory=list)
    # Critical rules that cannot be checked: what each item must confirm before it starts, and
    # the facts needed (with their rule).
    confirm: dict[str, dict[tuple[str, str], list[str]]] = field(default_factory=dict)
    confirm_needs: dict[str, list[str]] = field(default_factory=dict)
    # what of ``confirm`` is an action to confirm, not facts to record
    actions: set[str] = field(default_factory=set)

    def condition(self, description: str, text: str) -> None:
        self.conditions.setdefault(description, []).append(text)

    def report(self, finding: Finding, status: GateStatus, effect: GateEffect, **more: Any) -> None:
        unit = finding.unit
        self.outcome.gates.append(
            GateResult(
                gate=finding.rule.gate,
                status=status,
                effect=effect,
                unit=unit.unit_id,
                applies_to=list(finding.applies_to),
                **{"detail": f"{unit.title}: {finding.rule.advice}".strip(": "), **more},
            )
        )

    def conflict(self, semantic: float, risk: float, implementation: float, text: str) -> None:
        self.outcome.conflicts.append(
            conflict_record(
                between=["treatment", "safety"],
                semantic=semantic,
                risk=risk,
                implementation=implementation,
                resolution=text,
            )
        )


# --- one handler per kind of finding -------------------------------------------------------------


def _check(finding: Finding, state: _Application) -> None:
    """A patient-level check is shown whatever it finds (passed, failed, not checked)."""
    unit, rule = finding.unit, finding.rule
    state.outcome.gates.append(_check_result(unit, rule, state.facts, state.labels))
    if unit.applies is True:
        state.outcome.flags.append(
            Flag(
                severity=rule.severity,
                text=f"{unit.title}. {rule.advice}".strip(),
                evidence=[unit.unit_id],
            )
        )
    elif unit.applies is None:
        state.outcome.needs_data.extend(f"{f} (for {unit.unit_id})" for f in unit.missing)


def _unknown(finding: Finding, state: _Application) -> None:
    unit, rule = finding.unit, finding.rule
    needs = [label_of(fact, state.labels) for fact in finding.missing]
    state.report(
        finding,
        GateStatus.UNKNOWN,
        GateEffect.NEEDS_DATA,
        needs=needs,
        needs_facts=list(finding.missing),
        detail=f"{unit.title}: cannot be checked for {finding.what}; needs "
        + (", ".join(needs) or "data not in the dossier"),
    )
    state.outcome.needs_data.extend(f"{fact} (for {unit.unit_id})" for fact in finding.missing)
    if rule.severity is Severity.CRITICAL and rule.restricts():
        _confirm_first(finding, state, needs)


def _confirm_first(
    finding: Finding, state: _Application, needs: Sequence[str], *, action: str = ""
) -> None:
    """A critical rule left unchecked is not a pass: the item is conditional on the missing
    fact, or waits behind the next safe option when other facts make the contraindication
    likely (ESC 2022 cardio-oncology: LVEF before anthracyclines and HER2 therapy; SmPCs:
    pregnancy status before teratogens, transplant and autoimmune history before checkpoint
    inhibitors; EMA 2020: DPD status before a fluoropyrimidine)."""
    unit = finding.unit
    # what the step before the drug asks: the facts to record, or the action to confirm
    needed = " and ".join(needs) or action or "the missing data"
    if not needs and action:
        state.actions.add(needed)
    likely = state.facts.get("derived.likely_missing") or {}
    reasons = [str(likely[f]) for f in finding.missing if likely.get(f)]
    for index, names in finding.hits.items():
        description = state.items[index].description
        if reasons:
            # the next safe option goes first; should this one still lead (nothing safer),
            # the step before it confirms the fact
            state.demoted.setdefault(description, f"{needed} is known ({'; '.join(reasons)})")
            state.condition(description, f"Confirm {needed} first: {'; '.join(reasons)}")
        drugs = ", ".join(readable(sorted(set(names))))
        rules = state.confirm.setdefault(description, {}).setdefault((needed, drugs), [])
        rules.append(f"{unit.title} ({unit.unit_id})")
        state.confirm_needs.setdefault(description, []).extend(
            f"{fact} (for {unit.unit_id})" for fact in finding.missing
        )


def _clear(finding: Finding, state: _Application) -> None:
    state.report(
        finding,
        GateStatus.PASS,
        GateEffect.CLEAR,
        detail=f"{finding.unit.title}: checked for {finding.what}, does not apply to this patient",
    )


def _veto(finding: Finding, state: _Application) -> None:
    """The items leave the plan, or lose the drug (an interchangeable partner takes its place,
    or the regimen goes on without it), or stay an alternative held until it passes."""
    unit, rule = finding.unit, finding.rule
    advice, severity = rule.advice, rule.severity
    result = GateEffect.REMOVED
    kept_only = True  # every item kept, without the agent or as a held alternative
    for index, names in finding.hits.items():
        item = state.items[index]
        description = item.description
        if description in state.removed:
            continue
        phrase = addressed(rule, item)
        if phrase:
            state.held.setdefault(description, item.when)
            state.condition(description, f"{advice} ({unit.unit_id})")
            state.conflict(
                0.5,
                rule.risk,
                0.5,
                f"{description} ({', '.join(names)}) stays an alternative only {item.when}, "
                f"never the pathway: {severity} {unit.kind} {unit.unit_id}.",
            )
            result = GateEffect.HELD
            continue
        withdraw = substitution(item, names, rule)
        if withdraw is not None:
            item.agents = [a for a in item.agents if a not in withdraw]
            item.interchangeable = [
                [a for a in group if a not in withdraw] for group in item.interchangeable
            ]
            state.withdrawn.setdefault(index, set()).update(norm_name(n) for n in names)
            item.dose_adjustments.append(
                f"Without {', '.join(withdraw)}: {advice} ({unit.unit_id})"
            )
            partner = (
                "the regimen goes on without it"
                if rule.omits()
                else "the interchangeable agent of the regimen takes its place"
            )
            state.conflict(
                0.5,
                rule.risk,
                0.5,
                f"Safety gate withdrew {', '.join(withdraw)} from {description}: {severity} "
                f"{unit.kind} {unit.unit_id}; {partner}.",
            )
            if result != GateEffect.HELD:
                result = GateEffect.WITHDRAWN
            continue
        kept_only = False
        result = GateEffect.REMOVED
        # A rule about the patient's history names the drugs it found there.
        named = f" ({', '.join(names)})" if rule.agents_from else ""
        state.removed[description] = f"{unit.title}{named}: {advice} ({unit.unit_id})"
        state.conflict(
            1.0,
            rule.risk,
            0.0,
            f"Safety gate removed {description} ({', '.join(names)}): {severity} {unit.kind} "
            f"{unit.unit_id}; safety takes precedence over efficacy; the next safe option takes "
            "its place.",
        )
    # the plan keeps every item, each without the agent
    status = GateStatus.PASS if kept_only and result == GateEffect.WITHDRAWN else GateStatus.FAIL
    state.report(finding, status, result)


def _wait(finding: Finding, state: _Application) -> None:
    """A failed gate: the option waits for the precondition. A critical one never leads the
    pathway, even when nothing safer is on offer."""
    unit, rule = finding.unit, finding.rule
    advice = rule.advice
    critical = rule.severity is Severity.CRITICAL
    for index in finding.hits:
        description = state.items[index].description
        state.condition(description, f"{advice} ({unit.unit_id})")
        if critical:
            state.held.setdefault(description, once(advice))
        else:
            state.demoted.setdefault(description, advice.rstrip("."))
    state.conflict(
        0.5,
        rule.risk,
        0.5,
        f"{finding.what}: waits for a precondition, the next safe option goes "
        + ("first, and it never leads the pathway before: " if critical else "first: ")
        + f"{advice} ({unit.unit_id}).",
    )
    state.report(finding, GateStatus.FAIL, GateEffect.HELD if critical else GateEffect.DEMOTED)


def _keep_on_condition(finding: Finding, state: _Application) -> None:
    unit, rule = finding.unit, finding.rule
    for index in finding.hits:
        state.condition(state.items[index].description, f"{rule.advice} ({unit.unit_id})")
    state.conflict(
        0.5,
        rule.risk,
        0.5,
        f"Kept {finding.what} on condition: {rule.advice} ({unit.unit_id}).",
    )


def _precondition(finding: Finding, state: _Application) -> None:
    """The items go ahead with the action the rule requires, not recorded as done: unknown
    until the result it asks for is recorded (a test, an examination), or, for an action the
    dossier cannot record (premedication, a switch of co-medication), until the team confirms
    it. A critical one is confirmed before the drug starts."""
    unit, rule = finding.unit, finding.rule
    _keep_on_condition(finding, state)
    needs = [label_of(fact, state.labels) for fact in finding.missing]
    wanted = ", ".join(needs) if needs else "confirmation that it is done"
    state.report(
        finding,
        GateStatus.UNKNOWN,
        GateEffect.PRECONDITION,
        action=rule.advice,
        needs=needs,
        needs_facts=list(finding.missing),
        detail=f"{unit.title}: required for {finding.what}, not recorded ({wanted}): {rule.advice}",
    )
    state.outcome.needs_data.extend(f"{fact} (for {unit.unit_id})" for fact in finding.missing)
    if rule.severity is Severity.CRITICAL:
        _confirm_first(finding, state, needs, action=_action_needed(rule.advice))


def _action_needed(advice: str) -> str:
    """What a precondition without a recorded result asks for, in a few words."""
    return advice.split(":", 1)[-1].strip().split(";")[0].rstrip(".") or advice


def _met(finding: Finding, state: _Application) -> None:
    """The result the precondition asks for is recorded: passed, with the values read (what
    they show is for the rules about those facts); the advice stays with the items."""
    unit, rule = finding.unit, finding.rule
    _keep_on_condition(finding, state)
    values = "; ".join(_value_text(f, state.facts.get(f), state.labels) for f in rule.verified_by)
    state.report(
        finding,
        GateStatus.PASS,
        GateEffect.PRECONDITION,
        action=rule.advice,
        detail=f"{unit.title}: result recorded ({values}). {rule.advice}",
    )


def _recorded(finding: Finding, state: _Application) -> None:
    """Already withdrawn by the board for this rule."""
    state.report(finding, GateStatus.FAIL, GateEffect.REMOVED)


def _dose(finding: Finding, state: _Application) -> None:
    unit, rule = finding.unit, finding.rule
    for index in finding.hits:
        item = state.items[index]
        calculated = _calculated(rule, state.facts, item, state.labels)
        text = f"{rule.advice}{calculated} ({unit.unit_id})"
        if text not in item.dose_adjustments:
            item.dose_adjustments.append(text)
    state.report(finding, GateStatus.PASS, GateEffect.DOSE, action=rule.advice)


def _partner(finding: Finding, state: _Application) -> None:
    """The drug goes only with a partner (ovarian function suppression with an aromatase
    inhibitor before the menopause): an item that gives none of the partners gets the first
    drug of them, with the advice; whatever field named the drug (agents or description)."""
    unit, rule = finding.unit, finding.rule
    added: list[str] = []
    for index in finding.hits:
        item = state.items[index]
        if agents_overlap(rule.partners, item):
            continue
        partner = _partner_drug(rule.partners)
        item.agents.append(partner)
        state.condition(item.description, f"With {partner}: {rule.advice} ({unit.unit_id})")
        added.append(partner)
    if added:
        state.conflict(
            0.3,
            rule.risk,
            0.3,
            f"Added {', '.join(sorted(set(added)))} to {finding.what}: {rule.advice} "
            f"({unit.unit_id}).",
        )
    given = "added by the safety gate" if added else "already in the plan"
    state.report(
        finding,
        GateStatus.PASS,
        GateEffect.PARTNER,
        action=rule.advice,
        detail=f"{unit.title}: {finding.what} with {' or '.join(rule.partners[:3])} ({given}). "
        f"{rule.advice}",
    )


def _partner_drug(partners: Sequence[str]) -> str:
    """The partner the gate adds: the first that names a drug (not a class or a phrase)."""
    for name in partners:
        found = lexicon.resolve(name)
        if found is not None and found[0]:
            return name
    return partners[0]


def _warn(finding: Finding, state: _Application) -> None:
    """A flag asks for an action (e.g. antiviral prophylaxis); nothing is withheld."""
    state.report(finding, GateStatus.PASS, GateEffect.WARNING, action=finding.rule.advice)


def _moot(finding: Finding, state: _Application) -> None:
    """About a state the patient is known not to be in: cited, nothing to show."""


HANDLERS: dict[Kind, Callable[[Finding, _Application], None]] = {
    Kind.CHECK: _check,
    Kind.UNKNOWN: _unknown,
    Kind.CLEAR: _clear,
    Kind.MOOT: _moot,
    Kind.VETO: _veto,
    Kind.WAIT: _wait,
    Kind.PRECONDITION: _precondition,
    Kind.MET: _met,
    Kind.RECORDED: _recorded,
    Kind.DOSE: _dose,
    Kind.PARTNER: _partner,
    Kind.WARN: _warn,
}


def _apply(finding: Finding, state: _Application) -> None:
    unit, rule = finding.unit, finding.rule
    if finding.excludes:
        state.excluded_names.extend(rule.agents)
        state.excluded_modalities.extend(rule.modalities)
    if not finding.reported:
        return
    state.outcome.cited.append(unit.unit_id)
    if finding.kind in FIRES:
        state.outcome.flags.append(
            Flag(
                severity=rule.severity,
                text=f"{unit.title}. {rule.advice}".strip(),
                evidence=[unit.unit_id],
            )
        )
    HANDLERS[finding.kind](finding, state)


def safety_gate(
    components: Sequence[ProposedComponent],
    safety_units: Sequence[Evidence],
    *,
    facts: Mapping[str, Any] | None = None,
    declines: Collection[str] = (),
    ruled_out: Sequence[ProposedComponent] = (),
    labels: Mapping[str, str] | None = None,
) -> GateOutcome:
    """``ruled_out``: items the board already withdrew (a member answering an objection):
    not planned again, but the rules about them are reported, so the plan shows why.
    ``safety_units``: every safety rule to check, whether or not it applies (those that do
    not are reported as passed for the items they concern).

    Each rule is evaluated (``findings.evaluate``: pure) against the items as the rules
    before it left them, then applied by the handler of its kind."""
    facts = facts or {}
    labels = labels or {}
    outcome = GateOutcome(components=[])
    state = _Application(
        items=[c.model_copy(deep=True) for c in components],
        facts=facts,
        labels=labels,
        outcome=outcome,
    )
    for unit in sorted(safety_units, key=lambda u: u.unit_id):
        finding = evaluate(
            unit, state.items, facts=facts, ruled_out=ruled_out, withdrawn=state.withdrawn
        )
        if finding is not None:
            _apply(finding, state)
    removed, demoted, held, conditions = state.removed, state.demoted, state.held, state.conditions
    confirm, confirm_needs = state.confirm, state.confirm_needs
    items = state.items
    _named_allergens(items, facts, removed, outcome)
    items = _without_excluded_names(
        items,
        Excluded.of(state.excluded_names, state.excluded_modalities),
        outcome=outcome,
        removed=removed,
        held=held,
        keyed=(demoted, conditions, confirm, confirm_needs),
    )
    arranged = arrange(
        items,
        removed=removed,
        demoted=demoted,
        held=held,
        declines=declines,
        done=modalities_done(facts),
    )
    outcome.rejected = [*arranged.rejected, *outcome.rejected]
    outcome.blocked = {**demoted, **held}
    order = 0
    for component in arranged.components:
        checks = confirm.get(component.description, {}) if component.role == "primary" else {}
        for drugs in dict.fromkeys(drugs for _, drugs in checks):
            # A drug whose critical precondition is not recorded is never an unconditional
            # first step: confirming it is a step of the pathway, right before the drug.
            order += 1
            outcome.components.append(_confirm_step(drugs, order))
        if component.role == "primary":
            order += 1
        outcome.components.append(
            _as_plan(
                component,
                conditions.get(component.description, []),
                order,
                demoted.get(component.description, ""),
            )
        )
        if component.role == "primary":
            outcome.confirm_needs += confirm_needs.get(component.description, [])
            outcome.confirm_first += [
                f"Confirm before starting {drugs}: {needed}, "
                + ("not recorded as done" if needed in state.actions else "not recorded")
                + f" ({'; '.join(rules)})"
                for (needed, drugs), rules in checks.items()
            ]
    outcome.confirm_needs = list(dict.fromkeys(outcome.confirm_needs))
    outcome.confirm_first = list(dict.fromkeys(outcome.confirm_first))
    # A rule checked and clear is shown for the items of the plan, not for items the plan no
    # longer holds (withdrawn by the board or removed by another rule).
    planned = {c.description for c in outcome.components}
    outcome.gates = [g for g in outcome.gates if g.effect != "clear" or set(g.applies_to) & planned]
    outcome.needs_data = sorted(set(outcome.needs_data))
    outcome.flags.extend(text_flags(facts, labels))
    return outcome


def _confirm_step(drugs: str, order: int) -> PlanComponent:
    """The pathway step that confirms a critical precondition before the drug it concerns.

    What to confirm is in the plan's ``confirm_first`` ("Confirm before starting doxorubicin:
    LVEF, not recorded (rule)"), not in the step's own words: a plan's components name only
    what is given, and the words of a rule ("transplant history", "no chemotherapy in the first
    trimester") are not a recommendation."""
    return PlanComponent(
        role=ComponentRole.PRIMARY,
        order=order,
        modality=Modality.REFERRAL,
        description=f"Before starting {drugs}: confirm the safety data the record lacks "
        f'(see "Confirm before starting {drugs}")',
        adjunct=True,
        rationale=[
            "A critical safety rule about this drug could not be checked from the record: it is "
            "confirmed before the drug is given (safety gate)."
        ],
    )


def text_flags(facts: Mapping[str, Any], labels: Mapping[str, str]) -> list[Flag]:
    """The facts the rules read from the free text (a structured field left empty), shown
    with their words so the clinician can check them, and the fields the text contradicts."""
    flags: list[Flag] = []
    absent: list[str] = []
    for item in facts.get("derived.from_text") or ():
        label, value, phrase = label_of(item["fact"], labels), item["value"], item["phrase"]
        if value in ("none", False):
            if item["fact"] != "organ_function.immunosuppression":
                absent.append(f'{label} ("{phrase}")')
            continue
        shown = "yes" if value is True else str(value).replace("_", " ")
        flags.append(
            Flag(
                severity=Severity.MINOR,
                text=f'Read from the text, please check: {label}: {shown} ("{phrase}").',
            )
        )
    if absent:
        flags.append(
            Flag(
                severity=Severity.MINOR,
                text="Read from the text as absent: " + "; ".join(absent) + ".",
            )
        )
    for item in facts.get("derived.text_disagreements") or ():
        label = label_of(item["fact"], labels)
        structured = str(item["structured"]).replace("_", " ")
        flags.append(
            Flag(
                severity=Severity.MAJOR,
                text=f'The record disagrees: {label} is "{structured}" in the structured field '
                f'but the text says "{item["phrase"]}"; the structured value was used; '
                "reconcile before treatment.",
            )
        )
    return flags


def _value_text(fact: str, value: Any, labels: Mapping[str, str]) -> str:
    label = label_of(fact, labels)
    if value is None:
        return f"{label}: not available"
    if isinstance(value, float):
        value = f"{value:.2f}"
    return f"{label} {value}"


def _check_result(
    unit: Evidence, rule: SafetyAction, facts: Mapping[str, Any], labels: Mapping[str, str]
) -> GateResult:
    """A patient-level check with the values it read: fail when its rule holds, pass when it
    does not, unknown when its inputs are missing."""
    gate = rule.gate
    shown = "; ".join(_value_text(f, facts.get(f), labels) for f in rule.shows)
    values = f" ({shown})" if shown else ""
    advice = rule.advice
    if unit.applies is None:
        needs = [label_of(fact, labels) for fact in unit.missing]
        return GateResult(
            gate=gate,
            status=GateStatus.UNKNOWN,
            effect=GateEffect.NEEDS_DATA,
            unit=unit.unit_id,
            needs=needs,
            needs_facts=list(unit.missing),
            detail=f"{unit.title}: not checked{values}; needs "
            + (", ".join(needs) or "data not in the dossier"),
        )
    if unit.applies is True:
        return GateResult(
            gate=gate,
            status=GateStatus.FAIL,
            effect=GateEffect.WARNING,
            action=advice,
            unit=unit.unit_id,
            detail=f"{unit.title}: failed{values}. {advice}".strip(),
        )
    return GateResult(
        gate=gate,
        status=GateStatus.PASS,
        effect=GateEffect.CHECKED,
        unit=unit.unit_id,
        detail=f"{unit.title}: passed{values}",
    )


# The safety rules of the knowledge base that read the patient's allergies name their gate
# "allergy_<class>"; the allergy check sums them up.
ALLERGY_GATE_PREFIX = "allergy_"
ALLERGY_CHECK = "allergy_check"


def _allergies(facts: Mapping[str, Any]) -> list[str] | None:
    raw = facts.get("patient.allergies")
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = [raw]
    return [str(a).strip() for a in raw if str(a).strip()] if isinstance(raw, list) else None


# A recorded allergy may be 400 characters long (consult/casefile/fields.py); a rule's advice
# holds at most 400 (clinical/rules.py): quoted longer, it failed the whole consultation.
_ALLERGEN_QUOTED_CHARS = 300


def _quoted_allergen(allergen: str) -> str:
    if len(allergen) <= _ALLERGEN_QUOTED_CHARS:
        return allergen
    return allergen[:_ALLERGEN_QUOTED_CHARS].rstrip() + "…"


def _named_allergens(
    items: Sequence[ProposedComponent],
    facts: Mapping[str, Any],
    removed: dict[str, str],
    outcome: GateOutcome,
) -> None:
    """A recorded allergy to a drug the lexicon knows (by generic, brand or class name)
    removes the items that give it, whether or not a knowledge-base rule covers its class: the
    allergy rules carry the cross-reactivity, this catches a drug no rule names."""
    for allergen in _allergies(facts) or []:
        if lexicon.resolve(allergen) is None:
            continue
        rule = SafetyAction(
            gate=f"{ALLERGY_GATE_PREFIX}recorded",
            agents=(allergen,),
            severity=Severity.CRITICAL,
            effect=SafetyEffect.REMOVE,
            advice=f"Recorded allergy to {_quoted_allergen(allergen)}: not given.",
        )
        for item in items:
            names = targets(rule, item)
            if not names or item.description in removed:
                continue
            removed[item.description] = (
                f"Recorded allergy: {allergen}. The patient is allergic to "
                f"{', '.join(names)}; it is not given (patient.allergies)."
            )
            outcome.flags.append(
                Flag(
                    severity=Severity.CRITICAL,
                    text=f"Recorded allergy to {allergen}: {item.description} is not given.",
                )
            )
            outcome.gates.append(
                GateResult(
                    gate=f"{ALLERGY_GATE_PREFIX}recorded",
                    status=GateStatus.FAIL,
                    effect=GateEffect.REMOVED,
                    applies_to=[item.description],
                    detail=f"Recorded allergy to {allergen}: {', '.join(names)} removed from "
                    "the plan; the next safe option takes its place.",
                )
            )
            outcome.conflicts.append(
                conflict_record(
                    between=["treatment", "safety"],
                    semantic=1.0,
                    risk=1.0,
                    implementation=0.0,
                    resolution=f"Safety gate removed {item.description} ({', '.join(names)}): "
                    f"recorded allergy to {allergen}; the next safe option takes its place.",
                )
            )


def with_allergy_check(outcome: GateOutcome, facts: Mapping[str, Any]) -> GateOutcome:
    """The plan's safety section with its allergy check: one line that stands for the allergy
    rules that found nothing (no line per rule), added whatever the plan."""
    check = allergy_check(outcome.gates, facts)
    outcome.gates = [
        g
        for g in outcome.gates
        if not (g.gate.startswith(ALLERGY_GATE_PREFIX) and g.effect == "clear")
    ]
    outcome.gates.append(check)
    return outcome


def allergy_check(gates: Sequence[GateResult], facts: Mapping[str, Any]) -> GateResult:
    """The allergy check, always shown: failed when a drug of the plan met a recorded
    allergy (it left the plan), passed when the recorded allergies touch nothing the plan
    gives, not checked when no allergy record exists."""
    allergies = _allergies(facts)
    unmapped = facts.get("derived.allergies_unmapped") or []
    by_hand = (
        f" Not matched to a drug class, check by hand: {', '.join(unmapped)}." if unmapped else ""
    )
    if allergies is None:
        return GateResult(
            gate=ALLERGY_CHECK,
            status=GateStatus.UNKNOWN,
            effect=GateEffect.NEEDS_DATA,
            needs=["Allergies"],
            needs_facts=["patient.allergies"],
            detail="Allergy check: not checked - no allergy record in the dossier; record the "
            "allergies (or none known) before prescribing.",
        )
    allergy_gates = [g for g in gates if g.gate.startswith(ALLERGY_GATE_PREFIX)]
    failed = [g for g in allergy_gates if g.status == "fail" or g.effect == "withdrawn"]
    recorded = ", ".join(allergies) or "none known"
    if failed:
        what = "; ".join(sorted({g.detail.split(":")[0] for g in failed}))
        return GateResult(
            gate=ALLERGY_CHECK,
            status=GateStatus.FAIL,
            effect=GateEffect.REMOVED,
            applies_to=sorted({d for g in failed for d in g.applies_to}),
            detail=f"Allergy check: failed - recorded allergies ({recorded}) rule out drugs "
            f"the plan would have given ({what}); they left the plan and the next safe "
            f"option takes their place.{by_hand}",
        )
    checked = [g for g in allergy_gates if g.status == "pass" and g.effect != "clear"]
    caution = (
        " Precautions for the recorded allergies: " + "; ".join(g.detail for g in checked) + "."
        if checked
        else ""
    )
    return GateResult(
        gate=ALLERGY_CHECK,
        status=GateStatus.PASS,
        effect=GateEffect.CHECKED,
        detail=f"Allergy check: passed - recorded allergies ({recorded}) checked against every "
        f"drug of the plan; none of them is affected.{caution}{by_hand}",
    )


def _without_excluded_names(
    items: list[ProposedComponent],
    excluded: Excluded,
    *,
    outcome: GateOutcome,
    removed: dict[str, str],
    held: Mapping[str, str],
    keyed: Sequence[dict[str, Any]],
) -> list[ProposedComponent]:
    """No item names a drug or procedure a rule excluded for this patient (``hygiene``): its
    description loses the alternative that names it, its rationale and dose notes the lines
    that do; an item whose description cannot be cleaned is removed with the reason, and the
    next safe option takes its place. A held alternative keeps its words (its ``when`` says
    why)."""
    if not excluded:
        return items
    kept: list[ProposedComponent] = []
    for item in items:
        if item.description in removed or item.description in held:
            kept.append(item)
            continue
        description = clean_text(item.description, excluded)
        if description is None and any(n.startswith("Without ") for n in item.dose_adjustments):
            # the regimen goes on without the withdrawn drug: it no longer reads as giving it,
            # or, where it cannot be reworded, its note says which drug it goes without
            description = without_partners(item.description, excluded) or item.description
        if description is None:
            names = ", ".join(sorted({n.casefold() for n in excluded.named_in(item.description)}))
            removed[item.description] = (
                f"names {names}, which a safety rule excludes for this patient: not planned "
                "in that form"
            )
            kept.append(item)
            continue
        if description != item.description:
            for mapping in keyed:
                if item.description in mapping:
                    mapping[description] = mapping.pop(item.description)
            outcome.conflicts.append(
                conflict_record(
                    between=["treatment", "safety"],
                    semantic=0.3,
                    risk=0.5,
                    implementation=0.2,
                    resolution=f"{item.description}: the alternative naming a drug or procedure "
                    f"excluded for this patient was taken out ({description}).",
                )
            )
            item.description = description
        item.rationale = [line for line in item.rationale if not excluded.named_in(line)]
        for mapping in keyed:
            required = mapping.get(item.description)
            if isinstance(required, list):
                # a precondition of a drug the item no longer gives ("DPD testing before
                # capecitabine") is moot
                mapping[item.description] = [r for r in required if not excluded.named_in(r)]
        # The gate's "Without X: ..." note stays only while a regimen acronym of the item
        # would still give X without it ("R-DHAP" without cisplatin); otherwise the withdrawal
        # is a rejected option and the item no longer names X.
        still = lexicon.given(item.agents, item.description).drugs & excluded.drugs
        notes = []
        for line in item.dose_adjustments:
            if not excluded.named_in(line) or (line.startswith("Without ") and still):
                notes.append(line)
            elif line.startswith("Without "):
                drug, _, reason = line.removeprefix("Without ").partition(": ")
                outcome.rejected.append(
                    RejectedOption(option=f"{drug} (in: {item.description})", reason=reason)
                )
        item.dose_adjustments = notes
        kept.append(item)
    return kept
