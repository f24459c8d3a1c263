"""The picture of the layers in docs/architecture.md is the one `lint-imports` checks: its boxes
are the layers of the project's contract, in the same order, and the rows of the clinical core
are the core's own layers, part for part."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from tests.paths import REPO

# "│ consult/   patients, ..." opens a box of the picture.
_BOX = re.compile(r"^\s*│ ([a-z_]+)/\s")
# "│   calculators/  |  rules        derived facts ...": a row of the core, its parts before
# the words that say what they hold.
_ROW = re.compile(r"^\s*│ {3}((?:[a-z_]+/?\s*\|\s*)*[a-z_]+/?)(?:\s|$)")


def _picture() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)```", text, re.S)
    assert block is not None, "docs/architecture.md has no picture of the layers"
    return block.group(1).splitlines()


def _contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def _layers(*, container: str | None) -> list[set[str]]:
    """The layers of the `layers` contract of ``container`` (None: the project's), top first,
    each as the set of its independent parts."""
    for contract in _contracts():
        if contract["type"] == "layers" and (contract.get("containers") or [None]) == [container]:
            return [{p.strip() for p in layer.split("|")} for layer in contract["layers"]]
    raise AssertionError(f"no layers contract for {container or 'the project'}")


def boxes(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := _BOX.match(line))]


def core_rows(lines: list[str]) -> list[set[str]]:
    """The rows drawn inside the clinical core's box, top first."""
    start = next(n for n, line in enumerate(lines) if _BOX.match(line) and "clinical/" in line)
    rows = []
    for line in lines[start + 1 :]:
        if "Each row imports" in line or line.strip().startswith("└"):
            break
        match = _ROW.match(line)
        if match:
            rows.append({p.strip().rstrip("/") for p in match.group(1).split("|")})
    return rows


def test_the_pictures_boxes_are_the_projects_layers_in_order() -> None:
    assert [{b} for b in boxes(_picture())] == _layers(container=None)


def test_the_rows_of_the_core_are_its_layers_part_for_part() -> None:
    assert core_rows(_picture()) == _layers(container="clinical")


def test_a_picture_that_left_a_layer_out_would_be_caught() -> None:
    # given the picture without its row of calculators and rules
    lines = [line for line in _picture() if "calculators/" not in line]
    # then it no longer matches the contract
    assert core_rows(lines) != _layers(container="clinical")
    # nor would boxes drawn in another order
    assert [{b} for b in reversed(boxes(_picture()))] != _layers(container=None)
