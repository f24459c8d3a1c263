"""Template filters for what a clinician reads: members' and the engine's prose with field
names and knowledge-base ids rewritten (consult.labels.clinical_text), members by name."""

from __future__ import annotations

from typing import Any

from django import template

from consult import labels
from consult.labels import clinical_text

register = template.Library()


@register.filter(name="clinical")
def clinical(value: Any) -> str:
    """Plain text out (the template still escapes it)."""
    return clinical_text(value)


@register.filter(name="role_label")
def role_label(value: Any) -> str:
    return labels.role_label(value)
