"""UCUM unit conversion through ucumvert (UCUM grammar) and pint: a unit the library cannot
read, or that does not measure the same kind of quantity, is refused, never guessed."""

from __future__ import annotations

import functools
import math
from typing import Any

from ucumvert import PintUcumRegistry

UCUM_SYSTEM = "http://unitsofmeasure.org"

# Dimensionless codes FHIR uses for ratios and scores (UCUM "1" and its annotations).
DIMENSIONLESS = frozenset({"1", "{INR}", "{ratio}", "{Ratio}", "{score}", "{Score}"})


class UnitError(ValueError):
    """The value cannot be converted: the message says why, for the review screen."""


@functools.cache
def _registry() -> Any:
    # Built once per process (about half a second): the UCUM grammar and pint's definitions.
    return PintUcumRegistry()


def _quantity(code: str) -> Any:
    try:
        return _registry().from_ucum(code)
    except Exception as exc:  # ucumvert raises its own and lark's errors for unreadable codes
        raise UnitError(f"{code!r} is not a UCUM unit this application can read") from exc


def convert(
    value: float, unit: str | None, target: str, *, molar_mass_g_mol: float | None = None
) -> float:
    """``value`` in the UCUM ``unit``, expressed in the UCUM ``target`` unit.

    A molar concentration converts to a mass concentration only with the analyte's molar mass
    (bilirubin, creatinine); without it the dimensions differ and the value is refused.
    """
    if not math.isfinite(value):
        raise UnitError("the value is not a finite number")
    if unit is None or unit.strip() == "":
        if target in DIMENSIONLESS:
            return value
        raise UnitError(f"no unit is given; the field is in {target}")
    unit = unit.strip()
    if unit == target:
        return value
    if target in DIMENSIONLESS:
        if unit in DIMENSIONLESS:
            return value
        raise UnitError(f"{unit!r} is not a plain ratio")
    source = value * _quantity(unit)
    wanted = _quantity(target)
    if molar_mass_g_mol is not None and source.check("[substance] / [length] ** 3"):
        source = source * (molar_mass_g_mol * _quantity("g/mol"))
    try:
        converted = source.to(wanted.units).magnitude / wanted.magnitude
    except Exception as exc:  # pint's DimensionalityError and friends
        raise UnitError(f"{unit!r} does not measure the same thing as {target!r}") from exc
    return float(converted)
