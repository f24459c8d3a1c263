"""The plan (``mdtboard.plan/1``, FORMAT.md §2): one typed model and its one parser.

The engine builds a :class:`Plan` directly; a plan that comes from outside (a comparator plan
uploaded, pasted or entered in a form, a stored plan read back) is read by :func:`plan_parse`
or :func:`plan_parse_bytes`, which validate the same model in *document* mode: text is stripped
and bounded, an alternative must say when it would be chosen, a plan that does not abstain
must have a pathway, and every problem is named by its JSON path in words a clinician reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from clinical.vocab import (
    PLAN_FORMAT,
    ComponentRole,
    ConflictKind,
    GateEffect,
    GateStatus,
    Intent,
    Modality,
    Phase,
    ResponseAnchor,
    Severity,
)

MAX_BYTES: Final = 256 * 1024
MAX_TEXT: Final = 2000
MAX_ITEMS: Final = 60
# The validation context that marks a plan read from a document rather than built by the engine.
DOCUMENT: Final = {"document": True}


def _is_document(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("document"))


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _text(limit: int = MAX_TEXT, *, required: bool = False) -> WrapValidator:
    """Text of a document: null or "" is "" (or "is required"), stripped, without NUL, at most
    ``limit`` characters. Built by the engine, text is taken as it is."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> str:
        if not _is_document(info):
            return str(handler(value))
        if value is None or value == "":
            if required:
                raise PydanticCustomError("required", "is required.")
            return ""
        if not isinstance(value, str):
            raise PydanticCustomError("text", "must be text, got {kind}.", {"kind": _kind(value)})
        if "\x00" in value:
            raise PydanticCustomError("nul", "contains a NUL character.")
        text = value.strip()
        if required and not text:
            raise PydanticCustomError("required", "is required.")
        if len(text) > limit:
            raise PydanticCustomError(
                "text_length",
                "is {length} characters long; at most {limit}.",
                {"length": len(text), "limit": limit},
            )
        return text

    return WrapValidator(validate)


def _items(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """A list of a document: null is empty, at most MAX_ITEMS entries."""
    if _is_document(info):
        if value is None:
            value = []
        if isinstance(value, list) and len(value) > MAX_ITEMS:
            raise PydanticCustomError(
                "items",
                "has {count} entries; at most {limit}.",
                {"count": len(value), "limit": MAX_ITEMS},
            )
    return handler(value)


Items = WrapValidator(_items)
Text = Annotated[str, _text()]
Texts = Annotated[list[Annotated[str, _text(1000, required=True)]], Items]
Position = Annotated[int | None, Field(default=None, ge=1, le=99, strict=True)]


def _required_here(field: str, message: str) -> PydanticCustomError:
    """An error about one field of the object being validated (``at`` extends the path)."""
    return PydanticCustomError("document", message, {"at": field})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _blank_is_not_given(cls, data: Any, info: ValidationInfo) -> Any:
        # In a document, null (FORMAT: not available) or "" is a key not given: its default,
        # or "is required".
        if _is_document(info) and isinstance(data, Mapping):
            return {k: v for k, v in data.items() if v is not None and v != ""}
        return data


class RejectedOption(_Model):
    option: Annotated[str, _text(required=True)]
    reason: Text = ""


class PlanComponent(_Model):
    role: ComponentRole = ComponentRole.PRIMARY
    order: Position = None  # primary components, in sequence
    rank: Position = None  # alternatives: 1 = next best
    when: Text = ""
    modality: Modality
    description: Annotated[str, _text(required=True)]
    agents: Texts = Field(default_factory=list)
    dose_adjustments: Texts = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    conditions: Texts = Field(default_factory=list)
    adjunct: bool = False
    rationale: list[str] = Field(default_factory=list)
    # A pathway option that failed a gate and leads only because nothing safer is on offer:
    # the precondition it waits for ("the large varices have been treated").
    waits_for: str = ""

    @model_validator(mode="before")
    @classmethod
    def _a_document_names_the_role(cls, data: Any, info: ValidationInfo) -> Any:
        # FORMAT §2: every component has a role; a plan without roles has no pathway.
        if _is_document(info) and isinstance(data, Mapping) and data.get("role") in (None, ""):
            raise _required_here("role", "is required: one of primary, alternative.")
        return data

    @model_validator(mode="after")
    def _an_alternative_says_when(self, info: ValidationInfo) -> PlanComponent:
        if _is_document(info) and self.role is ComponentRole.ALTERNATIVE and not self.when:
            raise _required_here("when", "is required.")
        return self


class AbstentionSituation(_Model):
    """A situation recognised in the case, with the phrase it was read from and whether the
    knowledge base covers it."""

    id: Annotated[str, _text(80)] = ""
    kind: Annotated[str, _text(40)] = ""
    label: Annotated[str, _text(200)] = ""
    phrase: Annotated[str, _text(600)] = ""
    source: Annotated[str, _text(80)] = ""  # the case-file field
    where: Annotated[str, _text(80)] = ""  # the same, in words ("the notes")
    covered: bool = False


class AbstentionItem(_Model):
    """A step or a question of an abstention, with the knowledge unit that states it."""

    text: Annotated[str, _text(600)] = ""
    unit: Annotated[str, _text(80)] = ""


class Abstention(_Model):
    """Why the plan abstains (the case is outside the knowledge base, or two readings of it
    point to different situations) and what it offers instead of a pathway: the immediate
    steps that are safe whatever the final plan, what the board must decide, whom it involves,
    and the knowledge base's nearest standard pathway, named as not recommended here."""

    reason: Annotated[str, _text(2000)] = ""
    emergency: bool = False
    situations: list[AbstentionSituation] = Field(default_factory=list)
    immediate_steps: list[AbstentionItem] = Field(default_factory=list)
    board_decides: list[AbstentionItem] = Field(default_factory=list)
    specialists: list[str] = Field(default_factory=list)
    nearest_pathway: list[str] = Field(default_factory=list)


class Recommendation(_Model):
    summary: Annotated[str, _text(4000)] = ""
    intent: Intent | None = None
    components: Annotated[list[PlanComponent], Items]
    question: str = ""
    # Critical safety rules about the pathway that could not be checked for lack of data: the
    # pathway is conditional on confirming them first ("Confirm before starting doxorubicin:
    # LVEF, not recorded"). Kept out of the components, which name only what is given.
    confirm_first: list[str] = Field(default_factory=list)
    # Set when ``intent`` is "abstain": the case is outside what the knowledge base models.
    abstention: Abstention | None = None

    @model_validator(mode="after")
    def _numbered(self) -> Recommendation:
        """Primary components without an ``order`` follow the ones that have one, in the order
        written; the same for alternatives and ``rank``."""
        for role, key, other in (
            (ComponentRole.PRIMARY, "order", "rank"),
            (ComponentRole.ALTERNATIVE, "rank", "order"),
        ):
            mine = [c for c in self.components if c.role is role]
            following = max((getattr(c, key) or 0 for c in mine), default=0)
            for c in mine:
                if getattr(c, key) is None:
                    following += 1
                    setattr(c, key, following)
                setattr(c, other, None)
        return self


class GateResult(_Model):
    """One safety rule checked against the plan. ``status`` is ``fail`` when an item cannot be
    given as planned (removed, held, demoted), ``pass`` when it can (``effect`` says whether
    with a required ``action``, an adjusted dose or a warning), ``unknown`` when inputs are
    missing (``needs``: what to record, in clinical words; ``needs_facts``: the fields)."""

    gate: Annotated[str, _text(200)] = ""
    status: GateStatus
    detail: Annotated[str, _text(required=True)]
    unit: str = ""
    effect: GateEffect = GateEffect.NONE
    action: str = ""
    needs: list[str] = Field(default_factory=list)
    needs_facts: list[str] = Field(default_factory=list)
    applies_to: list[str] = Field(default_factory=list)  # the plan items it checked


class Flag(_Model):
    severity: Severity
    text: Annotated[str, _text(required=True)]
    evidence: list[str] = Field(default_factory=list)


class SafetyBlock(_Model):
    gates: Annotated[list[GateResult], Items] = Field(default_factory=list)
    flags: Annotated[list[Flag], Items] = Field(default_factory=list)
    # Precautions written as plain sentences (a comparator plan's entry form): an added key,
    # left out of a plan that has none.
    notes: Texts = Field(default_factory=list, exclude_if=lambda v: not v)


class MonitoringItem(_Model):
    phase: Phase
    what: Annotated[str, _text(required=True)]
    interval: Text = ""
    anchor: ResponseAnchor = ResponseAnchor.OTHER


class EvidenceItem(_Model):
    """A knowledge unit the plan cites; a plan written by hand may cite only its id."""

    unit_id: str
    source: str = ""
    anchor: str = ""
    version: str = ""
    grade: str = ""


class ConflictRecord(_Model):
    between: list[str]
    kind: ConflictKind
    score: float = 0.0
    resolution: str


class InformedBy(_Model):
    """A past case from the experience memory (CorrectKB / ChainKB) the board recalled."""

    entry_id: int
    kind: str
    label: str
    summary: str
    lesson: str = ""
    similarity: float = 0.0


class Plan(_Model):
    """A plan as FORMAT.md §2 defines it. What only the engine knows (``engine``, ``staging``,
    ``evidence``, ``confidence``) is optional, so that a plan written by a tumour board (a
    comparator) reads as the same model."""

    format: Literal["mdtboard.plan/1"] = PLAN_FORMAT
    case_id: Annotated[str, _text(64)] = ""
    engine: str = ""
    staging: dict[str, Any] = Field(default_factory=dict)
    recommendation: Recommendation
    rejected_options: Annotated[list[RejectedOption], Items] = Field(default_factory=list)
    safety: SafetyBlock = Field(default_factory=SafetyBlock)
    monitoring: Annotated[list[MonitoringItem], Items] = Field(default_factory=list)
    evidence: list[EvidenceItem] = Field(default_factory=list)
    confidence: float | None = None
    conflicts: list[ConflictRecord] = Field(default_factory=list)
    abstain: bool = False
    needs_data: Texts = Field(default_factory=list)
    rounds: int = 1
    # The past cases that informed the plan (recalled from round 2; none in one round).
    informed_by: list[InformedBy] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _a_document_is_a_plan(cls, data: Any, info: ValidationInfo) -> Any:
        if _is_document(info) and isinstance(data, Mapping):
            if data.get("format") != PLAN_FORMAT:
                raise _required_here(
                    "format",
                    f'must be "{PLAN_FORMAT}"; got {json.dumps(data.get("format"))}.',
                )
            if data.get("recommendation") is None:
                raise _required_here("recommendation", "is required.")
            # "abstain" is true, or it is not: anything else does not abstain.
            return {**data, "abstain": data.get("abstain") is True}
        return data

    @model_validator(mode="after")
    def _a_document_has_a_pathway(self, info: ValidationInfo) -> Plan:
        primary = any(c.role is ComponentRole.PRIMARY for c in self.recommendation.components)
        if _is_document(info) and not self.abstain and not primary:
            raise PydanticCustomError(
                "document",
                'needs at least one component with role "primary" (the recommended pathway), '
                'unless the plan abstains ("abstain": true).',
                {"at": "recommendation.components"},
            )
        return self


# --- the parser ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ParsedPlan:
    plan: Plan | None
    errors: tuple[PlanError, ...]

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors


def _fail(message: str) -> ParsedPlan:
    return ParsedPlan(None, (PlanError("$", message),))


def _path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _choices(expected: str) -> str:
    return ", ".join(re.findall(r"'([^']*)'", expected)) or expected


# Pydantic's own errors, said as the format's reader says them (the document's errors carry
# their own message).
_MESSAGES: Final[dict[str, Callable[[Mapping[str, Any], Any], str]]] = {
    "missing": lambda ctx, value: "is required.",
    "enum": lambda ctx, value: (
        f"must be one of {_choices(str(ctx.get('expected', '')))}; got {json.dumps(value)}."
    ),
    "list_type": lambda ctx, value: f"must be a list, got {_kind(value)}.",
    "string_type": lambda ctx, value: f"must be text, got {_kind(value)}.",
    "model_type": lambda ctx, value: f"must be an object, got {_kind(value)}.",
    "model_attributes_type": lambda ctx, value: f"must be an object, got {_kind(value)}.",
    "dict_type": lambda ctx, value: f"must be an object, got {_kind(value)}.",
    "bool_type": lambda ctx, value: f"must be true or false, got {_kind(value)}.",
    "bool_parsing": lambda ctx, value: f"must be true or false, got {_kind(value)}.",
}


def _message(error: Mapping[str, Any]) -> str:
    kind = str(error["type"])
    if kind in _MESSAGES:
        return _MESSAGES[kind](error.get("ctx") or {}, error.get("input"))
    if kind.startswith(("int_", "greater_than", "less_than")):
        return f"must be a whole number from 1 to 99; got {json.dumps(error.get('input'))}."
    return str(error["msg"])


def plan_errors(exc: ValidationError) -> list[PlanError]:
    """Every problem of a plan document, by its JSON path, once."""
    errors: list[PlanError] = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        # A union's or a wrapped validator's own name is not a place in the document.
        loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
        at = (error.get("ctx") or {}).get("at")
        if at:
            loc = (*loc, *str(at).split("."))
        found = PlanError(_path(loc), _message(error))
        if found not in errors:
            errors.append(found)
    return errors


def plan_parse(data: Any) -> ParsedPlan:
    """A plan read from a document (already decoded JSON): the :class:`Plan`, or every problem
    found in it. Never raises on bad input."""
    if not isinstance(data, dict):
        return _fail(f"A plan must be a JSON object, got {_kind(data)}.")
    try:
        plan = Plan.model_validate(data, context=DOCUMENT)
    except ValidationError as exc:
        return ParsedPlan(None, tuple(plan_errors(exc)))
    return ParsedPlan(plan, ())


def plan_parse_bytes(raw: bytes) -> ParsedPlan:
    """A plan read from an uploaded or pasted file: UTF-8 JSON of at most MAX_BYTES, no key
    twice, no NaN or infinity; then :func:`plan_parse`. Never raises on bad input."""
    if len(raw) > MAX_BYTES:
        return _fail(f"The plan is {len(raw):,} bytes; a plan file may be at most {MAX_BYTES:,}.")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fail(f"The plan is not valid UTF-8 (byte offset {exc.start}); save it as UTF-8.")
    if not text.strip():
        return _fail("The plan is empty; expected a JSON object in the mdtboard.plan/1 format.")
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj:
                duplicates.append(key)
            obj[key] = value
        return obj

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        return _fail(
            f"The plan is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        )
    except (ValueError, RecursionError) as exc:
        return _fail(f"The plan is not valid JSON: {exc}.")
    errors = [PlanError("$", f'The field "{key}" appears more than once.') for key in duplicates]
    parsed = plan_parse(data)
    errors += parsed.errors
    return ParsedPlan(parsed.plan if not errors else None, tuple(errors))
