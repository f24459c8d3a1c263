"""Reading a knowledge-base bundle (``mdtboard.kb/1``) from the JSON or YAML a curator uploads
or the seed ships as: documents bounded before they are parsed (nesting, size, YAML aliases and
merge keys), then merged and validated as one :class:`clinical.rules.Bundle`. The models
themselves (sources, units, conditions, actions) are the clinical core's, in clinical/rules.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from clinical.rules import FORMAT_ID, Bundle

# A bundle document is a few levels deep (document > units > unit > context > condition >
# value list); anything far deeper is not a bundle, and would exhaust the stack further on.
MAX_NESTING = 32
# Lists and mappings in one document, counting every repetition of a YAML alias: far above a
# 20 MiB bundle of real units, far below an alias bomb that expands to billions of nodes.
MAX_NODES = 1_000_000
# Characters of text in one document (keys and values; a number, true/false or null counts as
# one), counting every repetition of a YAML alias: a bundle written out in full cannot exceed
# its 20 MiB upload limit, and one that uses aliases may not expand beyond it either (100 KB
# of aliases once stored a 50 MB unit version).
MAX_EXPANDED_SIZE = 20 * 1024 * 1024
# Keys that YAML merge keys ("<<: *anchor") copy into mappings, in one file, counting every
# copy. A merge copies its source's keys (an alias does not: it shares the object), so nested
# merges of merges double at each level: 752 bytes of `a2: &a2 {<<: [*a1, *a1]}` lines once took
# 4 s and 203 MiB inside the YAML parser, before any check on the parsed value could run. A
# real bundle merges a handful of keys per unit.
MAX_MERGED_KEYS = 100_000


def _scalar_size(value: Any) -> int:
    return len(value) if isinstance(value, str) else 1


def nesting_error(value: Any, *, max_depth: int = MAX_NESTING) -> str | None:
    """Why a parsed JSON/YAML value is not worth validating (nested deeper than
    ``max_depth``, too many nodes, or too much text once YAML aliases are expanded), or None.

    Iterative, so it never exhausts the stack. A YAML alias is the same Python object as its
    anchor: each list or mapping is measured once and its measure reused wherever it recurs,
    so the check is linear in the document as written, whatever it expands to.
    """
    # id -> (height, lists and mappings, expanded size), for the containers measured so far
    measured: dict[int, tuple[int, int, int]] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        item, depth, children_done = stack.pop()
        if isinstance(item, Mapping):
            children: list[Any] = list(item.values())
            own_size = sum(_scalar_size(key) for key in item)
        elif isinstance(item, list | tuple):
            children = list(item)
            own_size = 0
        else:
            continue
        key = id(item)
        if not children_done:
            known = measured.get(key)
            if known is not None:
                if depth + known[0] - 1 > max_depth:
                    return f"nested more than {max_depth} levels deep"
                continue
            if depth > max_depth or key in on_path:  # an alias inside its own anchor
                return f"nested more than {max_depth} levels deep"
            on_path.add(key)
            stack.append((item, depth, True))
            stack.extend((child, depth + 1, False) for child in children)
            continue
        on_path.discard(key)
        height, nodes, size = 1, 1, own_size
        for child in children:
            child_measure = measured.get(id(child))
            if child_measure is None:
                size += _scalar_size(child)
                continue
            height = max(height, child_measure[0] + 1)
            nodes += child_measure[1]
            size += child_measure[2]
        if nodes > MAX_NODES:
            return (
                f"too large: more than {MAX_NODES:,} lists and mappings "
                "(YAML aliases count each time they are used)"
            )
        if size > MAX_EXPANDED_SIZE:
            return (
                f"too large: more than {MAX_EXPANDED_SIZE:,} characters of text "
                "(YAML aliases count each time they are used)"
            )
        measured[key] = (height, nodes, size)
    return None


class YamlTooLarge(yaml.YAMLError):
    """A YAML file whose merge keys copy more than MAX_MERGED_KEYS keys."""


class BoundedSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a file whose merge keys copy too many keys.

    The count is taken as each mapping's merges are resolved, so a merge bomb is refused after
    at most twice MAX_MERGED_KEYS copies, never expanded.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.merged_keys = 0

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        merges = sum(1 for key, _ in node.value if key.tag == "tag:yaml.org,2002:merge")
        own = len(node.value) - merges
        super().flatten_mapping(node)
        self.merged_keys += len(node.value) - own
        if self.merged_keys > MAX_MERGED_KEYS:
            raise YamlTooLarge(
                f"too large: its merge keys (<<) copy more than {MAX_MERGED_KEYS:,} keys "
                "(each use of a merge counts)"
            )


def yaml_load_all(text: str) -> list[Any]:
    """Every document of a YAML file, with merge keys bounded (BoundedSafeLoader); aliases
    stay shared objects, for nesting_error to measure."""
    loader = BoundedSafeLoader(text)
    try:
        documents = []
        while loader.check_data():  # type: ignore[no-untyped-call]
            documents.append(loader.get_data())
        return documents
    finally:
        loader.dispose()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def bundle_from_documents(documents: list[dict[str, Any]]) -> Bundle:
    """Merge several bundle documents (e.g. one file per cancer type) and validate the result
    as one bundle, so units may cite sources defined in another file."""
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, dict) or document.get("format") != FORMAT_ID:
            raise ValueError(f'every bundle document needs "format": "{FORMAT_ID}"')
        for name in ("sources", "units"):
            if document.get(name) is not None and not isinstance(document[name], list):
                raise ValueError(
                    f'"{name}" must be a list, not {_json_type(document[name])} (document {number})'
                )
    return Bundle.model_validate(
        {
            "format": FORMAT_ID,
            "sources": [s for d in documents for s in d.get("sources") or []],
            "units": [u for d in documents for u in d.get("units") or []],
        }
    )
