"""Reading a comparator plan as ``mdtboard.plan/1`` (FORMAT.md §2): from an uploaded or
pasted JSON document, or from the entry form; every problem named by its JSON path.

Only what a blinded packet shows is kept (the recommendation with its components, options
not advised, safety, monitoring, data needed); anything else in the document, an ``engine``
name included, is dropped so that it can never reach a rater.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, get_args

from consult.engine.schemas import Anchor, GateStatus, Intent, Modality, Phase, Severity

PLAN_FORMAT = "mdtboard.plan/1"
MAX_BYTES = 256 * 1024
MAX_TEXT = 2000
MAX_ITEMS = 60

MODALITIES: tuple[str, ...] = get_args(Modality)
INTENTS: tuple[str, ...] = get_args(Intent)
SEVERITIES: tuple[str, ...] = get_args(Severity)
PHASES: tuple[str, ...] = get_args(Phase)
ANCHORS: tuple[str, ...] = get_args(Anchor)
GATE_STATUSES: tuple[str, ...] = get_args(GateStatus)
ROLES = ("primary", "alternative")


@dataclass(frozen=True)
class PlanError:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ParsedPlan:
    plan: dict[str, Any] | None
    errors: tuple[PlanError, ...]

    @property
    def ok(self) -> bool:
        return self.plan is not None and not self.errors


def _fail(message: str) -> ParsedPlan:
    return ParsedPlan(None, (PlanError("$", message),))


def parse_plan_bytes(raw: bytes) -> ParsedPlan:
    """Decode and validate an uploaded or pasted plan; never raises on bad input."""
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
    plan, more = validate_plan(data)
    errors += more
    return ParsedPlan(plan if not errors else None, tuple(errors))


class _Check:
    def __init__(self) -> None:
        self.errors: list[PlanError] = []

    def error(self, path: str, message: str) -> None:
        self.errors.append(PlanError(path, message))

    def text(self, value: Any, path: str, *, required: bool, limit: int = MAX_TEXT) -> str:
        if value is None or value == "":
            if required:
                self.error(path, "is required.")
            return ""
        if not isinstance(value, str):
            self.error(path, f"must be text, got {_kind(value)}.")
            return ""
        if "\x00" in value:
            self.error(path, "contains a NUL character.")
            return ""
        text: str = value.strip()
        if required and not text:
            self.error(path, "is required.")
        if len(text) > limit:
            self.error(path, f"is {len(text)} characters long; at most {limit}.")
        return text

    def choice(
        self, value: Any, path: str, choices: tuple[str, ...], *, required: bool
    ) -> str | None:
        if value is None or value == "":
            if required:
                self.error(path, f"is required: one of {', '.join(choices)}.")
            return None
        if value not in choices:
            self.error(path, f"must be one of {', '.join(choices)}; got {json.dumps(value)}.")
            return None
        return str(value)

    def items(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"must be a list, got {_kind(value)}.")
            return []
        if len(value) > MAX_ITEMS:
            self.error(path, f"has {len(value)} entries; at most {MAX_ITEMS}.")
            return []
        return value

    def obj(self, value: Any, path: str, *, required: bool = False) -> dict[str, Any]:
        if value is None:
            if required:
                self.error(path, "is required.")
            return {}
        if not isinstance(value, dict):
            self.error(path, f"must be an object, got {_kind(value)}.")
            return {}
        return value

    def texts(self, value: Any, path: str) -> list[str]:
        out = []
        for i, item in enumerate(self.items(value, path)):
            text = self.text(item, f"{path}[{i}]", required=True, limit=1000)
            if text:
                out.append(text)
        return out

    def positive(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 99:
            self.error(path, f"must be a whole number from 1 to 99; got {json.dumps(value)}.")
            return None
        return value


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


def validate_plan(data: Any) -> tuple[dict[str, Any] | None, list[PlanError]]:
    """The plan reduced to what a packet shows, and every problem found in it."""
    check = _Check()
    if not isinstance(data, dict):
        return None, [PlanError("$", f"A plan must be a JSON object, got {_kind(data)}.")]
    if data.get("format") != PLAN_FORMAT:
        check.error("$.format", f'must be "{PLAN_FORMAT}"; got {json.dumps(data.get("format"))}.')
    recommendation = check.obj(data.get("recommendation"), "$.recommendation", required=True)
    where = "$.recommendation.components"
    components = []
    for i, raw in enumerate(check.items(recommendation.get("components"), where)):
        path = f"{where}[{i}]"
        item = check.obj(raw, path, required=True)
        if not item:
            continue
        role = check.choice(item.get("role"), f"{path}.role", ROLES, required=True)
        component: dict[str, Any] = {
            "role": role,
            "modality": check.choice(
                item.get("modality"), f"{path}.modality", MODALITIES, required=True
            ),
            "description": check.text(
                item.get("description"), f"{path}.description", required=True
            ),
            "when": check.text(item.get("when"), f"{path}.when", required=role == "alternative"),
            "agents": check.texts(item.get("agents"), f"{path}.agents"),
            "dose_adjustments": check.texts(
                item.get("dose_adjustments"), f"{path}.dose_adjustments"
            ),
            "conditions": check.texts(item.get("conditions"), f"{path}.conditions"),
            "order": check.positive(item.get("order"), f"{path}.order"),
            "rank": check.positive(item.get("rank"), f"{path}.rank"),
        }
        components.append(component)
    abstain = data.get("abstain") is True
    if not abstain and not any(c["role"] == "primary" for c in components):
        check.error(
            where,
            'needs at least one component with role "primary" (the recommended pathway), '
            'unless the plan abstains ("abstain": true).',
        )
    _number(components)
    rejected = []
    for i, raw in enumerate(check.items(data.get("rejected_options"), "$.rejected_options")):
        item = check.obj(raw, f"$.rejected_options[{i}]", required=True)
        if item:
            rejected.append(
                {
                    "option": check.text(
                        item.get("option"), f"$.rejected_options[{i}].option", required=True
                    ),
                    "reason": check.text(
                        item.get("reason"), f"$.rejected_options[{i}].reason", required=False
                    ),
                }
            )
    safety = check.obj(data.get("safety"), "$.safety")
    # "notes": precautions written as plain sentences (the entry form's), an added key.
    notes = check.texts(safety.get("notes"), "$.safety.notes")
    gates = []
    for i, raw in enumerate(check.items(safety.get("gates"), "$.safety.gates")):
        path = f"$.safety.gates[{i}]"
        item = check.obj(raw, path, required=True)
        if item:
            gates.append(
                {
                    "gate": check.text(item.get("gate"), f"{path}.gate", required=False, limit=200),
                    "status": check.choice(
                        item.get("status"), f"{path}.status", GATE_STATUSES, required=True
                    ),
                    "detail": check.text(item.get("detail"), f"{path}.detail", required=True),
                }
            )
    flags = []
    for i, raw in enumerate(check.items(safety.get("flags"), "$.safety.flags")):
        path = f"$.safety.flags[{i}]"
        item = check.obj(raw, path, required=True)
        if item:
            flags.append(
                {
                    "severity": check.choice(
                        item.get("severity"), f"{path}.severity", SEVERITIES, required=True
                    ),
                    "text": check.text(item.get("text"), f"{path}.text", required=True),
                }
            )
    monitoring = []
    for i, raw in enumerate(check.items(data.get("monitoring"), "$.monitoring")):
        path = f"$.monitoring[{i}]"
        item = check.obj(raw, path, required=True)
        if item:
            monitoring.append(
                {
                    "phase": check.choice(
                        item.get("phase"), f"{path}.phase", PHASES, required=True
                    ),
                    "what": check.text(item.get("what"), f"{path}.what", required=True),
                    "interval": check.text(
                        item.get("interval"), f"{path}.interval", required=False
                    ),
                    "anchor": check.choice(
                        item.get("anchor"), f"{path}.anchor", ANCHORS, required=False
                    )
                    or "other",
                }
            )
    plan = {
        "format": PLAN_FORMAT,
        "case_id": check.text(data.get("case_id"), "$.case_id", required=False, limit=64),
        "recommendation": {
            "summary": check.text(
                recommendation.get("summary"),
                "$.recommendation.summary",
                required=False,
                limit=4000,
            ),
            "intent": check.choice(
                recommendation.get("intent"), "$.recommendation.intent", INTENTS, required=False
            ),
            "components": components,
        },
        "rejected_options": rejected,
        "safety": {"gates": gates, "flags": flags, "notes": notes},
        "monitoring": monitoring,
        "needs_data": check.texts(data.get("needs_data"), "$.needs_data"),
        "abstain": abstain,
    }
    if check.errors:
        return None, check.errors
    return plan, []


def _number(components: list[dict[str, Any]]) -> None:
    """Primary components without an ``order`` follow the ones that have one, in the order
    written; the same for alternatives and ``rank``."""
    for role, key in (("primary", "order"), ("alternative", "rank")):
        mine = [c for c in components if c["role"] == role]
        taken = {c[key] for c in mine if c[key] is not None}
        following = max(taken, default=0)
        for c in mine:
            if c[key] is None:
                following += 1
                c[key] = following
        other = "rank" if key == "order" else "order"
        for c in mine:
            c[other] = None
