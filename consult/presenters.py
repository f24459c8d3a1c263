"""How stored case values read on screen: null is always shown as "not available"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from consult.casefile.fields import (
    PRIOR_THERAPY_FIELDS,
    SECTIONS,
    Field,
    FieldType,
    fields_in_section,
)

NOT_AVAILABLE = "not available"


@dataclass(frozen=True)
class Row:
    label: str
    text: str
    available: bool
    path: str


@dataclass(frozen=True)
class SectionView:
    key: str
    label: str
    rows: list[Row]
    prior_therapies: list[list[Row]] | None


def display(field: Field, value: Any) -> str:
    if value is None:
        return NOT_AVAILABLE
    if field.type is FieldType.BOOL:
        return "yes" if value else "no"
    if field.type is FieldType.LIST_STR:
        return ", ".join(value) if value else "none"
    if field.type is FieldType.ENUM:
        return dict(field.choices).get(value, str(value))
    if field.type is FieldType.TOXICITY:
        return toxicity_text(value)
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{text} {field.unit}" if field.unit and field.unit != "yyyy-mm-dd" else text


def toxicity_text(value: Any) -> str:
    """{"organ": "lung", "grade": 3} -> "lung, CTCAE grade 3"; parts not recorded are said so."""
    if not isinstance(value, dict):
        return str(value)
    organ = value.get("organ")
    grade = value.get("grade")
    organ_text = str(organ) if organ not in (None, "") else "organ not recorded"
    grade_text = f"CTCAE grade {grade}" if grade is not None else "grade not recorded"
    return f"{organ_text}, {grade_text}"


def _value(data: dict[str, Any], field: Field) -> Any:
    holder = data if field.parent is None else (data.get(field.parent) or {})
    return holder.get(field.key)


def case_sections(data: dict[str, Any]) -> list[SectionView]:
    cancer_type = str(data.get("cancer_type") or "other")
    views = []
    for section in SECTIONS:
        rows, prior = [], None
        for field in fields_in_section(section.key):
            if field.type is FieldType.PRIOR_THERAPIES:
                prior = [
                    [
                        Row(
                            f.label,
                            display(f, item.get(f.key)),
                            item.get(f.key) is not None,
                            f.path,
                        )
                        for f in PRIOR_THERAPY_FIELDS
                    ]
                    for item in (_value(data, field) or [])
                ]
                continue
            value = _value(data, field)
            # Fields of other cancer types are hidden unless the case carries a value there.
            if not field.applies(cancer_type) and value in (None, [], ""):
                continue
            rows.append(Row(field.label, display(field, value), value is not None, field.path))
        views.append(SectionView(section.key, section.label, rows, prior))
    return views
