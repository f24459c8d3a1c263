"""Where the retrieval diagnostics find patients' cases to check applicability against.

Dossiers belong to the consult app, and ``knowledge`` never imports ``consult``: the consult
app registers its dossiers here when Django starts (consult/apps.py). Without it the page
offers no case, as it does to a curator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Case:
    case_id: str
    cancer_type: str
    data: Mapping[str, Any]


class CaseSource(Protocol):
    def choices(self, *, user: Any) -> list[tuple[int, str]]:
        """The cases ``user`` may open, as (id, label); raises PermissionDenied if none."""
        ...

    def get(self, *, user: Any, pk: int) -> Case:
        """One case ``user`` may open; raises Http404 otherwise."""
        ...


_source: CaseSource | None = None


def case_source_register(source: CaseSource) -> None:
    global _source
    _source = source


def case_source() -> CaseSource | None:
    return _source
