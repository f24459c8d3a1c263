"""JSON Schema (draft 2020-12) of mdtboard.case/1, generated from the field catalog."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from clinical.calculators.response import LATERALITIES, LESION_KINDS, MAX_SIZE_MM, MODALITIES
from clinical.vocab import CancerType
from consult.casefile.fields import (
    EXPECTED_KEY,
    FIELDS,
    FORMAT_ID,
    JSON_SECTIONS,
    LESIONS_KEY,
    PRIOR_THERAPY_FIELDS,
    SECTIONS,
    TNM_GENERIC_PATTERNS,
    TOP_LEVEL_KEYS,
    TOXICITY_FIELDS,
    Field,
    FieldType,
    children,
    get_field,
)

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# The directory "schema/" has no __init__.py on purpose: it only carries the published file,
# and this module (schema.py) must stay the importable "consult.casefile.schema".
SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "mdtboard.case-1.schema.json"

DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def _leaf_schema(field: Field) -> dict[str, Any]:
    schema: dict[str, Any] = {"title": field.label}
    if field.help:
        schema["description"] = field.help
    nullable = not field.required
    if field.type is FieldType.ENUM:
        values: list[Any] = list(field.choice_values)
        schema["enum"] = [*values, None] if nullable else values
        return schema
    json_type = {
        FieldType.INT: "integer",
        FieldType.NUMBER: "number",
        FieldType.STR: "string",
        FieldType.BOOL: "boolean",
        FieldType.DATE: "string",
        FieldType.LIST_STR: "array",
        FieldType.PRIOR_THERAPIES: "array",
        FieldType.TOXICITY: "object",
    }[field.type]
    schema["type"] = [json_type, "null"] if nullable else json_type
    if field.is_numeric:
        if field.minimum is not None:
            key = "exclusiveMinimum" if field.exclusive_minimum else "minimum"
            schema[key] = field.minimum
        if field.maximum is not None:
            schema["maximum"] = field.maximum
    elif field.type is FieldType.STR:
        if field.max_length is not None:
            schema["maxLength"] = field.max_length
        if field.pattern is not None:
            schema["pattern"] = field.pattern
        if field.key in TNM_GENERIC_PATTERNS and field.parent == "staging":
            schema["pattern"] = TNM_GENERIC_PATTERNS[field.key]
    elif field.type is FieldType.DATE:
        schema["format"] = "date"
        schema["pattern"] = DATE_PATTERN
    elif field.type is FieldType.LIST_STR:
        item: dict[str, Any] = {"type": "string"}
        if field.max_length is not None:
            item["maxLength"] = field.max_length
        schema["items"] = item
        if field.max_items is not None:
            schema["maxItems"] = field.max_items
    elif field.type is FieldType.PRIOR_THERAPIES:
        schema["items"] = {"$ref": "#/$defs/prior_therapy"}
        if field.max_items is not None:
            schema["maxItems"] = field.max_items
    elif field.type is FieldType.TOXICITY:
        # Inline rather than a $ref: "properties" applies to objects only, so null passes, and
        # a grade out of range is reported at its own path.
        schema["properties"] = {f.key: _leaf_schema(f) for f in TOXICITY_FIELDS}
        schema["additionalProperties"] = False
    return schema


def _object_schema(fields: tuple[Field, ...], title: str, description: str) -> dict[str, Any]:
    return {
        "title": title,
        "description": description,
        "type": "object",
        "properties": {f.key: _leaf_schema(f) for f in fields},
        "additionalProperties": False,
    }


_SIZE: dict[str, Any] = {"type": ["number", "null"], "minimum": 0, "maximum": MAX_SIZE_MM}
_MEASUREMENT_SCHEMA: dict[str, Any] = {
    "title": "Measurement",
    "description": "One reading of a lesion on one date; sizes in millimetres.",
    "type": "object",
    "properties": {
        "date": {"type": "string", "format": "date"},
        "modality": {"enum": [*MODALITIES, None]},
        "longest_diameter_mm": _SIZE,
        "short_axis_mm": {**_SIZE, "description": "Short axis, for lymph nodes (RECIST 1.1)."},
        "viable_enhancing_mm": {
            **_SIZE,
            "description": "Longest diameter of viable, arterially enhancing tumour (mRECIST).",
        },
        "deauville": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": 5,
            "description": "PET-CT Deauville five-point score (Lugano).",
        },
    },
    "required": ["date"],
    "additionalProperties": False,
}
_LESION_SCHEMA: dict[str, Any] = {
    "title": "Lesion",
    "type": "object",
    "properties": {
        "lesion_id": {"type": "string", "minLength": 1, "maxLength": 40},
        "site": {"type": ["string", "null"]},
        "kind": {"enum": [*LESION_KINDS, None]},
        "target": {"type": ["boolean", "null"]},
        "is_index": {"type": ["boolean", "null"]},
        "laterality": {"enum": [*LATERALITIES, None]},
        "description": {"type": ["string", "null"]},
        "measurements": {"type": "array", "items": {"$ref": "#/$defs/measurement"}},
    },
    "required": ["lesion_id"],
    "additionalProperties": False,
}


def build_schema() -> dict[str, Any]:
    """The complete JSON Schema document; deterministic so the committed copy can be compared."""
    section_meta = {s.key: s for s in SECTIONS}
    properties: dict[str, Any] = {}
    for key in TOP_LEVEL_KEYS:
        if key in JSON_SECTIONS:
            meta = section_meta[key]
            properties[key] = _object_schema(children(key), meta.label, meta.description)
        elif key == "format":
            properties[key] = {
                "title": "Format",
                "description": get_field(key).help,
                "const": FORMAT_ID,
            }
        elif key == LESIONS_KEY:
            properties[key] = {
                "title": "Lesions over time",
                "description": (
                    "Optional (FORMAT.md §4): every lesion with its serial measurements; a "
                    "file without it has one lesion, its index_lesion. A lesion first measured "
                    "after the earliest measurement of the file is a new lesion at that date."
                ),
                "type": ["array", "null"],
                "items": {"$ref": "#/$defs/lesion"},
            }
        elif key == "cancer_type":
            leaf = _leaf_schema(get_field(key))
            leaf["description"] += (
                " " + "; ".join(f"{c.value} = {c.in_sentence}" for c in CancerType) + "."
            )
            properties[key] = leaf
        else:
            properties[key] = _leaf_schema(get_field(key))
    properties[EXPECTED_KEY] = {
        "title": "Evaluation expectations",
        "description": "Only in evaluation files (FORMAT.md §3); importers accept and ignore it.",
    }
    prior = {f.key: _leaf_schema(f) for f in PRIOR_THERAPY_FIELDS}
    return {
        "$schema": SCHEMA_DIALECT,
        "title": FORMAT_ID,
        "description": (
            "One patient and one index lesion at the moment an MDT question is asked. "
            "Every field may be null, meaning not available; missing values are never imputed. "
            "Units are part of field names. Sections may be omitted (all fields not available). "
            "Clinical consistency (AJCC 8 TNM codes per organ, dates, cross-field checks) is "
            "checked by the application in addition to this schema."
        ),
        "type": "object",
        "required": [f.path for f in FIELDS if f.required],
        "properties": properties,
        "additionalProperties": False,
        "$defs": {
            "lesion": _LESION_SCHEMA,
            "measurement": _MEASUREMENT_SCHEMA,
            "prior_therapy": {
                "title": "Prior therapy",
                "description": (
                    "One previous anticancer treatment: a line of systemic therapy, an "
                    "operation, a radiotherapy course, a locoregional treatment or a transplant."
                ),
                "type": "object",
                "properties": prior,
                "additionalProperties": False,
            },
        },
    }


def schema_json() -> str:
    """The schema serialised exactly as committed in SCHEMA_PATH."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> None:
    path.write_text(schema_json(), encoding="utf-8")


if __name__ == "__main__":
    # Regenerate with: python -m consult.casefile.schema
    write_schema()
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
