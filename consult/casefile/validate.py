"""Parse and validate mdtboard.case/1 files, with messages written for clinicians."""

from __future__ import annotations

import codecs
import copy
import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from clinical.calculators.response import LesionInputError, lesions_from_case
from clinical.vocab import CancerType
from consult.casefile.fields import (
    CASE_ID_PATTERN,
    EXPECTED_KEY,
    FIELDS,
    FIELDS_BY_PATH,
    FORMAT_ID,
    JSON_SECTIONS,
    LESIONS_KEY,
    PRIOR_THERAPY_FIELDS,
    SECTIONS,
    TNM_CODES,
    TNM_GENERIC_PATTERNS,
    TOP_LEVEL_KEYS,
    TOXICITY_FIELDS,
    UNNUMBERED_INTENTS,
    UNNUMBERED_KINDS,
    Field,
    FieldType,
    children,
)
from consult.casefile.schema import build_schema

MAX_BYTES = 1024 * 1024
# The format itself needs 5 levels (top, diagnosis, prior_therapies, entry, toxicity) and evaluation
# expectations 3; 16 leaves room for harmless extras while stopping recursion bombs early.
MAX_DEPTH = 16
# A real case has about 90 fields; beyond this a file is junk and listing more helps nobody.
MAX_ERRORS = 500

Severity = Literal["error", "warning"]
PathPart = str | int
JsonPath = tuple[PathPart, ...]


@dataclass(frozen=True)
class CaseError:
    """One problem in a case file; ``path`` is a JSON path such as "$.labs.inr"."""

    filename: str
    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.filename}: {self.path}: {self.message}"


@dataclass(frozen=True)
class ParsedCase:
    """Result of reading one file: the parsed object (if any), errors and warnings."""

    filename: str
    data: dict[str, Any] | None
    errors: tuple[CaseError, ...]
    warnings: tuple[CaseError, ...] = ()

    @property
    def ok(self) -> bool:
        return self.data is not None and not self.errors

    def canonical(self) -> dict[str, Any]:
        """Canonical form of a valid case (see case_to_canonical)."""
        if self.data is None or self.errors:
            raise ValueError(f"{self.filename} has errors and cannot be imported")
        return case_to_canonical(self.data)


# --------------------------------------------------------------------------- formatting

# Ranges are written with an en dash ("0\u201350 mg/dL"), as on lab reports.
_DASH = "\u2013"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _TooLarge(float):
    """Marks an integer literal too long to be a real measurement (parsed as infinity)."""


def json_path(parts: Iterable[PathPart]) -> str:
    """Render path parts as a JSON path: ("labs", "inr") -> "$.labs.inr"."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            out += "." + part
        else:
            out += "[" + _quote(part, limit=60) + "]"
    return out


def _quote(text: str, *, limit: int = 60) -> str:
    # Values are echoed back to the user, so they must survive any encoding: lone surrogates
    # and control characters are escaped and long values shortened.
    shown = text if len(text) <= limit else text[:limit] + "…"
    rendered = json.dumps(shown, ensure_ascii=False)
    try:
        rendered.encode("utf-8")
    except UnicodeEncodeError:
        rendered = json.dumps(shown, ensure_ascii=True)
    return rendered


def _number_text(value: int | float, *, group: bool = False) -> str:
    if isinstance(value, _TooLarge):
        return "a number too large to store"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e15:
            return _number_text(int(value), group=group)
        return repr(value)
    if value.bit_length() > 60:
        return "a number too large to store"
    # Catalog limits are grouped from five digits on ("10,000,000"); values from the file are
    # echoed exactly as written so that they can be found in it.
    return f"{value:,}" if group and abs(value) >= 10_000 else str(value)


def _with_unit(value: int | float, unit: str) -> str:
    text = _number_text(value)
    return f"{text} {unit}" if unit else text


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true (a yes/no value)" if value else "false (a yes/no value)"
    if isinstance(value, (int, float)):
        return f"the number {_number_text(value)}"
    if isinstance(value, str):
        return "empty text" if value == "" else f"the text {_quote(value)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a value of type {type(value).__name__}"


def _range_text(field: Field) -> str:
    lo, hi, unit = field.minimum, field.maximum, field.unit
    suffix = f" {unit}" if unit else ""
    if lo is not None and hi is not None:
        return f"{_number_text(lo, group=True)}{_DASH}{_number_text(hi, group=True)}{suffix}"
    if lo is not None:
        return f"at least {_number_text(lo, group=True)}{suffix}"
    if hi is not None:
        return f"at most {_number_text(hi, group=True)}{suffix}"
    return "any value"


def _looks_numeric(text: str) -> bool:
    try:
        float(text.strip().replace(",", "."))
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- catalog lookup

_SECTION_LABELS = {s.key: s.label for s in SECTIONS}
_PRIOR = "diagnosis.prior_therapies"
_PRIOR_BY_KEY = {f.key: f for f in PRIOR_THERAPY_FIELDS}
_TOXICITY = "diagnosis.prior_therapies.toxicity"
_RANKS: dict[str, dict[str, int]] = {
    "": {k: i for i, k in enumerate((*TOP_LEVEL_KEYS, EXPECTED_KEY))},
    **{s: {f.key: i for i, f in enumerate(children(s))} for s in JSON_SECTIONS},
    _PRIOR: {f.key: i for i, f in enumerate(PRIOR_THERAPY_FIELDS)},
    _TOXICITY: {f.key: i for i, f in enumerate(TOXICITY_FIELDS)},
}


def _catalog_path(parts: JsonPath) -> str:
    """Dotted catalog path for JSON path parts; list indices of prior therapies become "[]"."""
    names: list[str] = []
    for part in parts:
        if isinstance(part, int):
            if ".".join(names) == _PRIOR:
                names[-1] += "[]"
            continue
        names.append(part)
    return ".".join(names)


def _field_at(parts: JsonPath) -> Field | None:
    return FIELDS_BY_PATH.get(_catalog_path(parts))


def _sort_key(parts: JsonPath) -> tuple[tuple[int, int, str], ...]:
    # Document order (the order of the catalog) is what a clinician reads top to bottom.
    key: list[tuple[int, int, str]] = []
    names: list[str] = []
    for part in parts:
        if isinstance(part, int):
            key.append((0, part, ""))
            continue
        rank = _RANKS.get(".".join(names), {}).get(part)
        key.append((0, rank, "") if rank is not None else (1, 0, part))
        names.append(part)
    return tuple(key)


# --------------------------------------------------------------------------- collection


@dataclass
class _Issues:
    errors: list[tuple[JsonPath, str]]
    warnings: list[tuple[JsonPath, str]]

    def error(self, parts: JsonPath, message: str) -> None:
        self.errors.append((parts, message))

    def warn(self, parts: JsonPath, message: str) -> None:
        self.warnings.append((parts, message))


def _finish(
    items: list[tuple[JsonPath, str]], filename: str, severity: Severity
) -> list[CaseError]:
    unique = dict.fromkeys(items)
    ordered = sorted(unique, key=lambda item: (_sort_key(item[0]), item[1]))
    result = [CaseError(filename, json_path(p), m, severity) for p, m in ordered[:MAX_ERRORS]]
    if len(ordered) > MAX_ERRORS:
        result.append(
            CaseError(
                filename,
                "$",
                f"{len(ordered) - MAX_ERRORS:,} further problems are not listed; fix the ones "
                "above and check the file again.",
                severity,
            )
        )
    return result


# --------------------------------------------------------------------------- raw bytes


# A string (escapes included) or one bracket. A string runs to its closing quote or, if it
# has none, to the end of the text, so a match starting at a quote never fails and is never
# retried from the next quote; the possessive loop cannot backtrack. The scan is linear: the
# earlier pattern gave up on an unterminated string and rescanned from every following quote,
# and 30 KB of escaped quotes froze the server for seconds.
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


def _text_depth_exceeds(text: str, limit: int) -> bool:
    """True if brackets outside strings nest deeper than ``limit``; runs in linear time."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        lexeme = match.group()
        if lexeme in ("[", "{"):
            depth += 1
            if depth > limit:
                return True
        elif lexeme in ("]", "}"):
            depth -= 1
    return False


# Public name for other readers of JSON (FHIR bundles) that bound nesting the same way.
text_depth_exceeds = _text_depth_exceeds


def _size_text(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f} MiB ({size:,} bytes)"
    return f"{size / 1024:.1f} KiB ({size:,} bytes)"


def _parse_int(text: str) -> int | float:
    # Python refuses to convert integers longer than 4300 digits; anything beyond a few dozen
    # digits cannot be a measurement, so it is flagged at its path instead of crashing.
    if len(text.lstrip("-")) > 30:
        return _TooLarge("-inf" if text.startswith("-") else "inf")
    return int(text)


def _parse_constant(name: str) -> float:
    # NaN and Infinity are not JSON; keep them as floats so the error can name the field.
    return float(name)


def parse_case_bytes(raw: bytes, *, filename: str, today: date | None = None) -> ParsedCase:
    """Decode, parse and validate one uploaded case file; never raises on bad input."""

    def fail(message: str) -> ParsedCase:
        return ParsedCase(filename, None, (CaseError(filename, "$", message),))

    size = len(raw)
    if size > MAX_BYTES:
        return fail(
            f"The file is {_size_text(size)}; case files are limited to 1 MiB "
            f"({MAX_BYTES:,} bytes)."
        )
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return fail("The file is encoded as UTF-32; save it as UTF-8.")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or b"\x00" in raw[:4]:
        return fail("The file is encoded as UTF-16; save it as UTF-8.")
    # A UTF-8 byte-order mark (added by some Windows editors) is accepted and skipped.
    skipped = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skipped
        return fail(
            f"The file is not valid UTF-8: byte 0x{raw[offset]:02X} at byte offset {offset} "
            "cannot be decoded. Save the file as UTF-8."
        )
    if not text.strip():
        return fail("The file is empty; expected a JSON object with a case.")
    if _text_depth_exceeds(text, MAX_DEPTH):
        return fail(
            f"The file is nested too deeply (more than {MAX_DEPTH} levels of brackets); "
            "a case file needs at most 5."
        )

    duplicates: list[tuple[dict[str, Any], str]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                duplicates.append((obj, key))
            obj[key] = value
        return obj

    try:
        data = json.loads(
            text,
            object_pairs_hook=pairs_hook,
            parse_constant=_parse_constant,
            parse_int=_parse_int,
        )
    except json.JSONDecodeError as exc:
        return fail(
            f"The file is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        )
    except (ValueError, RecursionError) as exc:
        return fail(f"The file is not valid JSON: {exc}.")

    if not isinstance(data, dict):
        return fail(
            "A case file must contain one JSON object ({ ... }) at the top level; "
            f"this file contains {_kind(data)}."
        )
    issues = _Issues([], [])
    if duplicates:
        locations = _object_paths(data)
        for obj, key in duplicates:
            parts = (*locations.get(id(obj), ()), key)
            issues.error(
                parts,
                f"The field {_quote(key)} appears more than once in the same object; "
                "give each field only once.",
            )
    _check(data, issues, today or local_today())
    return ParsedCase(
        filename,
        data,
        tuple(_finish(issues.errors, filename, "error")),
        tuple(_finish(issues.warnings, filename, "warning")),
    )


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list ([ ... ])"
    if isinstance(value, str):
        return "a single text value"
    if isinstance(value, bool) or value is None:
        return f"the value {json.dumps(value)}"
    if isinstance(value, (int, float)):
        return "a single number"
    return "something else"


def _object_paths(data: dict[str, Any]) -> dict[int, JsonPath]:
    """id() of every object in the document -> its path (depth already bounded)."""
    found: dict[int, JsonPath] = {}
    stack: list[tuple[object, JsonPath]] = [(data, ())]
    while stack:
        value, parts = stack.pop()
        if isinstance(value, dict):
            found[id(value)] = parts
            stack.extend((v, (*parts, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*parts, i)) for i, v in enumerate(value))
    return found


# --------------------------------------------------------------------------- public checks


def local_today() -> date:
    """Today's date in the server's local time zone (the default for date checks)."""
    return datetime.now(UTC).astimezone().date()


def validate_case(data: object, *, filename: str, today: date | None = None) -> list[CaseError]:
    """All errors of an already-parsed case (empty list = valid), in document order."""
    issues = _Issues([], [])
    _check(data, issues, today or local_today())
    return _finish(issues.errors, filename, "error")


def case_warnings(data: object, *, filename: str, today: date | None = None) -> list[CaseError]:
    """Non-blocking remarks (unusual but possible values) for a case, in document order."""
    issues = _Issues([], [])
    _check(data, issues, today or local_today())
    return _finish(issues.warnings, filename, "warning")


def _check(data: object, issues: _Issues, today: date) -> None:
    if not isinstance(data, dict):
        issues.error((), "A case must be a JSON object ({ ... }); found " + _kind(data) + ".")
        return
    if not _walk(data, issues):
        return
    if not _check_format(data, issues):
        return
    nonfinite = {parts for parts, _ in issues.errors}
    for error in _VALIDATOR.iter_errors(data):
        parts = tuple(error.absolute_path)
        if parts in nonfinite or parts[:1] == (LESIONS_KEY,):
            # lesions[] is checked below with messages that name the lesion and the date
            continue
        for item in _schema_issues(error):
            issues.error(*item)
    _check_required(data, issues)
    _check_case_id(data, issues)
    _check_tnm(data, issues)
    _check_dates(data, issues, today)
    _check_prior_lines(data, issues)
    _check_lesions(data, issues, today)
    _check_cross_fields(data, issues)
    _check_warnings(data, issues, today)


def _walk(data: dict[str, Any], issues: _Issues) -> bool:
    """Bound the depth and flag NaN/Infinity, NUL and broken Unicode; False = stop here."""
    stack: list[tuple[object, JsonPath]] = [(data, ())]
    keys_ok = True
    while stack:
        value, parts = stack.pop()
        if len(parts) > MAX_DEPTH:
            issues.errors.clear()
            issues.error(
                (),
                f"The case is nested too deeply (more than {MAX_DEPTH} levels); "
                "a case file needs at most 5.",
            )
            return False
        if parts[:1] == (EXPECTED_KEY,):
            # Evaluation expectations are ignored on import: bounded in depth, not checked.
            stack.extend(_children_of(value, parts))
            continue
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    # Only possible for objects built in Python, never for parsed JSON; the
                    # schema checks below assume text keys, so stop after reporting it.
                    keys_ok = False
                    issues.error(parts, f"Field names must be text; found {_describe(key)}.")
        elif isinstance(value, float) and not math.isfinite(value):
            field = _field_at(parts)
            label = field.label if field else json_path(parts)
            issues.error(parts, f"{label} must be a finite number; found {_number_text(value)}.")
        elif isinstance(value, str):
            if "\x00" in value:
                issues.error(
                    parts,
                    f"{_text_label(parts)} contains a NUL character (\\u0000), which is not "
                    "allowed.",
                )
            _check_invisible(value, parts, issues)
            if _SURROGATE.search(value):
                issues.error(
                    parts,
                    f"{_text_label(parts)} contains an invalid Unicode escape (an unpaired "
                    "surrogate such as \\ud800); the text is damaged.",
                )
        stack.extend(_children_of(value, parts))
    return keys_ok


# Characters that make text display differently from what it holds: the bidirectional
# embeddings, overrides and isolates (a pseudonym "\u202eABC-123" shows as "321-CBA"), and
# control characters such as ESC, which start terminal escape sequences in logs and exports.
# Tab, line feed and carriage return are ordinary text; NUL has its own message.
_BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_BREAK = re.compile("[\t\n\r]")
# A pseudonym is one line: it is shown in lists and headings and searched for.
_ONE_LINE: frozenset[JsonPath] = frozenset({("patient", "pseudonym")})
# The invisible direction marks (left-to-right, right-to-left, Arabic letter mark) reorder the
# digits and dashes around them: "HCC-\u200f12-3" need not read as it is stored. Right-to-left
# notes may need them; the identifier and the question a board answers may not.
_DIRECTION_MARK = re.compile("[\u200e\u200f\u061c]")
_NO_MARKS: frozenset[JsonPath] = frozenset({("patient", "pseudonym"), ("question",)})
INVISIBLE_DIRECTION = (
    "{label} contains an invisible text-direction control ({code}), which makes the text "
    "display differently from what it holds; remove it (retyping the text removes it)."
)
INVISIBLE_CONTROL = (
    "{label} contains an invisible control character ({code}), which is not allowed; remove "
    "it (retyping the text removes it)."
)
LINE_BREAK = "{label} must be a single line: it contains a tab or a line break ({code})."


def _check_invisible(value: str, parts: JsonPath, issues: _Issues) -> None:
    for pattern, message in (
        (_BIDI_CONTROL, INVISIBLE_DIRECTION),
        (_DIRECTION_MARK if parts in _NO_MARKS else None, INVISIBLE_DIRECTION),
        (_CONTROL, INVISIBLE_CONTROL),
        (_LINE_BREAK if parts in _ONE_LINE else None, LINE_BREAK),
    ):
        found = pattern.search(value) if pattern is not None else None
        if found is not None:
            code = f"U+{ord(found.group()):04X}"
            issues.error(parts, message.format(label=_text_label(parts), code=code))


def _text_label(parts: JsonPath) -> str:
    field = _field_at(parts) or _field_at(parts[:-1])
    return field.label if field else "This text"


def _children_of(value: object, parts: JsonPath) -> list[tuple[object, JsonPath]]:
    if isinstance(value, dict):
        return [(v, (*parts, k)) for k, v in value.items() if isinstance(k, str)]
    if isinstance(value, list):
        return [(v, (*parts, i)) for i, v in enumerate(value)]
    return []


def _check_format(data: dict[str, Any], issues: _Issues) -> bool:
    """Missing format is reported with everything else; a different format stops here."""
    if "format" not in data:
        issues.error(
            ("format",),
            f'The "format" field is missing; a case file must contain "format": "{FORMAT_ID}".',
        )
        return True
    value = data["format"]
    if value == FORMAT_ID:
        return True
    if isinstance(value, str):
        message = (
            f"Unsupported format {_quote(value)}; this application reads "
            f'"{FORMAT_ID}" case files. The rest of the file was not checked.'
        )
    else:
        message = (
            f'The format must be the text "{FORMAT_ID}"; found {_describe(value)}. '
            "The rest of the file was not checked."
        )
    issues.error(("format",), message)
    return False


# --------------------------------------------------------------------------- schema errors

_VALIDATOR = Draft202012Validator(build_schema())

_EXPECTED_TYPE = {
    FieldType.INT: "a whole number",
    FieldType.NUMBER: "a number",
    FieldType.STR: "text",
    FieldType.BOOL: "true or false",
    FieldType.DATE: "a date written as text, yyyy-mm-dd",
    FieldType.LIST_STR: "a list of texts",
    FieldType.PRIOR_THERAPIES: "a list of prior-therapy entries",
    FieldType.TOXICITY: 'an object with organ and grade, e.g. {"organ": "lung", "grade": 3}',
    FieldType.ENUM: "one of the listed values",
}

# Keywords whose failures are re-checked in Python with better messages (patterns, required
# keys, the format constant), so schema errors for them would only be duplicates.
_RECHECKED = {"pattern", "required", "const"}
# Short coded texts whose length is covered by the Python pattern check.
_PATTERN_CHECKED: set[JsonPath] = {
    ("case_id",),
    ("staging", "t"),
    ("staging", "n"),
    ("staging", "m"),
}


def _schema_issues(error: ValidationError) -> list[tuple[JsonPath, str]]:
    parts: JsonPath = tuple(error.absolute_path)
    keyword = str(error.validator)
    value: Any = error.instance
    if keyword in _RECHECKED or (keyword == "maxLength" and parts in _PATTERN_CHECKED):
        return []
    if keyword == "additionalProperties":
        schema = error.schema if isinstance(error.schema, dict) else {}
        allowed = set(schema.get("properties", {}))
        extras = [key for key in value if key not in allowed]
        # Suggestions cost a fuzzy match each; only the ones that can be listed get one.
        return [
            ((*parts, key), _unknown_key_message(parts, key, allowed, suggest=i < MAX_ERRORS))
            for i, key in enumerate(extras)
        ]
    field = _field_at(parts)
    if keyword == "type":
        return [(parts, _type_message(parts, field, value))]
    if field is None:
        return [(parts, _fallback_message(parts, error))]
    if keyword == "enum":
        return [(parts, _enum_message(field, value))]
    if keyword in ("minimum", "maximum", "exclusiveMinimum"):
        return [(parts, _range_message(field, value))]
    if keyword == "maxLength" and isinstance(value, str):
        if field.type is FieldType.LIST_STR:
            return [
                (
                    parts,
                    f"Each entry of {field.label} is limited to {field.max_length} "
                    f"characters; this one has {len(value):,}.",
                )
            ]
        return [
            (
                parts,
                f"{field.label} is too long ({len(value):,} characters); the limit is "
                f"{field.max_length}.",
            )
        ]
    if keyword == "maxItems" and isinstance(value, list):
        return [
            (parts, f"{field.label} has {len(value):,} entries; the limit is {field.max_items}.")
        ]
    return [(parts, _fallback_message(parts, error))]


def _fallback_message(parts: JsonPath, error: ValidationError) -> str:
    field = _field_at(parts)
    label = field.label if field else json_path(parts)
    return f"{label}: " + _quote(error.message, limit=200).strip('"')


def _unknown_key_message(
    parts: JsonPath, key: str, allowed: set[str], *, suggest: bool = True
) -> str:
    shown = _quote(key)
    known = sorted(allowed - {EXPECTED_KEY})
    if not parts:
        where = "at the top level"
    elif parts[0] in _SECTION_LABELS and len(parts) == 1:
        where = f"in the {_SECTION_LABELS[str(parts[0])]} section ({parts[0]})"
    elif parts[-1] == "toxicity":
        where = "in the toxicity of a prior therapy (organ, grade)"
    else:
        where = "in a prior-therapy entry"
    message = f"Unknown field {shown} {where}; it is not part of {FORMAT_ID}."
    match = difflib.get_close_matches(key, known, n=1, cutoff=0.6) if suggest else []
    if match:
        message += f' Did you mean "{match[0]}"?'
        suggested = _field_at((*parts, match[0]))
        same_measure = "_" in key and key.split("_", 1)[0] == match[0].split("_", 1)[0]
        if suggested is not None and suggested.unit and same_measure:
            message += f" Units are part of field names: convert the value to {suggested.unit}."
    return message


def _type_message(parts: JsonPath, field: Field | None, value: object) -> str:
    found = _describe(value)
    if field is None:
        if len(parts) == 1 and parts[0] in _SECTION_LABELS:
            label = _SECTION_LABELS[str(parts[0])]
            return (
                f"The {label} section ({parts[0]}) must be an object {{ ... }}; found {found}. "
                "Leave the section out, or give null for each field that is not available."
            )
        if len(parts) == 3 and _catalog_path(parts[:2]) == _PRIOR:
            keys = ", ".join(f.key for f in PRIOR_THERAPY_FIELDS)
            return f"Each prior therapy must be an object with {keys}; found {found}."
        return f"{json_path(parts)} has the wrong type; found {found}."
    if field.type is FieldType.LIST_STR and isinstance(parts[-1], int):
        return f"Each entry of {field.label} must be text; found {found}."
    expected = _EXPECTED_TYPE[field.type]
    if field.required:
        if value is None:
            return f"{field.label} must be given; it cannot be null."
        return f"{field.label} must be {expected}; found {found}."
    message = f"{field.label} must be {expected} (or null if not available); found {found}."
    if field.is_numeric and isinstance(value, str) and _looks_numeric(value):
        message += " Write numbers without quotes."
    elif field.type is FieldType.INT and isinstance(value, float):
        message = f"{field.label} must be a whole number; found {_number_text(value)}."
    elif field.type is FieldType.BOOL and isinstance(value, str):
        message += " Write true or false without quotes."
    elif field.type is FieldType.LIST_STR and isinstance(value, str):
        message += f" Write a list, e.g. [{_quote(value)}]."
    return message


def _enum_message(field: Field, value: object) -> str:
    options = ", ".join(field.choice_values)
    if value is None and field.required:
        return f"{field.label} must be given; it cannot be null. Use one of: {options}."
    tail = "" if field.required else " (or null if not available)"
    if not isinstance(value, str):
        return f"{field.label} must be one of: {options}{tail}; found {_describe(value)}."
    message = (
        f"{field.label} {_quote(value)} is not a recognised value; use one of: {options}{tail}."
    )
    hint = _suggest(value, field.choice_values)
    if hint:
        return message + f' Did you mean "{hint}"?'
    # Free text where a coded value is expected: say what each code means (e.g. the steroid
    # dose that separates low from high), when the labels add anything to the codes.
    meanings = [f"{code} = {label}" for code, label in field.choices if label != code]
    return message + (f" Meaning: {'; '.join(meanings)}." if meanings else "")


def _suggest(value: str, options: Iterable[str]) -> str | None:
    options = tuple(options)
    folded = {o.casefold(): o for o in options}
    if value.strip().casefold() in folded:
        return folded[value.strip().casefold()]
    match = difflib.get_close_matches(value, options, n=1, cutoff=0.75)
    return match[0] if match else None


def _range_message(field: Field, value: object) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"{field.label} is out of range."
    shown = _with_unit(value, field.unit)
    if field.minimum is not None and field.minimum == field.maximum:
        return (
            f"{field.name} must be {_number_text(field.minimum)} when given; found {shown}. "
            + field.help
        )
    if field.exclusive_minimum and field.minimum is not None and value <= field.minimum:
        return (
            f"{field.name} {shown} is not possible: it must be greater than "
            f"{_with_unit(field.minimum, field.unit)}."
        )
    return f"{field.name} {shown} is outside the plausible range {_range_text(field)}."


# --------------------------------------------------------------------------- value access


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )


def _valid(field: Field, value: object) -> bool:
    """True if ``value`` is a non-null value that passes the field's own checks."""
    if value is None:
        return False
    if field.type is FieldType.ENUM:
        return value in field.choice_values
    if field.type is FieldType.BOOL:
        return isinstance(value, bool)
    if field.type is FieldType.STR:
        return isinstance(value, str)
    if field.is_numeric:
        if not _is_number(value) or not isinstance(value, (int, float)):
            return False
        if field.type is FieldType.INT and not float(value).is_integer():
            return False
        if field.minimum is not None and (
            value < field.minimum or (field.exclusive_minimum and value == field.minimum)
        ):
            return False
        return field.maximum is None or value <= field.maximum
    return True


def _get(data: Mapping[str, Any], path: str) -> Any:
    """Value at a catalog path if it is valid for its field, else None (= not usable)."""
    field = FIELDS_BY_PATH[path]
    holder = data if field.parent is None else _section(data, field.parent)
    value = holder.get(field.key)
    return value if _valid(field, value) else None


def _cancer_type(data: Mapping[str, Any]) -> str | None:
    value = data.get("cancer_type")
    return value if isinstance(value, str) and value in set(CancerType) else None


def _prior_entries(data: Mapping[str, Any]) -> list[tuple[int, Mapping[str, Any]]]:
    entries = _section(data, "diagnosis").get("prior_therapies")
    if not isinstance(entries, list):
        return []
    return [(i, e) for i, e in enumerate(entries) if isinstance(e, dict)]


# --------------------------------------------------------------------------- semantic checks

_MISSING_REQUIRED = {
    "case_id": 'The "case_id" field is missing; give a case identifier such as "hcc-2025-014".',
    "cancer_type": (
        'The "cancer_type" field is missing; use one of: ' + ", ".join(CancerType) + "."
    ),
}


def _check_required(data: dict[str, Any], issues: _Issues) -> None:
    for key, message in _MISSING_REQUIRED.items():
        if key not in data:
            issues.error((key,), message)


def _check_case_id(data: dict[str, Any], issues: _Issues) -> None:
    value = data.get("case_id")
    # fullmatch, not the schema's "$": in Python regexes "$" also matches before a final
    # newline, and a case id ends up in file names and URLs.
    if isinstance(value, str) and not re.fullmatch(CASE_ID_PATTERN.strip("^$"), value):
        issues.error(
            ("case_id",),
            f"Case ID {_quote(value)} is not allowed: use 1{_DASH}64 letters, digits, '-', '_' or "
            "'.', starting with a letter or digit.",
        )


def _check_tnm(data: dict[str, Any], issues: _Issues) -> None:
    cancer_type = _cancer_type(data)
    staging = _section(data, "staging")
    for axis in ("t", "n", "m"):
        value = staging.get(axis)
        if not isinstance(value, str) or cancer_type is None:
            continue
        field = FIELDS_BY_PATH[f"staging.{axis}"]
        parts: JsonPath = ("staging", axis)
        if cancer_type == "lymphoma":
            issues.error(
                parts,
                f"{field.label} {_quote(value)} is given, but TNM is not used for lymphoma; "
                "record the Ann Arbor stage instead and leave T, N and M null.",
            )
        elif cancer_type in TNM_CODES:
            codes = TNM_CODES[cancer_type][axis]
            if value not in codes:
                message = (
                    f"{field.label} {_quote(value)} is not a valid AJCC 8th edition code for "
                    f"{CancerType(cancer_type).in_sentence}; valid codes: {', '.join(codes)}."
                )
                bare = _TNM_PREFIX.sub("", value)
                if bare != value and bare in codes:
                    message += f' Write it without the c/p/y prefix: "{bare}".'
                else:
                    hint = _suggest(value, codes)
                    if hint and hint != value:
                        message += f' Did you mean "{hint}"?'
                issues.error(parts, message)
        elif not re.fullmatch(TNM_GENERIC_PATTERNS[axis].strip("^$"), value):
            issues.error(
                parts,
                f"{field.label} {_quote(value)} does not look like a TNM code; expected "
                f"{axis.upper()} followed by the category, e.g. {axis.upper()}1 or "
                f"{axis.upper()}X, without c/p/y prefix.",
            )


_TNM_PREFIX = re.compile(r"^(?:yp|yc|rp|rc|c|p|y|r|a)(?=[TNM])")
_DATE_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_EARLIEST = date(1900, 1, 1)


def _check_dates(data: dict[str, Any], issues: _Issues, today: date) -> None:
    for field in _TOP_LEVEL_DATES:
        section = data.get(field.parent or "")
        value = section.get(field.key) if isinstance(section, Mapping) else None
        if isinstance(value, str):
            _plausible_date(value, field, (field.parent or "", field.key), issues, today)
    for index, entry in _prior_entries(data):
        dates = {key: _checked_date(entry, index, key, issues, today) for key in _PRIOR_DATES}
        start, end = dates["start_date"], dates["end_date"]
        if start is not None and end is not None and end < start:
            issues.error(
                ("diagnosis", "prior_therapies", index, "end_date"),
                f"End date {end.isoformat()} is before the start date {start.isoformat()} of "
                "the same therapy; correct one of them.",
            )


_PRIOR_DATES = ("start_date", "end_date")
_PATH_PART = re.compile(r"\.([A-Za-z_][\w]*)|\[(\d+)\]")


def _path_parts(path: str) -> JsonPath:
    """("lesions", 0, "measurements", 1, "deauville") from "$.lesions[0].measurements[1]..."."""
    return tuple(
        name if name else int(index) for name, index in _PATH_PART.findall(path.lstrip("$"))
    )


def _check_lesions(data: dict[str, Any], issues: _Issues, today: date) -> None:
    """lesions[] (FORMAT.md §4): readable, in millimetres, Deauville 1-5, no two readings of a
    lesion on one date, none before the diagnosis or in the future. The first problem is
    reported with the lesion and the date it concerns; nothing is saved until it is fixed."""
    if data.get(LESIONS_KEY) is None:
        return
    try:
        lesions = lesions_from_case(data)
    except LesionInputError as error:
        issues.error(_path_parts(error.path), error.message[:1].upper() + error.message[1:] + ".")
        return
    for i, lesion in enumerate(lesions):
        for j, measurement in enumerate(lesion.measurements):
            if measurement.date is not None and measurement.date > today + timedelta(days=1):
                issues.error(
                    (LESIONS_KEY, i, "measurements", j, "date"),
                    f"Lesion {lesion.lesion_id} is measured on {measurement.date.isoformat()}, "
                    f"in the future (today is {today.isoformat()}).",
                )


# Dates of the case's own fields (an endoscopy, a bleed, an immune-related adverse event).
_TOP_LEVEL_DATES = tuple(f for f in FIELDS if f.type is FieldType.DATE and "[]" not in f.path)


def _plausible_date(
    value: str, field: Field, parts: JsonPath, issues: _Issues, today: date
) -> date | None:
    """``value`` as a date if it is written as one, real, not in the future and not before
    1900; else None, with the reason reported."""
    if not _DATE_SHAPE.fullmatch(value):
        issues.error(
            parts,
            f"{field.name} {_quote(value)} is not written as yyyy-mm-dd (e.g. 2025-01-31).",
        )
        return None
    try:
        when = date.fromisoformat(value)
    except ValueError:
        issues.error(parts, f"{field.name} {_quote(value)} is not a valid calendar date.")
        return None
    # One day of slack: the clinic and the server may be in different time zones.
    if when > today + timedelta(days=1):
        issues.error(
            parts,
            f"{field.name} {value} is in the future (today is {today.isoformat()}).",
        )
        return None
    if when < _EARLIEST:
        issues.error(parts, f"{field.name} {value} is implausibly early (before 1900).")
        return None
    return when


def _checked_date(
    entry: Mapping[str, Any], index: int, key: str, issues: _Issues, today: date
) -> date | None:
    """The entry's date at ``key`` if it is a valid, plausible date; else None (reported)."""
    field = _PRIOR_BY_KEY[key]
    value = entry.get(key)
    if not isinstance(value, str):
        return None
    parts: JsonPath = ("diagnosis", "prior_therapies", index, key)
    return _plausible_date(value, field, parts, issues, today)


def _check_prior_lines(data: dict[str, Any], issues: _Issues) -> None:
    seen: dict[int, int] = {}
    line_field = _PRIOR_BY_KEY["line"]
    for index, entry in _prior_entries(data):
        line = entry.get("line")
        if not isinstance(line, (int, float)) or not _valid(line_field, line):
            continue
        number = int(line)
        parts: JsonPath = ("diagnosis", "prior_therapies", index, "line")
        if number == 0:
            # Line 0 marks a course that is not a numbered line (an operation, radiotherapy, a
            # curative course); several of them are normal. A palliative systemic course is one.
            if _prior_value(entry, "kind") == "systemic" and (
                _prior_value(entry, "intent") == "palliative"
            ):
                issues.error(
                    parts,
                    "Line of therapy 0 is given to a palliative systemic therapy; palliative "
                    "systemic lines are numbered from 1 (0 or empty is for an operation, "
                    "radiotherapy, a transplant or a curative-intent course).",
                )
            continue
        if number in seen:
            issues.error(
                ("diagnosis", "prior_therapies", index, "line"),
                f"Line of therapy {number} appears more than once in prior therapies "
                f"(also entry {seen[number] + 1}); each line needs its own number.",
            )
        else:
            seen[number] = index


def _prior_value(entry: Mapping[str, Any], key: str) -> Any:
    """An entry's value at ``key`` if valid for its field, else None (= not usable)."""
    value = entry.get(key)
    return value if _valid(_PRIOR_BY_KEY[key], value) else None


_UNNUMBERED_NOUNS = {
    "operation": "an operation",
    "radiotherapy": "a radiotherapy course",
    "locoregional": "a locoregional treatment",
    "transplant": "a transplant",
}


def _warn_prior_kinds(data: dict[str, Any], issues: _Issues) -> None:
    """A numbered line on a course that is not a palliative systemic line is read as written
    (older files numbered every treatment) but flagged, since line counts drive the pathway."""
    for index, entry in _prior_entries(data):
        line = _prior_value(entry, "line")
        if line is None or line == 0:
            continue
        kind = _prior_value(entry, "kind")
        intent = _prior_value(entry, "intent")
        if kind in UNNUMBERED_KINDS:
            what = _UNNUMBERED_NOUNS[kind]
        elif intent in UNNUMBERED_INTENTS:
            what = f"a course of {intent} intent"
        else:
            continue
        issues.warn(
            ("diagnosis", "prior_therapies", index, "line"),
            f"Line of therapy {_number_text(line)} is given to {what}; line counts palliative "
            "systemic lines only. Use 0 or leave it empty unless this really was a numbered "
            "line.",
        )


def _check_cross_fields(data: dict[str, Any], issues: _Issues) -> None:
    cancer_type = _cancer_type(data)
    sex = _get(data, "patient.sex")
    if sex == "male":
        if _get(data, "patient.pregnant") is True:
            issues.error(
                ("patient", "pregnant"),
                "Pregnant is true but sex is male; correct one of them (use null if not known).",
            )
        if _get(data, "patient.breastfeeding") is True:
            issues.error(
                ("patient", "breastfeeding"),
                "Breastfeeding is true but sex is male; correct one of them (use null if not "
                "known).",
            )
        if _get(data, "patient.gestational_age_weeks") is not None:
            issues.error(
                ("patient", "gestational_age_weeks"),
                "A gestational age is recorded but sex is male; correct one of them (use null "
                "if not known).",
            )
        status = _get(data, "patient.menopausal_status")
        if status is not None:
            issues.error(
                ("patient", "menopausal_status"),
                f'Menopausal status is "{status}" but sex is male; menopausal status applies '
                "only to female patients (use null).",
            )

    weeks = _get(data, "patient.gestational_age_weeks")
    pregnant = _get(data, "patient.pregnant")
    if weeks is not None and sex != "male" and pregnant is not True:
        # The trimester decides which treatments can be given; a gestational age without a
        # recorded pregnancy is a contradiction the board must not resolve by guessing.
        issues.error(
            ("patient", "gestational_age_weeks"),
            f"A gestational age ({_with_unit(weeks, 'weeks')}) is recorded but Pregnant is "
            + ("false" if pregnant is False else "not recorded")
            + "; set Pregnant to true, or leave the gestational age empty.",
        )

    n = _tnm_value(data, "n", cancer_type)
    m = _tnm_value(data, "m", cancer_type)
    if cancer_type == "hcc":
        spread = _get(data, "staging.extrahepatic_spread")
        if spread is False and m is not None and m.startswith("M1"):
            issues.error(
                ("staging", "m"),
                f"M category {m} (distant metastasis) contradicts extrahepatic spread = false.",
            )
        if spread is False and n == "N1":
            issues.error(
                ("staging", "n"),
                "N category N1 (regional lymph-node metastasis) contradicts extrahepatic "
                "spread = false; nodal disease counts as extrahepatic spread.",
            )
        if spread is True and n == "N0" and m == "M0":
            issues.error(
                ("staging", "extrahepatic_spread"),
                "Extrahepatic spread is true but the TNM is N0 M0 (no nodal or distant "
                "disease); correct one of them.",
            )

    brain = _get(data, "staging.brain_metastases_count")
    if brain is not None and brain > 0 and m == "M0":
        message = (
            f"{_number_text(brain)} brain metastases are recorded but the M category is M0 "
            "(no distant metastasis); brain metastases are distant metastases."
        )
        if _get(data, "diagnosis.setting") in _RELAPSE_SETTINGS:
            message += (
                " For a recurrence or progression, record the current M category (M1), not "
                "the one at first diagnosis."
            )
        issues.error(("staging", "brain_metastases_count"), message)

    _check_liver_burden(data, issues, cancer_type, n, m)
    _check_ann_arbor(data, issues)


_RELAPSE_SETTINGS = frozenset({"recurrent", "progressive"})
# Words that place an index lesion in the liver: the organ, Couinaud segments (Roman numerals;
# lung segments are written S1-S10 or by name), and the liver's lobes ("right lobe", while a
# lung lobe is "right upper lobe").
_LIVER_SITE = re.compile(
    r"\b(?:liver|hepatic|intrahepatic|couinaud|caudate|hepatic\s+dome"
    r"|segments?\s+(?:I|II|III|IV|IVa|IVb|V|VI|VII|VIII)\b"
    r"|(?:left|right)\s+(?:hepatic\s+)?lobe)",
    re.IGNORECASE,
)
# A lymph node at the liver hilum is extrahepatic (N1), even though its site says "hepatic".
_NODE_SITE = re.compile(r"\b(?:lymph|node|nodes|nodal)\b", re.IGNORECASE)


def _site_in_liver(site: str) -> bool:
    return bool(_LIVER_SITE.search(site)) and not _NODE_SITE.search(site)


def _index_lesion_outside_liver(data: Mapping[str, Any], n: str | None, m: str | None) -> bool:
    """True if an HCC's index lesion is not a liver nodule: a metastasis, a distant recurrence
    or a tumour thrombus.

    That needs both a site that names no part of the liver and disease that can lie outside
    the nodules (extrahepatic spread, N1/M1, a recurrence or progression, or macrovascular
    invasion for a portal or hepatic vein thrombus); extrahepatic spread = false keeps a
    lesion that is not a thrombus in the liver.
    """
    site = _get(data, "index_lesion.site")
    if not isinstance(site, str) or not site.strip() or _site_in_liver(site):
        return False
    if _get(data, "staging.macrovascular_invasion") is True:
        return True
    spread = _get(data, "staging.extrahepatic_spread")
    if spread is False:
        return False
    return (
        spread is True
        or n == "N1"
        or (m is not None and m.startswith("M1"))
        or _get(data, "diagnosis.setting") in _RELAPSE_SETTINGS
    )


def _check_liver_burden(
    data: dict[str, Any], issues: _Issues, cancer_type: str | None, n: str | None, m: str | None
) -> None:
    """The HCC index lesion, when it is a liver nodule, must agree with the liver burden.

    Number and size of liver nodules are HCC staging inputs (BCLC, Milan); for other cancers
    they are not normally recorded (a warning says so) and the index lesion may lie anywhere,
    so they are not compared. An HCC index lesion outside the liver (an adrenal, lung or bone
    metastasis, a distant recurrence with no lesion left in the liver) is not compared either.
    """
    if cancer_type != "hcc" or _index_lesion_outside_liver(data, n, m):
        return
    site = _get(data, "index_lesion.site")
    hint = ""
    if isinstance(site, str) and site.strip() and not _site_in_liver(site):
        hint = (
            f" If the index lesion ({_quote(site)}) is not a liver nodule, record the "
            "extrahepatic spread (and N1 or M1) for a lesion outside the liver, or the "
            "macrovascular invasion for a tumour thrombus, so that it is not compared with the "
            "liver nodules."
        )
    nodules = _get(data, "staging.nodules_count")
    count = _get(data, "index_lesion.count")
    if nodules is not None and count is not None and nodules != count:
        issues.error(
            ("staging", "nodules_count"),
            f"Number of liver nodules ({_number_text(nodules)}) differs from the number of "
            f"lesions in the index lesion section ({_number_text(count)})." + hint,
        )
    largest = _get(data, "staging.largest_nodule_mm")
    size = _get(data, "index_lesion.size_mm")
    if largest is not None and size is not None and size > largest:
        issues.error(
            ("staging", "largest_nodule_mm"),
            f"Largest liver nodule {_with_unit(largest, 'mm')} is smaller than the index lesion "
            f"({_with_unit(size, 'mm')}); the index lesion cannot be larger than the largest "
            "nodule." + hint,
        )


def _tnm_value(data: Mapping[str, Any], axis: str, cancer_type: str | None) -> str | None:
    """A TNM code usable for cross-checks: valid for the organ (or of generic shape)."""
    value = _section(data, "staging").get(axis)
    if not isinstance(value, str) or cancer_type is None or cancer_type == "lymphoma":
        return None
    if cancer_type in TNM_CODES:
        return value if value in TNM_CODES[cancer_type][axis] else None
    return value if re.fullmatch(TNM_GENERIC_PATTERNS[axis].strip("^$"), value) else None


def _check_ann_arbor(data: dict[str, Any], issues: _Issues) -> None:
    stage = _get(data, "staging.ann_arbor_stage")
    if stage is None:
        return
    parts: JsonPath = ("staging", "ann_arbor_stage")
    if stage != "IV" and _get(data, "staging.bone_marrow_involvement") is True:
        issues.error(
            parts,
            f"Ann Arbor stage {stage} contradicts bone marrow involvement = true; "
            "marrow involvement is stage IV.",
        )
    both_sides = _get(data, "staging.both_sides_of_diaphragm")
    if stage in ("I", "II") and both_sides is True:
        issues.error(
            parts,
            f"Ann Arbor stage {stage} contradicts disease on both sides of the diaphragm = "
            "true; stages I and II are confined to one side of the diaphragm.",
        )
    if stage == "III" and both_sides is False:
        issues.error(
            parts,
            "Ann Arbor stage III means nodal disease on both sides of the diaphragm, but "
            "disease on both sides of the diaphragm is false.",
        )
    regions = _get(data, "staging.nodal_regions_involved")
    if stage == "I" and regions is not None and regions >= 2:
        issues.error(
            parts,
            f"Ann Arbor stage I means a single nodal region, but {_number_text(regions)} "
            "nodal regions involved are recorded.",
        )


_MONTH = timedelta(days=30.44)
# G8 of 14 or less is an abnormal screen (a full geriatric assessment is advised).
_G8_CUTOFF = 14
# Free-text answers to "autoimmune disease" that mean there is none, or that it is not known.
_NO_AUTOIMMUNE = re.compile(
    r"(?:none|nil|no|absent|negative)(?:\s+(?:known|reported|documented))?"
    r"|no\s+(?:known\s+|history\s+of\s+)?autoimmune(?:\s+diseases?)?",
    re.IGNORECASE,
)
_UNKNOWN_TEXT = re.compile(
    r"unknown|not\s+known|n/?a|not\s+(?:assessed|available|recorded)|\?+|-+", re.IGNORECASE
)


def _autoimmune_described(text: str) -> bool | None:
    """True if the text describes a disease, False if it says there is none, None if unknown."""
    words = " ".join(text.split()).rstrip(".").strip()
    if not words or _UNKNOWN_TEXT.fullmatch(words):
        return None
    return not _NO_AUTOIMMUNE.fullmatch(words)


def _warn_autoimmune(data: dict[str, Any], issues: _Issues) -> None:
    # Checkpoint-inhibitor safety reads the activity; a description that contradicts it must
    # be seen before the board relies on either.
    activity = _get(data, "organ_function.autoimmune_activity")
    text = _get(data, "organ_function.autoimmune_disease")
    if activity is None or text is None:
        return
    described = _autoimmune_described(text)
    if activity == "none" and described is True:
        issues.warn(
            ("organ_function", "autoimmune_activity"),
            f'Autoimmune disease activity is "none" (no autoimmune disease) but Autoimmune '
            f"disease describes one ({_quote(text)}); set the activity to inactive or active, "
            "or correct the description.",
        )
    elif activity in ("inactive", "active") and described is False:
        issues.warn(
            ("organ_function", "autoimmune_disease"),
            f"Autoimmune disease is {_quote(text)} but its activity is {_quote(activity)}; "
            'describe the disease, or set the activity to "none".',
        )


def _check_warnings(data: dict[str, Any], issues: _Issues, today: date) -> None:
    error_paths = {parts for parts, _ in issues.errors}
    for field in FIELDS:
        if not field.is_numeric or (field.warn_below is None and field.warn_above is None):
            continue
        value = _get(data, field.path)
        if value is None:
            continue
        low = field.warn_below is not None and value < field.warn_below
        high = field.warn_above is not None and value > field.warn_above
        if low or high:
            typical = (
                f"{_number_text(field.warn_below or 0)}{_DASH}"
                f"{_number_text(field.warn_above or 0)} {field.unit}"
            ).strip()
            issues.warn(
                tuple(field.path.split(".")),
                f"{field.name} {_with_unit(value, field.unit)} is unusual (typical range "
                f"{typical}); please check it.",
            )

    age = _get(data, "patient.age_years")
    if _get(data, "patient.menopausal_status") == "premenopausal" and age is not None and age > 70:
        issues.warn(
            ("patient", "menopausal_status"),
            f"Premenopausal at age {_number_text(age)} years is unusual; please check.",
        )

    g8 = _get(data, "patient.g8_score")
    if g8 is not None and g8 > _G8_CUTOFF and _get(data, "patient.frailty") == "frail":
        issues.warn(
            ("patient", "frailty"),
            f"Frailty is frail but the G8 score is {_number_text(g8)} (above "
            f"{_G8_CUTOFF}, a normal screen); please check the frailty or the G8 score.",
        )
    _warn_autoimmune(data, issues)
    if (
        _get(data, "patient.pregnant") is True
        and _get(data, "patient.gestational_age_weeks") is None
    ):
        issues.warn(
            ("patient", "gestational_age_weeks"),
            "Pregnant is true but the gestational age is not recorded; the treatments allowed "
            "depend on it (no chemotherapy before week 14), so the plan will ask for it.",
        )

    cancer_type = _cancer_type(data)
    brain = _get(data, "staging.brain_metastases_count")
    m = _tnm_value(data, "m", cancer_type)
    if cancer_type == "lung_adenocarcinoma" and brain and m == "M1a":
        issues.warn(
            ("staging", "m"),
            f"{_number_text(brain)} brain metastases are recorded with M1a; in AJCC 8 "
            "extrathoracic metastases are M1b (single) or M1c (multiple).",
        )

    _warn_prior_kinds(data, issues)
    prior = _prior_entries(data)
    if _get(data, "diagnosis.setting") == "newly_diagnosed" and prior:
        issues.warn(
            ("diagnosis", "setting"),
            "The setting is newly diagnosed but prior therapies are listed; please check "
            "the setting (recurrent, progressive or residual after neoadjuvant).",
        )
    for index, entry in prior:
        end = entry.get("end_date")
        months = entry.get("months_to_relapse")
        parts: JsonPath = ("diagnosis", "prior_therapies", index, "months_to_relapse")
        if not isinstance(end, str) or not isinstance(months, (int, float)):
            continue
        if not _valid(_PRIOR_BY_KEY["months_to_relapse"], months):
            continue
        try:
            when = date.fromisoformat(end) if _DATE_SHAPE.fullmatch(end) else None
        except ValueError:
            when = None
        if when is None or when > today:
            continue
        relapse = when + _MONTH * float(months)
        if relapse > today + _MONTH:
            issues.warn(
                parts,
                f"Relapse {_number_text(months)} months after {end} would be after today "
                f"({today.isoformat()}); please check the time to relapse.",
            )

    if cancer_type is None or cancer_type == "other":
        return
    for field in FIELDS:
        if field.applies(cancer_type) or field.parent is None:
            continue
        parts = tuple(field.path.split("."))
        value = _section(data, field.parent).get(field.key)
        if value is None or value == [] or parts in error_paths:
            continue
        issues.warn(
            parts,
            f"{field.label} is not normally recorded for {CancerType(cancer_type).in_sentence}; "
            "please check the cancer type and this value.",
        )


# --------------------------------------------------------------------------- canonical form


def case_to_canonical(data: Mapping[str, Any]) -> dict[str, Any]:
    """The case without "expected", with every catalog key present in catalog order.

    Missing keys become null, which means "not available" (nothing is imputed). Values are
    copied unchanged and unknown keys are dropped, so use it on validated cases only.
    """
    out: dict[str, Any] = {}
    for key in TOP_LEVEL_KEYS:
        if key == LESIONS_KEY:
            # optional and additive: an older file's canonical form stays as it was
            if data.get(key) is not None:
                out[key] = copy.deepcopy(data[key])
            continue
        if key not in JSON_SECTIONS:
            out[key] = copy.deepcopy(data.get(key))
            continue
        section = _section(data, key)
        out[key] = {f.key: _canonical_value(f, section.get(f.key)) for f in children(key)}
    return out


def _canonical_value(field: Field, value: Any) -> Any:
    if field.type is FieldType.PRIOR_THERAPIES and isinstance(value, list):
        return [
            {f.key: _canonical_value(f, entry.get(f.key)) for f in PRIOR_THERAPY_FIELDS}
            if isinstance(entry, dict)
            else copy.deepcopy(entry)
            for entry in value
        ]
    if field.type is FieldType.TOXICITY and isinstance(value, dict):
        return {f.key: copy.deepcopy(value.get(f.key)) for f in TOXICITY_FIELDS}
    return copy.deepcopy(value)


def canonical_json(data: Mapping[str, Any]) -> str:
    """Canonical form serialised for export (UTF-8 text, 2-space indent, final newline)."""
    text = json.dumps(case_to_canonical(data), indent=2, ensure_ascii=False, allow_nan=False)
    return text + "\n"


__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ERRORS",
    "CaseError",
    "ParsedCase",
    "canonical_json",
    "case_to_canonical",
    "case_warnings",
    "json_path",
    "local_today",
    "parse_case_bytes",
    "text_depth_exceeds",
    "validate_case",
]
