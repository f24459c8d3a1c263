"""UCUM unit conversion through ucumvert (UCUM grammar) and pint: a unit the library cannot
read, or that does not measure the same kind of quantity, is refused, never guessed."""

from __future__ import annotations

import functools
import math
from typing import Any

UCUM_SYSTEM = "http://unitsofmeasure.org"

# Dimensionless codes FHIR uses for ratios and scores (UCUM "1" and its annotations).
DIMENSIONLESS = frozenset({"1", "{INR}", "{ratio}", "{Ratio}", "{score}", "{Score}"})


class UnitError(ValueError):
    """The value cannot be converted: the message says why, for the review screen."""


@functools.cache
def _registry() -> Any:
    # Built once per process (about half a second): the UCUM grammar and pint's definitions.
    # Imported here, when a unit is first converted: pint brings scipy along, and a process
    # that never reads a FHIR Bundle (a consultation, runcase of a case file) must not pay it.
    from ucumvert import PintUcumRegistry

    return PintUcumRegistry()


# UCUM codes are short ("mg/dL", "10*3/uL"); a longer one is junk, and parsing costs grow with
# the length (ucumvert's grammar runs on an Earley parser).
MAX_CODE_LENGTH = 40


@functools.lru_cache(maxsize=512)
def _quantity(code: str) -> Any:
    # Parsing one code takes milliseconds and a record repeats a handful of units thousands of
    # times: each is parsed once per process.
    if len(code) > MAX_CODE_LENGTH:
        raise UnitError(f"a unit code of {len(code)} characters is not a UCUM unit")
    try:
        return _registry().from_ucum(code)
    except Exception as exc:  # ucumvert raises its own and lark's errors for unreadable codes
        raise UnitError(f"{code!r} is not a UCUM unit this application can read") from exc


@functools.lru_cache(maxsize=1024)
def _factor(unit: str, target: str, molar_mass_g_mol: float | None) -> float:
    """How many ``target`` one ``unit`` is (every unit the dossier uses is proportional)."""
    source = _quantity(unit)
    wanted = _quantity(target)
    if molar_mass_g_mol is not None and source.check("[substance] / [length] ** 3"):
        source = source * (molar_mass_g_mol * _quantity("g/mol"))
    try:
        return float(source.to(wanted.units).magnitude / wanted.magnitude)
    except Exception as exc:  # pint's DimensionalityError and friends
        raise UnitError(f"{unit!r} does not measure the same thing as {target!r}") from exc


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
    return value * _factor(unit, target, molar_mass_g_mol)
