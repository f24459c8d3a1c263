"""Shared result type and null-safe case-file readers for the clinical calculators."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# A calculator value is a number, a label, or None ("not derivable from the inputs").
CalcValue = int | float | str | None
# A derived fact may also be a list of strings (medication classes, declined/wanted topics).
# Booleans are ints in Python, so they are already CalcValues.
FactValue = int | float | str | list[str] | None


@dataclass(frozen=True)
class CalcResult:
    """Outcome of one calculator run on one case file.

    ``value`` is None whenever a required input is missing or invalid; ``inputs_missing``
    then names the dotted case-file paths responsible, so the caller can report
    "not available" instead of a guess.
    """

    name: str
    value: FactValue
    inputs_used: dict[str, object]
    inputs_missing: list[str]
    source: str
    detail: str = ""

    def to_dict(self) -> dict[str, object]:
        """JSON-serialisable view (plain dicts/lists only)."""
        return {
            "name": self.name,
            "value": list(self.value) if isinstance(self.value, list) else self.value,
            "inputs_used": dict(self.inputs_used),
            "inputs_missing": list(self.inputs_missing),
            "source": self.source,
            "detail": self.detail,
        }


def lookup(case: Mapping[str, Any], path: str) -> object:
    """Return the value at a dotted path, or None if any section is absent or null."""
    node: object = case
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def round_half_up(x: float) -> int:
    """Round to the nearest integer, halves away from zero (Python's round() is banker's)."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


class Inputs:
    """Collects the inputs a calculator reads, recording what was used and what was missing.

    A value that is present but unusable (wrong type, out of range, unknown enum member) is
    treated like a missing one -- it is listed in ``missing`` and explained in ``notes`` --
    because using it would amount to guessing.
    """

    def __init__(self, case: Mapping[str, Any]) -> None:
        self.case = case
        self.used: dict[str, object] = {}
        self.missing: list[str] = []
        self.notes: list[str] = []

    def _miss(self, path: str, note: str | None = None) -> None:
        if path not in self.missing:
            self.missing.append(path)
        if note:
            self.notes.append(note)

    def number(
        self,
        path: str,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        positive: bool = False,
        record_missing: bool = True,
    ) -> float | None:
        """Read a finite number (bools rejected), optionally range-checked."""
        raw = lookup(self.case, path)
        if raw is None:
            if record_missing:
                self._miss(path)
            return None
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            self._miss(path, f"{path}={raw!r} is not a number")
            return None
        value = float(raw)
        if (
            (positive and value <= 0)
            or (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)
        ):
            self._miss(path, f"{path}={raw!r} is outside the plausible range")
            return None
        self.used[path] = raw
        return value

    def choice(
        self, path: str, allowed: Iterable[str], *, record_missing: bool = True
    ) -> str | None:
        """Read an enumerated string; matching is case-insensitive, result is the canonical form."""
        raw = lookup(self.case, path)
        if raw is None:
            if record_missing:
                self._miss(path)
            return None
        options = {a.lower(): a for a in allowed}
        if not isinstance(raw, str) or raw.strip().lower() not in options:
            self._miss(path, f"{path}={raw!r} is not one of {sorted(options.values())}")
            return None
        self.used[path] = raw
        return options[raw.strip().lower()]

    def boolean(self, path: str, *, record_missing: bool = True) -> bool | None:
        """Read a JSON boolean."""
        raw = lookup(self.case, path)
        if raw is None:
            if record_missing:
                self._miss(path)
            return None
        if not isinstance(raw, bool):
            self._miss(path, f"{path}={raw!r} is not true/false")
            return None
        self.used[path] = raw
        return raw

    def text(self, path: str, *, record_missing: bool = True) -> str | None:
        """Read a non-empty string."""
        raw = lookup(self.case, path)
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if record_missing:
                self._miss(path)
            return None
        if not isinstance(raw, str):
            self._miss(path, f"{path}={raw!r} is not text")
            return None
        self.used[path] = raw
        return raw.strip()

    def result(
        self, name: str, value: FactValue, source: str, detail: str | Iterable[str] = ""
    ) -> CalcResult:
        """Build the CalcResult; any missing input forces value to None (never partial output)."""
        parts = [detail] if isinstance(detail, str) else list(detail)
        parts = [p for p in [*parts, *self.notes] if p]
        if self.missing:
            value = None
        return CalcResult(
            name=name,
            value=value,
            inputs_used=dict(self.used),
            inputs_missing=list(self.missing),
            source=source,
            detail="; ".join(parts),
        )
