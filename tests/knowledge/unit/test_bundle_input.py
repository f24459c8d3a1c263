"""``bundle_parse`` never raises: whatever a curator uploads, the answer is a list of errors
that says what is wrong, never a 500."""

from __future__ import annotations

import json
import time
import tracemalloc
from typing import Any

import pytest
import yaml

from knowledge.services import bundle_parse
from tests.knowledge.kb_factory import SOURCE, merge_bomb, unit


def _json(**document: Any) -> bytes:
    return json.dumps({"format": "mdtboard.kb/1", **document}).encode()


def _messages(raw: bytes, filename: str) -> list[str]:
    parsed, errors = bundle_parse(raw, filename=filename)
    refused = parsed is None  # never let a failure print the bundle: it may be an alias bomb
    assert refused
    assert errors
    return [f"{e.where}: {e.message}" for e in errors]


@pytest.mark.parametrize(
    ("raw", "filename", "message"),
    [
        (_json(sources=5, units=[]), "kb.json", '"sources" must be a list, not a number'),
        (_json(sources=[SOURCE], units=True), "kb.json", '"units" must be a list, not true/false'),
        (_json(sources="abc", units=[]), "kb.json", '"sources" must be a list, not text'),
        (_json(sources=[], units={"a": 1}), "kb.json", '"units" must be a list, not a mapping'),
        (
            b"format: mdtboard.kb/1\nsources: []\nunits: true\n",
            "kb.yaml",
            '"units" must be a list, not true/false',
        ),
        (
            b"format: mdtboard.kb/1\nsources: []\n---\nformat: mdtboard.kb/1\nsources: 7\n",
            "kb.yml",
            '"sources" must be a list, not a number (document 2)',
        ),
    ],
    ids=["sources-int", "units-bool", "sources-str", "units-dict", "yaml-units-bool", "doc-2"],
)
def test_sources_and_units_that_are_not_lists_are_reported(
    raw: bytes, filename: str, message: str
) -> None:
    assert any(message in m for m in _messages(raw, filename))


@pytest.mark.parametrize("filename", ["kb.json", "kb.yaml"])
def test_absurdly_deep_nesting_is_reported_not_a_recursion_error(filename: str) -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    assert any("nested too deeply" in m for m in _messages(raw, filename))
    objects = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    assert any(
        "nested too deeply" in m or "nested more than" in m for m in _messages(objects, filename)
    )


@pytest.mark.parametrize("filename", ["kb.json", "kb.yaml"])
def test_deep_nesting_inside_a_unit_is_reported(filename: str) -> None:
    value: Any = 1
    for _ in range(200):  # readable by the parser, far deeper than any bundle
        value = [value]
    condition = {"fact": "labs.afp", "op": "eq", "value": value}
    document = {
        "format": "mdtboard.kb/1",
        "sources": [SOURCE],
        "units": [unit("hcc.deep", context={"all": [condition]})],
    }
    raw = (
        json.dumps(document) if filename.endswith(".json") else yaml.safe_dump(document)
    ).encode()
    assert any("nested more than 32 levels deep" in m for m in _messages(raw, filename))


def test_a_yaml_alias_bomb_in_a_condition_is_refused_quickly() -> None:
    # given a condition value of a billion "x" through nested aliases: a few hundred bytes
    # that pydantic passes through (the value is Any) and hashing the content would expand
    placeholder = "ALIAS-BOMB"
    condition = {"fact": "labs.afp", "op": "eq", "value": placeholder}
    document = {
        "format": "mdtboard.kb/1",
        "sources": [SOURCE],
        "units": [unit("hcc.bomb", context={"all": [condition]})],
    }
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    raw = "\n".join(lines) + "\n" + yaml.safe_dump(document).replace(placeholder, "*a9")
    # when it is parsed, then it is refused, in seconds
    started = time.monotonic()
    messages = _messages(raw.encode(), "bomb.yaml")
    assert time.monotonic() - started < 30
    assert any("too large: more than 1,000,000 lists and mappings" in m for m in messages)


def test_yaml_aliases_that_expand_past_the_bundle_limit_are_refused() -> None:
    # given 100 KB of YAML: a condition value listing one 10,000-character text 5,000 times
    # through an alias (50 MB once expanded, which used to be stored as a unit version)
    placeholder = "ALIAS-LIST"
    condition = {"fact": "labs.afp", "op": "in", "value": placeholder}
    document = {
        "format": "mdtboard.kb/1",
        "sources": [SOURCE],
        "units": [unit("hcc.amplified", context={"all": [condition]})],
    }
    refs = ", ".join(["*big"] * 5_000)
    raw = f"big: &big {'x' * 10_000}\n" + yaml.safe_dump(document).replace(placeholder, f"[{refs}]")
    assert len(raw) < 100_000
    # when it is parsed
    started = time.monotonic()
    messages = _messages(raw.encode(), "amplified.yaml")
    # then it is refused as too large once expanded, without being expanded
    assert time.monotonic() - started < 5
    assert any(
        "Not a bundle: the YAML is too large: more than 20,971,520 characters of text" in m
        for m in messages
    )


def test_a_yaml_merge_key_bomb_is_refused_before_it_is_expanded() -> None:
    # given 21 levels of merges of merges: 2 million key copies once merged out, which used to
    # take seconds and hundreds of MiB inside the YAML parser itself
    raw = merge_bomb(21)
    assert len(raw) < 800
    # when it is parsed (memory traced: it must never be expanded)
    tracemalloc.start()
    try:
        messages = _messages(raw, "merge-bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # then it is refused, saying why, with a few MiB at most
    assert messages == [
        "merge-bomb.yaml: Not a bundle: the YAML is too large: its merge keys (<<) copy more "
        "than 100,000 keys (each use of a merge counts)."
    ]
    assert peak < 32 * 1024 * 1024


def test_yaml_merge_keys_in_a_real_bundle_still_work() -> None:
    # given two units whose shared fields come from one mapping through a merge key, one of
    # them overriding a merged field
    first, second = unit("hcc.merged-1"), unit("hcc.merged-2")
    shared = {"cancer_type": first["cancer_type"], "kind": first["kind"]}
    body = yaml.safe_dump({"format": "mdtboard.kb/1", "sources": [SOURCE]})
    body += "shared: &shared " + json.dumps(shared) + "\nunits:\n"
    for spec in (first, second):
        rest = {k: v for k, v in spec.items() if k not in shared}
        body += "- <<: *shared\n  " + yaml.safe_dump(rest).replace("\n", "\n  ").rstrip() + "\n"
    # when it is parsed
    parsed, errors = bundle_parse(body.encode(), filename="kb.yaml")
    # then both units carry the merged fields
    assert errors == []
    assert parsed is not None
    assert [(u.key, u.kind) for u in parsed.units] == [
        ("hcc.merged-1", first["kind"]),
        ("hcc.merged-2", second["kind"]),
    ]


def test_yaml_aliases_that_share_a_small_list_are_still_accepted() -> None:
    # given two units sharing one list through an alias, as the seed shares its list of
    # immune checkpoint inhibitors
    placeholder = "SHARED-LIST"
    condition = {"fact": "derived.bclc", "op": "in", "value": placeholder}
    document = {
        "format": "mdtboard.kb/1",
        "sources": [SOURCE],
        "units": [unit(f"hcc.shared-{n}", context={"all": [condition]}) for n in (1, 2)],
    }
    raw = "shared: &shared ['0', A]\n" + yaml.safe_dump(document).replace(placeholder, "*shared")
    # when it is parsed, then both units are read with the list
    parsed, errors = bundle_parse(raw.encode(), filename="kb.yaml")
    assert errors == []
    assert parsed is not None
    assert [u.context.all[0].value for u in parsed.units] == [["0", "A"], ["0", "A"]]


@pytest.mark.parametrize(
    ("raw", "filename"),
    [
        (b'{"all": [{"fact": "labs.afp", "op": "gt", "value": NaN}]}', "kb.json"),
        (b'{"all": [{"fact": "labs.afp", "op": "lt", "value": Infinity}]}', "kb.json"),
        (b'{"all": [{"fact": "labs.afp", "op": "eq", "value": {"x": [-Infinity]}}]}', "kb.json"),
        (b"{all: [{fact: labs.afp, op: ge, value: .nan}]}", "kb.yaml"),
        (b"{all: [{fact: labs.afp, op: in, value: [1, .inf]}]}", "kb.yaml"),
    ],
    ids=["json-nan", "json-infinity", "json-nested", "yaml-nan", "yaml-inf-in-list"],
)
def test_nan_and_infinity_in_a_condition_are_refused(raw: bytes, filename: str) -> None:
    context = yaml.safe_load(raw) if filename.endswith(".yaml") else json.loads(raw)
    document = {
        "format": "mdtboard.kb/1",
        "sources": [SOURCE],
        "units": [unit("hcc.nan", context=context)],
    }
    # serialised the way each format writes them: NaN, Infinity / .nan, .inf
    text = json.dumps(document) if filename.endswith(".json") else yaml.safe_dump(document)
    messages = _messages(text.encode(), filename)
    assert any(
        "units.0.context.all.0" in m and "must not contain NaN or infinity" in m for m in messages
    ), messages


def test_finite_numbers_in_conditions_still_parse() -> None:
    context = {"all": [{"fact": "labs.afp", "op": "gt", "value": 400.5}]}
    raw = _json(sources=[SOURCE], units=[unit("hcc.afp", context=context)])
    parsed, errors = bundle_parse(raw, filename="kb.json")
    assert not errors
    assert parsed is not None
    assert parsed.units[0].context.all[0].value == 400.5


def test_interchangeable_agents_must_be_agents_of_the_regimen() -> None:
    from pydantic import ValidationError

    from clinical.rules import TherapyAction

    base = {"modality": "systemic", "description": "R-ICE or R-GDP", "intent": "curative"}
    ok = TherapyAction(
        **base, agents=("carboplatin", "cisplatin"), interchangeable=(("carboplatin", "cisplatin"),)
    )
    assert ok.interchangeable == (("carboplatin", "cisplatin"),)
    with pytest.raises(ValidationError, match="not in agents: oxaliplatin"):
        TherapyAction(
            **base, agents=("cisplatin",), interchangeable=(("cisplatin", "oxaliplatin"),)
        )
    with pytest.raises(ValidationError, match="at least two"):
        TherapyAction(**base, agents=("cisplatin",), interchangeable=(("cisplatin",),))
