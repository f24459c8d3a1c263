"""The engine's database retriever: the whole panel in one call, with the same evidence each
member would get alone."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from consult.engine.context import ROLE_KINDS
from consult.engine.protocols import EvidenceRequest
from consult.retrieval import DbRetriever
from knowledge import selectors
from tests.fixtures.seed import load_seed
from tests.paths import PUBLIC_CASES

pytestmark = pytest.mark.slow

PANEL = ("diagnostic", "treatment", "safety", "monitoring")


def _requests(roles: tuple[str, ...]) -> list[EvidenceRequest]:
    return [
        EvidenceRequest(
            role, f"hepatocellular carcinoma {role} sorafenib child-pugh", ROLE_KINDS[role]
        )
        for role in roles
    ]


def _retrieve(retriever: DbRetriever, case: dict[str, Any], roles: tuple[str, ...]) -> Any:
    # As the engine calls it: from a worker thread, which closes its own connection.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(
            retriever.retrieve, cancer_type="hcc", case=case, requests=_requests(roles), k=8
        ).result()


@pytest.mark.django_db(transaction=True)
def test_the_panel_is_retrieved_in_one_call_with_each_members_own_evidence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_seed()
    case = json.loads((PUBLIC_CASES / "pub-hcc-02.json").read_text())
    provider = selectors.get_provider()
    batches: list[int] = []

    class Counting:
        name, dim = provider.name, provider.dim

        def embed(self, texts: Any) -> list[list[float]]:
            batches.append(len(texts))
            return provider.embed(texts)

    monkeypatch.setattr(selectors, "get_provider", lambda: Counting())
    retriever = DbRetriever()
    found = _retrieve(retriever, case, PANEL)
    # one embedding call for the four queries
    assert batches == [len(PANEL)]
    assert set(found) == set(PANEL)
    for role in PANEL:
        kinds = set(ROLE_KINDS[role])
        assert found[role].applicable, role
        assert {e.kind for e in found[role].applicable + found[role].hits} <= kinds
        assert all(e.applies is not False for e in found[role].applicable + found[role].hits)
        assert all(e.source and e.anchor and e.version.startswith("v") for e in found[role].hits)
    # every unit handed to the board is recorded as used by the consultation
    used = {e.version_id for r in found.values() for e in r.applicable + r.hits}
    assert retriever.used_version_ids == used
    # and batching changes nothing: each member alone gets the same evidence
    for role in PANEL:
        alone = _retrieve(DbRetriever(), case, (role,))[role]
        assert [e.unit_id for e in alone.applicable] == [e.unit_id for e in found[role].applicable]
        assert [(e.unit_id, e.score) for e in alone.hits] == [
            (e.unit_id, e.score) for e in found[role].hits
        ]


@pytest.mark.django_db(transaction=True)
def test_the_safety_gate_gets_every_rule_whether_it_applies_or_not() -> None:
    # given an intermediate HCC (no portal vein invasion: the TACE rules do not apply)
    load_seed()
    case = json.loads((PUBLIC_CASES / "pub-hcc-02.json").read_text())
    kinds = ("contraindication", "interaction", "organ_function_gate")
    gate = EvidenceRequest("safety_gate", "", kinds, everything=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        found = pool.submit(
            DbRetriever().retrieve, cancer_type="hcc", case=case, requests=[gate], k=8
        ).result()["safety_gate"]
    # then it gets the rules that do not apply too (to report them as checked and passed),
    # of the safety kinds and the case's cancer only, and no ranked search
    units = {e.unit_id: e for e in found.applicable}
    assert units["hcc.ci.tace-macrovascular-invasion"].applies is False
    assert {e.kind for e in found.applicable} <= set(kinds)
    assert {e.cancer_type for e in found.applicable} <= {"hcc", "any"}
    assert not [u for u in units if u.startswith(("lung.", "breast.", "lymph."))]
    assert found.hits == []


@pytest.mark.django_db(transaction=True)
def test_treatment_is_given_the_options_that_do_not_apply_with_their_reasons() -> None:
    # given a BCLC B case (pub-hcc-02: TACE) and the seed in the database
    load_seed()
    case = json.loads((PUBLIC_CASES / "pub-hcc-02.json").read_text())
    found = _retrieve(DbRetriever(), case, PANEL)
    # then Treatment sees the therapy steps of HCC that do not apply, each with why not
    considered = {e.unit_id: e for e in found["treatment"].considered}
    assert "hcc.tx.resection" in considered
    assert all(e.applies is False and e.failed for e in considered.values())
    assert all(e.kind == "therapy_step" and e.cancer_type == "hcc" for e in considered.values())
    assert ("derived.bclc", "eq", "A", "B", "all") in considered["hcc.tx.resection"].failed
    # and members who do not retrieve therapy steps get none
    assert found["safety"].considered == []
