"""The demo study's comparators: independent human plans, and a blinding that holds on them."""

from __future__ import annotations

import json

import pytest
import yaml

from consult.casefile.validate import parse_case_bytes
from consult.evaluation import plan_offline
from consult.rating.blinding import packet_texts
from consult.rating.blinding_check import blinding_check
from consult.rating.management.commands.rating_demo import DEMO_COMPARATORS
from consult.rating.plan_format import validate_plan
from knowledge.bundle import bundle_from_documents
from tests.paths import REPO, public_case_files


def test_demo_comparators_cover_every_public_case_and_parse() -> None:
    # given the public cases and the shipped human plans
    cases = {path.stem for path in public_case_files()}
    written = {path.stem for path in DEMO_COMPARATORS.glob("*.json")}
    # then every case has its plan, and each is a valid mdtboard.plan/1 of one pathway
    assert cases <= written
    for path in sorted(DEMO_COMPARATORS.glob("*.json")):
        plan, errors = validate_plan(json.loads(path.read_bytes()))
        assert not errors, (path.name, errors)
        assert plan is not None
        roles = [c.get("role") for c in plan["recommendation"]["components"]]
        assert "primary" in roles, path.name


@pytest.mark.slow
def test_demo_study_blinding_check_cannot_tell_the_arms_apart() -> None:
    """Issue 25: a classifier on length and wording (leave-one-out logistic regression) must
    not tell the system's plans from the independent human plans better than chance: the 95%
    CI of its AUC includes 0.5, over the packets the demo study is made of."""
    # given the engine's plans for the public cases and the human plans written without them
    seed = sorted((REPO / "knowledge" / "seed").glob("*.yaml"))
    bundle = bundle_from_documents([yaml.safe_load(p.read_text()) for p in seed])
    documents = []
    for path in public_case_files():
        parsed = parse_case_bytes(path.read_bytes(), filename=path.name)
        assert parsed.data is not None, path.name
        human = json.loads((DEMO_COMPARATORS / f"{path.stem}.json").read_bytes())
        documents.append((plan_offline(parsed.data, bundle), human))
    # when both arms are rendered as raters read them and the check runs
    pairs = packet_texts(documents)
    check = blinding_check(
        [text for pair in pairs for text in pair],
        [flag for _ in pairs for flag in (True, False)],
        [index for index in range(len(pairs)) for _ in (0, 1)],
    )
    # then chance lies inside its interval
    assert check is not None
    assert check.consistent_with_blinding, check.line()
