"""Prompts are versioned files in ``prompts/``; a consultation records the versions it used.

Also what each prompt carries, once: the case sections a role needs, evidence as unit ids with
a one-line paraphrase (the full text only for the units the member cites), reports and drafts
as briefs. A prompt's stable part comes first (instructions, then the case and evidence, which
do not change between rounds) and the round's part last, so that servers with prefix caching
reuse the start of every member's prompt."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from clinical import lexicon
from clinical.vocab import CORE_ROLES
from consult.engine.drug_monitoring import gives_agent, step_gives
from consult.engine.protocols import Evidence

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
ROLE_PROMPTS = CORE_ROLES
# Parts of a member's prompt that only some cases need, each its own versioned file: the
# pregnancy instructions where a pregnancy is recorded or not ruled out, the liver-function
# instruction for HCC. A case that does not need them does not pay for them in every call.
CASE_SECTIONS_OF_PROMPT: dict[str, tuple[str, ...]] = {
    "safety": ("safety-pregnancy", "safety-hcc"),
    "monitoring": ("monitoring-pregnancy",),
}
ALL_PROMPTS = (
    *ROLE_PROMPTS,
    "specialist",
    "reviewer",
    "coordinator",
    "voter",
    "common",
    "turn",
    *(section for sections in CASE_SECTIONS_OF_PROMPT.values() for section in sections),
)
# Turns that judge what others wrote (a review, a vote, the round's summary) start with the short
# common part ("turn"); a member's own report with the full one ("common").
SHORT_COMMON = frozenset({"reviewer", "voter", "coordinator"})


@cache
def version(name: str) -> str:
    """The newest version of a prompt ("v2" beside "v1"): earlier files stay, so a recorded
    version can always be read again."""
    numbers = [
        int(p.name.split(".")[-2].removeprefix("v")) for p in PROMPT_DIR.glob(f"{name}.v*.md")
    ]
    if not numbers:
        raise FileNotFoundError(f"no prompt file for {name!r} in {PROMPT_DIR}")
    return f"v{max(numbers)}"


@cache
def load(name: str) -> str:
    return (PROMPT_DIR / f"{name}.{version(name)}.md").read_text(encoding="utf-8")


# An admin-approved refinement (knowledge/memory's prompt versions) follows the file's text
# under this heading: the file stays the default, and the addendum is visibly separate.
ADDENDUM_HEADING = "## Lessons from reviewed cases (approved by an administrator)"


def with_addendum(text: str, addendum: str = "") -> str:
    return f"{text}\n\n{ADDENDUM_HEADING}\n\n{addendum.strip()}" if addendum.strip() else text


def system_prompt(
    name: str,
    role: str,
    addenda: Mapping[str, str] | None = None,
    sections: Sequence[str] = (),
) -> str:
    """The system prompt of a turn: the common part, the named prompt and the case's
    ``sections`` of it (``sections_for``), each with its approved addendum when a database
    version is in force."""
    addenda = addenda or {}
    base = "turn" if name in SHORT_COMMON else "common"
    common = with_addendum(load(base), addenda.get(base, ""))
    # The common part first: every member's prompt starts with the same text (a prefix cache
    # hit). "ROLE:" lets logs, tests and stub servers tell the turns apart without prose.
    parts = [with_addendum(load(n), addenda.get(n, "")) for n in (name, *sections)]
    return f"{common}\n\nROLE: {role}\n\n" + "\n\n".join(parts)


def sections_for(name: str, facts: Mapping[str, Any]) -> tuple[str, ...]:
    """The case-dependent sections of prompt ``name`` this case needs (``facts``: the case's
    facts, notes included). Pregnancy: unless the record rules it out (not pregnant, or male);
    an unrecorded pregnancy keeps the instructions, as the safety rules wait for it."""
    needed = {
        "safety-pregnancy": _pregnancy_possible(facts),
        "monitoring-pregnancy": _pregnancy_possible(facts),
        "safety-hcc": facts.get("cancer_type") == "hcc",
    }
    return tuple(s for s in CASE_SECTIONS_OF_PROMPT.get(name, ()) if needed.get(s, True))


def _pregnancy_possible(facts: Mapping[str, Any]) -> bool:
    pregnant = facts.get("patient.pregnant")
    if pregnant is not None:
        return bool(pregnant)
    return str(facts.get("patient.sex") or "").lower() != "male"


def versions(database: Mapping[str, str] | None = None) -> dict[str, str]:
    """Prompt name -> "v2:<sha256 prefix>", recorded on every consultation; a prompt with a
    database version in force gets its label too ("v2:<sha>+m1:<sha>")."""
    database = database or {}
    return {
        name: f"{version(name)}:{hashlib.sha256(load(name).encode()).hexdigest()[:12]}"
        + (f"+{database[name]}" if name in database else "")
        for name in ALL_PROMPTS
    }


# --- what a prompt carries ------------------------------------------------------------------

# The case sections each member reads (FORMAT.md §1): Safety needs organ function, labs,
# medications and history, not the imaging prose; free-text notes go to the members who
# establish the diagnosis and choose the pathway. A section not listed for any role (a newer
# format's) goes to Diagnostic and Treatment.
_EVERYONE = ("cancer_type", "question")
_CLINICAL = ("patient", "diagnosis", "index_lesion", "lesions", "staging", "biomarkers")
CASE_SECTIONS: dict[str, tuple[str, ...]] = {
    "diagnostic": (*_EVERYONE, *_CLINICAL, "notes"),
    "treatment": (*_EVERYONE, *_CLINICAL, "labs", "organ_function", "notes"),
    "safety": (*_EVERYONE, "patient", "diagnosis", "labs", "organ_function"),
    "monitoring": (*_EVERYONE, *_CLINICAL, "labs"),
    "hepatology": (*_EVERYONE, "patient", "diagnosis", "staging", "labs", "organ_function"),
    "pharmacy": (*_EVERYONE, "patient", "diagnosis", "labs", "organ_function"),
    "cardio_oncology": (*_EVERYONE, "patient", "diagnosis", "organ_function"),
    "fertility": (*_EVERYONE, "patient", "diagnosis"),
    "pathology": (*_EVERYONE, "diagnosis", "index_lesion", "biomarkers"),
    # The Coordinator reads the members' reports, not the record.
    "coordinator": _EVERYONE,
}
_DEFAULT_SECTIONS = (*_EVERYONE, *_CLINICAL, "labs", "organ_function")
_KNOWN = {s for sections in CASE_SECTIONS.values() for s in sections} | {
    "format",
    "case_id",
    "expected",
}


def compact(value: Any) -> Any:
    """``value`` without what says nothing: null, "", [] and {} (a field not given is not
    available, as the common prompt says). False and 0 stay: they are findings."""
    if isinstance(value, Mapping):
        kept = {k: compact(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list | tuple):
        items = [compact(v) for v in value]
        return [v for v in items if v not in (None, "", [], {})]
    return value


def compact_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """``compact`` of a mapping, typed as one."""
    kept: dict[str, Any] = compact(value)
    return kept


def case_for(role: str, case: Mapping[str, Any], *, reviewing: str = "") -> dict[str, Any]:
    """The sections of the case ``role`` needs, without empty fields. A reviewer checks a
    report against the facts it was written from: ``reviewing`` another member's report, the
    sections both read."""
    sections = CASE_SECTIONS.get(role, _DEFAULT_SECTIONS)
    case = {**case, "patient": _without_identity(case.get("patient"))}
    extra = (
        () if role not in ("diagnostic", "treatment") else tuple(k for k in case if k not in _KNOWN)
    )
    kept = compact_dict({k: case[k] for k in (*sections, *extra) if k in case})
    if _generic(kept.get("question")):
        # The board's standing question (FORMAT.md §1's example) is what every member's prompt
        # already asks; a case's own question is sent.
        del kept["question"]
    if not reviewing:
        return kept
    theirs = case_for(reviewing, case)
    return {k: v for k, v in kept.items() if k in theirs}


_GENERIC_QUESTION = re.compile(
    r"what is the recommended (mdt |multidisciplinary )?management of the index lesion\??",
    re.IGNORECASE,
)


def _generic(question: Any) -> bool:
    return isinstance(question, str) and bool(_GENERIC_QUESTION.fullmatch(question.strip()))


def _without_identity(patient: Any) -> Any:
    """The patient section without the pseudonym: no member needs a name, even a made-up one."""
    if not isinstance(patient, Mapping):
        return patient
    return {k: v for k, v in patient.items() if k != "pseudonym"}


def evidence_brief(
    evidence: Sequence[Evidence],
    cited: Iterable[str] = (),
    *,
    actions: bool | Collection[str] = True,
) -> list[dict[str, Any]]:
    """Each unit as its id and one line (its title); ``applies`` only when it does not (a
    unit listed applies unless it says so or names the data it waits for, ``missing``); what a
    unit that applies recommends, in a few words and in the unit's own line (a therapy's
    modality, description and drugs; a surveillance's phase, what, interval and anchor; a
    safety rule's severity); the full text only for ``cited``. Without ``actions`` (a
    reviewer, who reads the proposal's own items and their ids) a therapy's or surveillance's
    recommendation is left out, a safety rule's severity stays; ``actions`` as a collection of
    modalities (a specialist) keeps the recommendations of its discipline's therapies only."""
    full = set(cited)
    lines = []
    for e in evidence:
        line: dict[str, Any] = {"unit_id": e.unit_id, "says": e.title}
        if e.missing and e.applies is None:
            # Waiting for data: the missing fields say so (the common prompt's rule).
            line["missing"] = list(e.missing)
        else:
            if e.applies is not True:
                line["applies"] = e.applies
            if e.missing:
                line["missing"] = list(e.missing)
        # What a unit recommends matters once it applies; until then, what it is waiting for.
        action = e.action if e.applies is True else {}
        kind = action.get("type")
        if kind != "safety" and (
            actions is False or (not isinstance(actions, bool) and not _of_discipline(e, actions))
        ):
            kind = None
        match kind:
            case "therapy":
                line.update(
                    compact(
                        {
                            "modality": action.get("modality"),
                            "description": action.get("description"),
                            "agents": list(action.get("agents") or ()),
                        }
                    )
                )
            case "surveillance":
                line.update(
                    compact({k: action.get(k) for k in ("phase", "what", "interval", "anchor")})
                )
            case "safety":
                line.update(compact({"severity": action.get("severity")}))
        if e.unit_id in full:
            line["text"] = e.text
        lines.append(line)
    return lines


def _of_discipline(unit: Evidence, modalities: Collection[str]) -> bool:
    """Whether a therapy step is a specialist's to read in full: of its discipline's
    modalities, and not care that follows the anticancer drugs (antiemetics, G-CSF: no
    seat's discipline, Treatment's to give with the regimen)."""
    action = unit.action
    return str(action.get("modality")) in modalities and not action.get("with_agents")


def bearing(evidence: Sequence[Evidence], therapies: Sequence[Evidence]) -> list[Evidence]:
    """The units of ``evidence`` that can bear on this board's choice: a rule or a
    drug-specific interval about drugs (or modalities) only when one of ``therapies`` - the
    steps any member may propose - gives one of them. Twenty rules about anthracyclines,
    ribociclib or venetoclax say nothing to a board choosing between resection and ablation,
    nor an antiemetic level for drugs no option gives; the safety gate checks every rule
    against the plan whatever the prompts carried. A rule about the patient (no drug named), a
    name the lexicon does not know, and every other unit stay. No ``therapies``: everything
    stays."""
    if not therapies:
        return list(evidence)
    # Care that follows the drugs (an antiemetic level, G-CSF: ``with_agents``) triggers
    # nothing itself: the treatments do.
    treating = [t for t in therapies if not t.action.get("with_agents")]
    described = [
        (
            lexicon.given(t.action.get("agents") or (), str(t.action.get("description") or "")),
            str(t.action.get("description") or ""),
        )
        for t in treating
    ]
    given = [g for g, _ in described]
    modalities = {str(t.action.get("modality")) for t in treating}

    def bears(e: Evidence) -> bool:
        action = e.action
        agents = [str(a) for a in action.get("agents") or ()]
        named = [str(m) for m in action.get("modalities") or ()]
        triggers = [str(a) for a in action.get("with_agents") or ()]
        if action.get("type") == "therapy" and triggers:
            return any(step_gives(a, g, text) for a in triggers for g, text in described)
        if action.get("type") not in ("safety", "surveillance") or not (agents or named):
            return True
        return any(m in modalities for m in named) or any(
            lexicon.resolve(a) is None or gives_agent(a, given) for a in agents
        )

    return [e for e in evidence if bears(e)]


def waiting(evidence: Sequence[Evidence], cited: Iterable[str] = ()) -> list[Evidence]:
    """The units that wait for missing data (whether they apply is not known), except those
    ``cited`` (their full text goes with the evidence)."""
    full = set(cited)
    return [e for e in evidence if e.applies is None and e.missing and e.unit_id not in full]


def decided(evidence: Sequence[Evidence]) -> list[Evidence]:
    """The units of ``evidence`` that do not wait for missing data."""
    pending = {e.unit_id for e in waiting(evidence)}
    return [e for e in evidence if e.unit_id not in pending]


def evidence_parts(
    evidence: Sequence[Evidence],
    cited: Iterable[str] = (),
    *,
    actions: bool | Collection[str] = True,
) -> dict[str, Any]:
    """A member's evidence as the prompt carries it: ``evidence`` (``evidence_brief``) for the
    units decided, and ``waiting_for_data``: the units that wait for missing data, grouped by
    the data they wait for (by unit id: an id names what the unit is about), so that twenty
    rules waiting for the same bilirubin name it once."""
    cited = set(cited)
    pending = waiting(evidence, cited)
    skipped = {e.unit_id for e in pending}
    groups: dict[str, list[str]] = {}
    for e in pending:
        groups.setdefault(", ".join(e.missing), []).append(e.unit_id)
    # A specialist (``actions`` its discipline's modalities) reads the other therapy steps
    # that apply by id alone: which options the board weighs, not how each is given.
    others = (
        []
        if isinstance(actions, bool)
        else [
            e.unit_id
            for e in evidence
            if e.unit_id not in skipped
            and e.unit_id not in cited
            and e.applies is True
            and e.action.get("type") == "therapy"
            and not _of_discipline(e, actions)
        ]
    )
    hidden = skipped | set(others)
    return compact_dict(
        {
            "evidence": evidence_brief(
                [e for e in evidence if e.unit_id not in hidden],
                cited,
                actions=actions,
            ),
            "other_steps": others,
            "waiting_for_data": groups,
        }
    )


def report_brief(report: Any, *, item_evidence: bool = True) -> dict[str, Any]:
    """A member's report as another member reads it: its conclusion, its claims with their
    evidence ids, its items (by their exact descriptions, which reviews and votes name) and,
    for the member itself (``item_evidence``), the units behind each item; a reviewer, who
    does not hold those units, judges the items by what they give."""
    data = report.model_dump(mode="json")
    return compact_dict(
        {
            "conclusion": data.get("conclusion"),
            "claims": [
                {"text": c.get("text"), "evidence": c.get("evidence")}
                for c in data.get("claims") or ()
            ],
            "intent": data.get("intent"),
            # The items by their role (the pathway, then the ranked alternatives), so that no
            # item says its role again.
            **{
                role: [
                    {
                        **{k: c.get(k) for k in ("description", "rank", "when")},
                        "agents": unnamed(c.get("agents") or (), str(c.get("description") or "")),
                        "evidence": c.get("evidence") if item_evidence else None,
                    }
                    for c in data.get("components") or ()
                    if c.get("role") == role
                ]
                for role in ("primary", "alternative")
            },
            "constraints": data.get("constraints"),
            "monitoring": [
                {k: m.get(k) for k in ("phase", "what", "interval", "anchor")}
                for m in data.get("monitoring") or ()
            ],
            "rejected": data.get("rejected"),
            "needs_data": data.get("needs_data"),
        }
    )


def label(description: str, limit: int = 80) -> str:
    """An item's name as a summary reads it: its description up to the first colon (the
    regimen, "Neoadjuvant TCHP"), or its first ``limit`` characters."""
    head = description.split(":", 1)[0].strip()
    if 0 < len(head) <= limit:
        return head
    return description if len(description) <= limit else description[: limit - 1] + "…"


def unnamed(agents: Iterable[str], description: str) -> list[str]:
    """The drugs of ``agents`` that ``description`` does not name as written: an item's drugs
    are read in its description, and said a second time only when it does not name them."""
    text = description.casefold()
    return [a for a in agents if str(a).casefold() not in text]


def draft_brief(draft: Any) -> dict[str, Any]:
    """The draft plan as a voter reads it: intent and its items by exact description (the
    drugs are in the description), what it rules out, the monitoring."""
    data = draft.model_dump(mode="json")
    return compact_dict(
        {
            # No summary: it is written from these items, and would say them twice.
            "intent": data.get("intent"),
            "primary": [
                c.get("description")
                for c in data.get("components") or ()
                if c.get("role") == "primary"
            ],
            "alternative": [
                {k: c.get(k) for k in ("rank", "description")}
                for c in data.get("components") or ()
                if c.get("role") == "alternative"
            ],
            "rejected": [r.get("option") for r in data.get("rejected") or ()],
            "monitoring": [
                f"{m.get('phase')}: {m.get('what')} ({m.get('interval')})"
                for m in data.get("monitoring") or ()
            ],
        }
    )


def cited_ids(report: Any) -> set[str]:
    """The unit ids a report cites (claims, components, constraints, monitoring)."""
    if report is None:
        return set()
    return {
        unit
        for items in (report.claims, report.components, report.constraints, report.monitoring)
        for item in items
        for unit in item.evidence
    }


def disputed_ids(report: Any, critiques: Iterable[tuple[str, Any]]) -> set[str]:
    """The unit ids of ``report`` (a member's previous report) in dispute: those behind an item
    an objection names (to remove or to demote), and any the objections cite. A member re-asked
    reads the full text of these again; the rest of what it cited is in its previous report by
    id, with each unit's line and recommendation in its evidence. Objections that name nothing
    in particular put everything it cited in dispute."""
    if report is None:
        return set()
    asked = objections(critiques)
    named = {d for _, c in asked for d in (*c.concerns, *c.demote, *c.reasons)}
    words = " ".join(" ".join((c.critique, *c.reasons.values())) for _, c in asked)
    cited = cited_ids(report)
    disputed = {
        unit for item in report.components if item.description in named for unit in item.evidence
    } | {unit for unit in cited if unit in words}
    return disputed if disputed or named else cited


def concerning(evidence: Sequence[Evidence], report: Any) -> list[Evidence]:
    """The units of a reviewer's evidence that bear on ``report``: a safety rule only when it
    names a drug or modality the report proposes (or names none: a rule about the patient), a
    therapy step when the report proposes treatment or cites it, every other unit once it is
    decided whether it applies. A rule about drugs nobody proposed
    has nothing to review."""
    proposed = {
        name.lower() for c in report.components for name in (*c.agents, str(c.modality)) if name
    }
    words = " ".join(c.description.lower() for c in report.components)
    cited = cited_ids(report)
    kept = []
    for e in evidence:
        action = e.action
        if action.get("type") == "therapy" and not report.components and e.unit_id not in cited:
            # A report that proposes no treatment (Safety's, Monitoring's) is not reviewed
            # against therapy steps it does not name.
            continue
        if action.get("type") != "safety":
            # A therapy step or staging rule that waits for missing data says nothing about
            # this proposal yet (its member asks for the data in its own report).
            if e.applies is not None:
                kept.append(e)
            continue
        names = [str(n).lower() for n in (*action.get("agents", ()), *action.get("modalities", ()))]
        if not names or any(n in proposed or n in words for n in names):
            kept.append(e)
    return kept


def objections(critiques: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The critiques that ask something of their target: a disagreement, an item to remove or
    one to demote. An agreement asks nothing."""
    return [(who, c) for who, c in critiques if not c.agree or c.concerns or c.demote]


def at_stake(inp: Any) -> bool:
    """Whether a member has something at stake in the draft it would vote on (a ``VoteInput``):
    an item of its report the draft leaves out, demotes from the pathway or ranks otherwise; an
    item of the draft it has not weighed, for a member that reviews (neither its own nor in a
    report it reviewed: Safety must see what a specialist added); a surveillance interval it
    proposed that the draft lacks; a constraint on a drug the draft gives, other than in an
    alternative held until a stated condition; or an objection it made in this round's
    reviews that the draft has not taken in. A member with none of these agrees by proposing
    or accepting what the draft carries."""
    report, draft = inp.report, inp.draft
    carried = {(c.description, c.role, c.rank) for c in draft.components}
    if any((c.description, c.role, c.rank) not in carried for c in report.components):
        return True
    # A member that cross-reviews weighs the plan's items; one that reviews no report
    # (Monitoring: its remit is the schedule) is not polled on items it never judges.
    weighed = {c.description for r in (report, *inp.reviewed) for c in r.components}
    if inp.reviewed and any(c.description not in weighed for c in draft.components):
        return True
    watched = {m.what for m in draft.monitoring}
    if any(m.what not in watched for m in report.monitoring):
        return True
    # A constraint is at stake where the draft gives its drug in the pathway, or as an
    # alternative with no condition stated; an alternative held until a precondition is met
    # (bevacizumab once the varices are treated) has taken it in.
    given = [
        lexicon.given(c.agents, c.description)
        for c in draft.components
        if c.role == "primary" or not c.when
    ]
    if any(gives_agent(str(a), given) for k in report.constraints for a in k.agents):
        return True
    # An objection it made in this round's reviews, unless the draft took it in: what it said
    # must go is gone, what it said must wait is not first. A disagreement naming no item is
    # asked about.
    present = {c.description for c in draft.components}
    first = {c.description for c in draft.components if c.role == "primary"}
    return any(
        (not c.agree and not c.concerns and not c.demote)
        or set(c.concerns) & present
        or set(c.demote) & first
        for c in inp.critiques_given
    )


def critiques_brief(critiques: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The critiques a member received, each said once: the members who agreed by name only,
    an objection made in the same words (by several members, or in a review and a vote) once
    with all their names and items, and a reason left out where the critique already says
    it."""
    agreed: list[str] = []
    objections: dict[str, dict[str, Any]] = {}
    for who, critique in critiques:
        data = compact_dict(critique.model_dump())
        if data.get("agree") and not data.get("concerns") and not data.get("demote"):
            if who not in agreed:
                agreed.append(who)
            continue
        text = str(data.get("critique") or "")
        reasons = {
            item: reason
            for item, reason in (data.get("reasons") or {}).items()
            if str(reason) not in text
        }
        entry = objections.setdefault(text, {"from": [], "critique": text})
        if who not in entry["from"]:
            entry["from"].append(who)
        # The same objection raised twice (in a review and again with a vote) carries the
        # items of both.
        for field in ("concerns", "demote"):
            for item in data.get(field) or ():
                if item not in entry.setdefault(field, []):
                    entry[field].append(item)
        if reasons:
            entry.setdefault("reasons", {}).update(reasons)
    # In a fixed order (members answer concurrently): the same critiques read the same.
    for entry in objections.values():
        entry["from"].sort()
    return compact_dict(
        {
            "agreed": sorted(agreed),
            "objections": sorted(objections.values(), key=lambda e: (e["from"], e["critique"])),
        }
    )


def residual_brief(residuals: Sequence[Any]) -> list[dict[str, Any]]:
    """The residual contexts of the last two rounds (MDTeamGPT), a summary that repeats the
    one before it said once: a stalled round adds nothing to read."""
    briefs: list[dict[str, Any]] = []
    for residual in residuals[-2:]:
        brief = compact_dict(residual.model_dump())
        if brief not in briefs:
            briefs.append(brief)
    return briefs


def report_gist(report: Any, beside: Any = None) -> dict[str, Any]:
    """A member's report as the Coordinator summarises it: the conclusion, the items proposed,
    the constraints raised and the data asked for (the evidence behind them is the members').
    ``beside`` the plan in the same message (the draft a member votes on, the weighted
    consensus the Coordinator arranges; anything with ``components`` and ``rejected``): only
    the items it neither carries as proposed nor rules out."""
    data = report.model_dump(mode="json")
    items = [(c.get("description"), c.get("role")) for c in data.get("components") or ()]
    placed: list[str] = []
    if beside is not None:
        given = {(c.description, str(c.role)) for c in beside.components}
        where = {c.description: (str(c.role), c.rank) for c in beside.components}
        ruled_out = {r.option for r in beside.rejected}
        # An item the plan carries in another place is named by that place (the plan beside it
        # gives its description): "alternative 2 (you: primary)".
        placed = [
            f"{where[d][0]}{f' {where[d][1]}' if where[d][1] else ''} (you: {role})"
            for d, role in items
            if (d, role) not in given and d in where
        ]
        items = [i for i in items if i not in given and i[0] not in ruled_out and i[0] not in where]
    return compact_dict(
        {
            "conclusion": data.get("conclusion"),
            ("components" if beside is None else "components_not_in_plan"): [
                f"{description} ({role})" for description, role in items
            ],
            "components_placed_otherwise": placed,
            "constraints": [
                f"{c.get('severity')}: {c.get('text')}" for c in data.get("constraints") or ()
            ],
            "needs_data": data.get("needs_data"),
        }
    )
