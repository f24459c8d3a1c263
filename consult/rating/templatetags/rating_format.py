"""How the study's figures read on the analytics page."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()
NOT_ENOUGH = "n/a"


def _missing(value: Any) -> bool:
    # A figure that could not be computed is None; an attribute of a missing one renders "".
    return value is None or value == ""


@register.filter
def num(value: Any, digits: int = 2) -> str:
    if _missing(value):
        return NOT_ENOUGH
    return f"{float(value):.{int(digits)}f}"


@register.filter
def pvalue(value: Any) -> str:
    """p and q values: three decimals, "< 0.001" below that."""
    if _missing(value):
        return NOT_ENOUGH
    return "< 0.001" if float(value) < 0.001 else f"{float(value):.3f}"


@register.filter
def percent(value: Any) -> str:
    return NOT_ENOUGH if _missing(value) else f"{100 * float(value):.0f} %"


@register.filter
def mean_ci(value: Any) -> str:
    """A MeanCI as "3.44 (3.29–3.59)"."""
    if _missing(value):
        return NOT_ENOUGH
    if value.low is None:
        return f"{value.mean:.2f} (n = 1)"
    return f"{value.mean:.2f} ({value.low:.2f}–{value.high:.2f})"


@register.filter
def median_iqr(value: Any, digits: int = 1) -> str:
    """A MedianIQR as "10.6 (9.5–12.0)"."""
    if _missing(value):
        return NOT_ENOUGH
    d = int(digits)
    return f"{value.median:.{d}f} ({value.q1:.{d}f}–{value.q3:.{d}f})"


@register.filter
def get(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if mapping is not None else None
