"""Template filters for what a clinician reads: members' and the engine's prose with field
names and knowledge-base ids rewritten (consult.labels.clinical_text), members by name."""

from __future__ import annotations

from typing import Any

from django import template

from clinical.vocab import ROLE_LABELS
from consult.labels import clinical_text, fact_words

register = template.Library()


@register.filter(name="clinical")
def clinical(value: Any) -> str:
    """Plain text out (the template still escapes it)."""
    return clinical_text(value)


@register.filter(name="fact_words")
def fact_words_filter(value: Any) -> str:
    """A line about patient facts in clinical words, coded values included."""
    return fact_words(value)


@register.filter(name="role_label")
def role_label(value: Any) -> str:
    role = str(value or "")
    return ROLE_LABELS.get(role, role.replace("_", " ").capitalize())
