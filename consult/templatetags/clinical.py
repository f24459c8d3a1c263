"""Template filters for what a clinician reads: members' and the engine's prose with field
names and knowledge-base ids rewritten (consult.labels.clinical_text), members by name."""

from __future__ import annotations

from typing import Any

from django import template

from consult import labels
from consult.labels import clinical_text, fact_words

register = template.Library()


@register.filter(name="clinical")
def clinical(value: Any) -> str:
    """Plain text out (the template still escapes it)."""
    return clinical_text(value)


@register.filter(name="gate_status")
def gate_status(value: Any) -> str:
    """A gate's result as its symbol and word ("✗ Failed"): never colour alone."""
    word, symbol = labels.gate_status_label(value)
    return f"{symbol} {word}"


@register.filter(name="gate_effect")
def gate_effect(value: Any) -> str:
    """What a gate did to the plan, in words ("" for an effect without words)."""
    return labels.GATE_EFFECT_WORDS.get(str(value or ""), "")


@register.filter(name="fact_words")
def fact_words_filter(value: Any) -> str:
    """A line about patient facts in clinical words, coded values included."""
    return fact_words(value)


@register.filter(name="role_label")
def role_label(value: Any) -> str:
    return labels.role_label(value)
