"""The safety-change classifier: whether a new version of a safety rule strengthens or weakens
it, read from the typed rule, failing closed; checked against the applicability engine."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from clinical.applicability import condition_holds, context_applies
from clinical.rules import Condition, Context, UnitSpec
from knowledge.safety_change import classify, condition_implies, context_broadens

# The published checkpoint-inhibitor rule for solid-organ transplant recipients, as the seed
# has it (common.ci.ici-solid-organ-transplant), cut to a few agents.
TRANSPLANT_RULE: dict[str, Any] = {
    "key": "common.ci.ici-solid-organ-transplant",
    "source": "ema-keytruda-smpc",
    "kind": "contraindication",
    "cancer_type": "any",
    "title": "Checkpoint inhibitors in solid-organ transplant recipients",
    "text": "Solid-organ graft rejection has been reported after PD-1 blockade; in organ "
    "recipients a checkpoint inhibitor is not started as standard therapy.",
    "anchor": "Section 4.4",
    "grade": {"system": "EU SmPC", "native": "Regulatory labelling", "ordinal": 2},
    "context": {
        "all": [{"fact": "diagnosis.transplant_history", "op": "in", "value": ["liver", "kidney"]}]
    },
    "action": {
        "type": "safety",
        "gate": "ici_organ_transplant",
        "agents": ["pembrolizumab", "nivolumab"],
        "severity": "critical",
        "effect": "remove",
        "advice": "Solid-organ transplant recipient: no checkpoint inhibitor.",
    },
}


def _rule(**changes: Any) -> UnitSpec:
    """The transplant rule with top-level fields, or ``action``/``context`` fields, changed."""
    data = {**TRANSPLANT_RULE}
    for name in ("action", "context"):
        if name in changes:
            data[name] = {**TRANSPLANT_RULE[name], **changes.pop(name)}
    data.update(changes)
    return UnitSpec.model_validate(data)


PUBLISHED = _rule()


# --- the weakenings the issue names, one by one ----------------------------------------------


@pytest.mark.parametrize(
    ("proposed", "reason"),
    [
        pytest.param(_rule(action={"agents": ["nivolumab"]}), "pembrolizumab", id="agent-removed"),
        pytest.param(_rule(action={"severity": "major"}), "Severity lowered", id="severity"),
        pytest.param(_rule(action={"effect": "flag"}), "effect is weaker", id="to-a-flag"),
        pytest.param(
            _rule(action={"effect": "condition"}), "effect is weaker", id="to-a-condition"
        ),
        pytest.param(_rule(action={"omit": True}), "withdraws only the drug", id="omit-turned-on"),
        pytest.param(
            _rule(action={"addressed_by": ["after graft tolerance"]}),
            "addressed_by",
            id="addressed-by-added",
        ),
        pytest.param(
            _rule(
                context={
                    "all": [
                        {
                            "fact": "diagnosis.transplant_history",
                            "op": "in",
                            "value": ["liver"],
                        }
                    ]
                }
            ),
            "fewer patients",
            id="context-narrowed",
        ),
        pytest.param(
            _rule(
                context={
                    "all": [
                        *TRANSPLANT_RULE["context"]["all"],
                        {"fact": "patient.age_years", "op": "lt", "value": 70},
                    ]
                }
            ),
            "fewer patients",
            id="all-condition-added",
        ),
        pytest.param(
            _rule(context={"exceptions": ["when the transplant team agrees"]}),
            "exceptions",
            id="exception-added",
        ),
        pytest.param(_rule(cancer_type="lung_adenocarcinoma"), "narrows", id="cancer-narrowed"),
        pytest.param(
            _rule(action={"advice": "Checkpoint inhibitors are acceptable after transplant."}),
            "advice is reworded",
            id="advice-rewritten",
        ),
        pytest.param(
            _rule(
                action={"advice": f"{TRANSPLANT_RULE['action']['advice']} Unless urgent."},
            ),
            "qualify the rule",
            id="advice-qualified",
        ),
        pytest.param(_rule(action={"gate": "ici_other"}), "renamed", id="gate-renamed"),
        pytest.param(
            None,
            "Retiring",
            id="retirement",
        ),
    ],
)
def test_each_weakening_of_the_transplant_rule_is_named(
    proposed: UnitSpec | None, reason: str
) -> None:
    # when the published rule is changed (or retired, None)
    change = classify(PUBLISHED, proposed)
    # then it weakens it, and the reason says how
    assert change.verdict == "weakens"
    assert any(reason in r for r in change.weakens), change.weakens


@pytest.mark.parametrize(
    ("proposed", "reason"),
    [
        pytest.param(
            _rule(action={"agents": ["pembrolizumab", "nivolumab", "atezolizumab"]}),
            "atezolizumab",
            id="agent-added",
        ),
        pytest.param(_rule(context={"all": []}), "more patients", id="all-condition-removed"),
        pytest.param(
            _rule(
                context={
                    "all": [
                        {
                            "fact": "diagnosis.transplant_history",
                            "op": "in",
                            "value": ["liver", "kidney", "other"],
                        }
                    ]
                }
            ),
            "more patients",
            id="list-widened",
        ),
        pytest.param(
            _rule(action={"advice": f"{TRANSPLANT_RULE['action']['advice']} Tell the team."}),
            "only gains words",
            id="advice-added-to",
        ),
        pytest.param(_rule(action={"modalities": ["systemic"]}), "systemic", id="modality"),
    ],
)
def test_each_provable_strengthening_is_named(proposed: UnitSpec, reason: str) -> None:
    change = classify(PUBLISHED, proposed)
    assert change.verdict == "strengthens", change.weakens
    assert any(reason in r for r in change.strengthens), change.strengthens


def test_raising_severity_or_the_effect_strengthens() -> None:
    major_flag = _rule(action={"severity": "major", "effect": "flag"})
    assert classify(major_flag, _rule(action={"effect": "flag"})).strengthens == (
        "Severity raised from major to critical.",
    )
    change = classify(major_flag, _rule(action={"severity": "major"}))
    assert change.verdict == "strengthens"
    assert "effect is stronger" in change.strengthens[0]
    # a condition and a dose adjustment are not comparable: either way needs a second person
    condition = _rule(action={"effect": "condition"})
    adjust = _rule(action={"effect": "adjust"})
    assert classify(condition, adjust).verdict == classify(adjust, condition).verdict == "weakens"


def test_provenance_and_unchanged_content_are_neither() -> None:
    assert classify(PUBLISHED, PUBLISHED).verdict == "unchanged"
    moved = _rule(anchor="Section 4.4 (2026)", grade={**TRANSPLANT_RULE["grade"], "ordinal": 1})
    assert classify(PUBLISHED, moved).verdict == "unchanged"


def test_a_new_safety_rule_strengthens_and_turning_it_into_a_therapy_weakens() -> None:
    assert classify(None, PUBLISHED).verdict == "strengthens"
    therapy = UnitSpec.model_validate(
        {
            **TRANSPLANT_RULE,
            "kind": "therapy_step",
            "action": {
                "type": "therapy",
                "modality": "systemic",
                "description": "Pembrolizumab",
                "agents": ["pembrolizumab"],
                "intent": "palliative",
            },
        }
    )
    assert classify(PUBLISHED, therapy).verdict == "weakens"


def test_naming_agents_narrows_a_flag_that_concerned_every_patient() -> None:
    general = _rule(action={"effect": "flag", "agents": []})
    targeted = _rule(action={"effect": "flag"})
    assert classify(general, targeted).verdict == "weakens"


def test_an_any_condition_on_a_new_fact_is_not_proof_of_broadening() -> None:
    # a pregnancy condition could make the gate skip the rule for a patient who cannot be
    # pregnant: "at least one of" gaining it is not provably broader
    old = Context.model_validate(
        {"any": [{"fact": "diagnosis.transplant_history", "op": "eq", "value": "kidney"}]}
    )
    same_fact = Context.model_validate(
        {
            "any": [
                {"fact": "diagnosis.transplant_history", "op": "eq", "value": "kidney"},
                {"fact": "diagnosis.transplant_history", "op": "eq", "value": "liver"},
            ]
        }
    )
    new_fact = Context.model_validate(
        {
            "any": [
                {"fact": "diagnosis.transplant_history", "op": "eq", "value": "kidney"},
                {"fact": "patient.pregnant", "op": "is_true"},
            ]
        }
    )
    assert context_broadens(old, same_fact)
    assert not context_broadens(old, new_fact)
    # and a first "at least one of" group is a new requirement
    assert not context_broadens(Context(), old)


# --- properties ------------------------------------------------------------------------------

AGENTS = ["pembrolizumab", "nivolumab", "bevacizumab", "capecitabine"]
HISTORY = ["liver", "kidney", "other", "none"]


def _conditions() -> st.SearchStrategy[dict[str, Any]]:
    history = st.one_of(
        st.builds(
            lambda v: {"fact": "diagnosis.transplant_history", "op": "in", "value": v},
            st.lists(st.sampled_from(HISTORY), min_size=1, max_size=3, unique=True),
        ),
        st.builds(
            lambda v: {"fact": "diagnosis.transplant_history", "op": "not_in", "value": v},
            st.lists(st.sampled_from(HISTORY), min_size=1, max_size=3, unique=True),
        ),
        st.builds(
            lambda v: {"fact": "diagnosis.transplant_history", "op": "eq", "value": v},
            st.sampled_from(HISTORY),
        ),
        st.just({"fact": "diagnosis.transplant_history", "op": "present"}),
    )
    numeric = st.builds(
        lambda fact, op, v: {"fact": fact, "op": op, "value": v},
        st.sampled_from(["labs.creatinine_mg_dl", "derived.egfr_ckd_epi_2021"]),
        st.sampled_from(["lt", "le", "gt", "ge"]),
        st.sampled_from([1, 1.5, 2, 30, 45, 60]),
    )
    flags = st.builds(
        lambda op: {"fact": "patient.pregnant", "op": op}, st.sampled_from(["is_true", "is_false"])
    )
    text = st.builds(
        lambda v: {"fact": "patient.comorbidities", "op": "contains_any", "value": v},
        st.lists(st.sampled_from(["transplant", "lupus", "crohn"]), min_size=1, unique=True),
    )
    return st.one_of(history, numeric, flags, text)


CONTEXTS = st.builds(
    lambda a, b, e: {"all": a, "any": b, "exceptions": e},
    st.lists(_conditions(), max_size=3),
    st.lists(_conditions(), max_size=3),
    st.lists(st.sampled_from(["in pregnancy", "after graft tolerance"]), max_size=1),
)


@st.composite
def safety_units(draw: st.DrawFn) -> UnitSpec:
    effect = draw(st.sampled_from(["remove", "condition", "adjust", "flag"]))
    agents = draw(st.lists(st.sampled_from(AGENTS), max_size=3, unique=True))
    modalities = draw(st.lists(st.sampled_from(["systemic", "surgery"]), max_size=1, unique=True))
    agents_from = draw(st.sampled_from([None, "derived.progressed_on"]))
    if effect != "flag" and not (agents or modalities or agents_from):
        agents = ["pembrolizumab"]
    action: dict[str, Any] = {
        "type": "safety",
        "gate": draw(st.sampled_from(["ici_organ_transplant", "renal"])),
        "agents": agents,
        "modalities": modalities,
        "severity": draw(st.sampled_from(["critical", "major", "minor"])),
        "effect": effect,
        "advice": draw(
            st.sampled_from(
                [
                    "No checkpoint inhibitor.",
                    "No checkpoint inhibitor. Tell the transplant team.",
                    "No checkpoint inhibitor unless the team agrees.",
                    "Reduce the dose by half.",
                ]
            )
        ),
        "agents_from": agents_from,
        "shows": draw(st.lists(st.sampled_from(["derived.albi_grade"]), max_size=1)),
    }
    if agents_from:
        action["rechallenge"] = draw(st.lists(st.sampled_from(["trastuzumab"]), max_size=1))
    if effect == "condition":
        action["demotes"] = draw(st.booleans())
    if effect == "remove":
        action["omit"] = bool(agents) and draw(st.booleans())
        action["addressed_by"] = draw(st.lists(st.sampled_from(["after delivery"]), max_size=1))
    if effect == "adjust":
        action["calculation"] = draw(st.sampled_from([None, "derived.carboplatin_dose"]))
    if effect == "flag":
        action["check"] = draw(st.booleans())
    data = {
        **TRANSPLANT_RULE,
        "kind": draw(st.sampled_from(["contraindication", "interaction"])),
        "cancer_type": draw(st.sampled_from(["any", "lung_adenocarcinoma"])),
        "title": draw(st.sampled_from(["ICI after transplant", "ICI after organ transplant"])),
        "context": draw(CONTEXTS),
        "action": action,
    }
    try:
        return UnitSpec.model_validate(data)
    except ValidationError:
        assume(False)
        raise  # unreachable: assume(False) stops the example


FACTS = st.fixed_dictionaries(
    {
        "diagnosis.transplant_history": st.sampled_from([None, *HISTORY, "Kidney"]),
        "labs.creatinine_mg_dl": st.sampled_from([None, 0.8, 1.5, 2, 3.1, "high"]),
        "derived.egfr_ckd_epi_2021": st.sampled_from([None, 20, 30, 44.9, 45, 90]),
        "patient.pregnant": st.sampled_from([None, True, False]),
        "patient.comorbidities": st.sampled_from(
            [None, [], ["kidney transplant 2019"], ["no lupus"], ["Crohn disease"]]
        ),
    }
)

RANK = {False: 0, None: 1, True: 2}
PROPERTY = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@PROPERTY
@given(safety_units())
def test_retiring_any_safety_rule_weakens_it(unit: UnitSpec) -> None:
    assert classify(unit, None).verdict == "weakens"


@PROPERTY
@given(safety_units())
def test_an_unchanged_rule_is_neither_stronger_nor_weaker(unit: UnitSpec) -> None:
    assert classify(unit, unit).verdict == "unchanged"


@PROPERTY
@given(safety_units(), safety_units())
def test_a_change_and_its_inverse_never_both_strengthen(old: UnitSpec, new: UnitSpec) -> None:
    forward, backward = classify(old, new), classify(new, old)
    assert not (forward.verdict == "strengthens" and backward.verdict == "strengthens")
    # and a change that strengthens is undone only by one that weakens
    if forward.verdict == "strengthens":
        assert backward.verdict == "weakens"


@PROPERTY
@given(
    st.builds(Condition.model_validate, _conditions()),
    st.builds(Condition.model_validate, _conditions()),
    FACTS,
)
def test_a_relaxed_condition_holds_wherever_the_old_one_did(
    old: Condition, new: Condition, facts: dict[str, Any]
) -> None:
    assume(condition_implies(old, new))
    assert RANK[condition_holds(new, facts)] >= RANK[condition_holds(old, facts)]


@PROPERTY
@given(CONTEXTS, CONTEXTS, FACTS)
def test_a_context_proven_broader_applies_wherever_the_old_one_did(
    old: dict[str, Any], new: dict[str, Any], facts: dict[str, Any]
) -> None:
    # given two contexts of which the classifier says the second is broader
    before, after = Context.model_validate(old), Context.model_validate(new)
    assume(context_broadens(before, after))
    # then for every patient the new one applies at least as surely (false < unknown < true),
    # and it tests no fact the old one did not
    assert RANK[context_applies(after, facts)] >= RANK[context_applies(before, facts)]
    facts_before = {c.fact for c in (*before.all, *before.any)}
    assert {c.fact for c in (*after.all, *after.any)} <= facts_before


def _mutations(data: dict[str, Any], draw: st.DrawFn) -> None:
    """One edit a curator might make, in place: toward stronger, weaker or sideways."""
    action, context = data["action"], data["context"]
    edit = draw(
        st.sampled_from(
            [
                "agent+",
                "agent-",
                "severity",
                "effect",
                "demotes",
                "omit",
                "all-",
                "all+",
                "any-",
                "any+",
                "exception",
                "advice",
                "cancer",
                "addressed_by",
            ]
        )
    )
    if edit == "agent+":
        action["agents"] = sorted({*action.get("agents", []), draw(st.sampled_from(AGENTS))})
    elif edit == "agent-" and action.get("agents"):
        action["agents"] = action["agents"][1:]
    elif edit == "severity":
        action["severity"] = draw(st.sampled_from(["critical", "major", "minor"]))
    elif edit == "effect":
        action["effect"] = draw(st.sampled_from(["remove", "condition", "adjust", "flag"]))
    elif edit == "demotes":
        action["demotes"] = not action.get("demotes", False)
    elif edit == "omit":
        action["omit"] = not action.get("omit", False)
    elif edit == "all-" and context["all"]:
        context["all"] = context["all"][1:]
    elif edit == "all+":
        context["all"] = [*context["all"], draw(_conditions())]
    elif edit == "any-" and context["any"]:
        context["any"] = context["any"][1:]
    elif edit == "any+":
        context["any"] = [*context["any"], draw(_conditions())]
    elif edit == "exception":
        context["exceptions"] = [] if context.get("exceptions") else ["when the team agrees"]
    elif edit == "advice":
        action["advice"] = draw(
            st.sampled_from([action["advice"] + " Tell the team.", "Consider it.", "No ICI."])
        )
    elif edit == "cancer":
        data["cancer_type"] = "any" if data["cancer_type"] != "any" else "lung_adenocarcinoma"
    elif edit == "addressed_by":
        action["addressed_by"] = [] if action.get("addressed_by") else ["after delivery"]


@st.composite
def edits(draw: st.DrawFn) -> tuple[UnitSpec, UnitSpec]:
    """A rule and the same rule after one to three edits (valid ones only)."""
    unit = draw(safety_units())
    data = unit.model_dump(mode="json")
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        _mutations(data, draw)
    try:
        return unit, UnitSpec.model_validate(data)
    except ValidationError:
        assume(False)
        raise


@PROPERTY
@given(edits())
def test_an_edit_and_its_undoing_never_both_strengthen(pair: tuple[UnitSpec, UnitSpec]) -> None:
    old, new = pair
    forward, backward = classify(old, new), classify(new, old)
    assert not (forward.verdict == "strengthens" and backward.verdict == "strengthens")
    event(f"forward {forward.verdict}")
    if forward.verdict == "strengthens":
        assert backward.verdict == "weakens", (forward, backward)
