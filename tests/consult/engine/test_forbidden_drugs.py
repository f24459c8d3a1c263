"""Issue 11, "done when": no plan contains a drug a critical rule forbids, in either engine, even
when the LLM insists on it in every role - by brand name, class phrase, regimen acronym or in
the description of an item that lists no agents - and the plan still recommends the next safe
pathway the knowledge base offers. The LLM is the scripted OpenAI-compatible server over real
HTTP with the real client (tests/llm_stub.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clinical import lexicon
from clinical.plan import Plan
from consult.engine.aio import run_coroutine
from consult.engine.protocols import MemoryStore
from consult.engine.providers import LLMProvider
from consult.llm import Budget, LLMClient, LLMSettings
from tests.consult.engine.support import BundleRetriever, deliberation, load_case
from tests.consult.llm_responder import request_payload
from tests.llm_stub import StubLLM, StubReply, StubRequest
from tests.paths import PUBLIC_CASES, REPO

ICI = {"pembrolizumab", "nivolumab", "atezolizumab", "durvalumab", "cemiplimab", "ipilimumab"}
ICI_NAMES = ("keytruda", "opdivo", "tecentriq", "imfinzi", "pembrolizumab", "nivolumab")
HER2 = {"trastuzumab", "pertuzumab", "trastuzumab emtansine", "trastuzumab deruxtecan"}
HER2_NAMES = ("herceptin", "perjeta", "kadcyla", "enhertu", "trastuzumab", "pertuzumab")


def _item(description: str, *agents: str, role: str = "primary", **fields: Any) -> dict[str, Any]:
    return {
        "modality": "systemic",
        "description": description,
        "agents": list(agents),
        "role": role,
        **fields,
    }


CHECKPOINT_INHIBITOR_ITEMS = [
    _item("Keytruda 200 mg every 3 weeks", "Keytruda"),
    _item("PD-1 checkpoint inhibitor immunotherapy", role="alternative", rank=1),
    _item(
        "Opdivo plus Yervoy with two cycles of chemotherapy",
        "Opdivo",
        "Yervoy",
        role="alternative",
        rank=2,
        when="if the patient prefers",
    ),
]


@dataclass
class Hard:
    """A hard case: the base case, what makes it hard, what the LLM insists on, what no plan
    item may give, and the safe pathway the knowledge base offers."""

    case: str
    change: Callable[[dict[str, Any]], None]
    insists: list[dict[str, Any]]
    forbidden: set[str]
    names: tuple[str, ...]
    safe: tuple[str, ...]  # one of these drugs or words is in the recommended option
    folder: Path = PUBLIC_CASES  # where the base case lives


def _set(**paths: Any) -> Callable[[dict[str, Any]], None]:
    def change(case: dict[str, Any]) -> None:
        for path, value in paths.items():
            section, key = path.split("__")
            case.setdefault(section, {})[key] = value

    return change


HARD = {
    # Below 40 % neither is started (ESC 2022 cardio-oncology); at 40-49 % HER2 therapy may go
    # ahead under cardio-oncology supervision, anthracyclines still may not.
    "lvef-35-anthracycline-and-her2": Hard(
        case="pub-breast-01",
        change=_set(organ_function__lvef_pct=35),
        insists=[
            _item("Adriamycin-cyclophosphamide then Herceptin + Perjeta + docetaxel", "Herceptin"),
            _item("Dose-dense AC, then paclitaxel with dual HER2 blockade", role="alternative"),
            _item("Kadcyla", "Kadcyla", role="alternative", when="if residual disease"),
            _item("HER2-directed therapy with an anthracycline", role="alternative"),
        ],
        forbidden={"doxorubicin", "epirubicin", *HER2},
        names=("adriamycin", "doxorubicin", "epirubicin", *HER2_NAMES),
        safe=("paclitaxel", "docetaxel"),
    ),
    "active-colitis-on-high-dose-steroids": Hard(
        case="pub-lung-02",
        change=_set(
            organ_function__autoimmune_disease="ulcerative colitis, flare on prednisolone 40 mg",
            organ_function__autoimmune_activity="active",
            organ_function__immunosuppression="high_dose_steroids",
        ),
        insists=CHECKPOINT_INHIBITOR_ITEMS,
        forbidden=ICI,
        names=ICI_NAMES,
        safe=("carboplatin",),
    ),
    "kidney-transplant": Hard(
        case="pub-lung-02",
        change=_set(diagnosis__transplant_history="kidney"),
        insists=CHECKPOINT_INHIBITOR_ITEMS,
        forbidden=ICI,
        names=ICI_NAMES,
        safe=("carboplatin",),
    ),
    "pregnancy": Hard(
        case="pub-breast-01",
        change=_set(patient__pregnant=True),
        insists=[
            _item("Herceptin + Perjeta + docetaxel", "Herceptin", "Perjeta", "docetaxel"),
            _item("Methotrexate-based CMF", "methotrexate", role="alternative"),
            _item("Anti-PD-1 immunotherapy with chemotherapy", role="alternative"),
            _item("Enhertu", role="alternative", when="if HER2-low"),
        ],
        forbidden={"methotrexate", *HER2, *ICI},
        names=("methotrexate", "cmf", *HER2_NAMES, *ICI_NAMES),
        safe=("doxorubicin", "epirubicin", "paclitaxel", "surgery"),
    ),
    # A pregnant woman with advanced Hodgkin lymphoma: procarbazine (escalated BEACOPP),
    # brentuximab (BrECADD, A+AVD) and nivolumab (N-AVD) are not given in pregnancy; ABVD is.
    "pregnant-hodgkin": Hard(
        case="lymph-23",
        folder=REPO / "tests" / "cases",
        change=_set(),
        insists=[
            _item(
                "Escalated BEACOPP x6 with G-CSF",
                "procarbazine",
                "etoposide",
                "cyclophosphamide",
                "doxorubicin",
                "bleomycin",
                "vincristine",
            ),
            _item("BrECADD x6", role="alternative", rank=1, when="if fit"),
            _item("Opdivo with AVD", "Opdivo", role="alternative", rank=2, when="stage III-IV"),
        ],
        forbidden={"procarbazine", "brentuximab vedotin", "nivolumab"},
        names=("procarbazine", "beacopp", "brecadd", "opdivo", "nivolumab", "brentuximab"),
        safe=("dacarbazine", "vinblastine"),
    ),
    # Penicillin anaphylaxis: no amoxicillin in H. pylori eradication, by any name.
    "penicillin-allergy": Hard(
        case="lymph-24",
        folder=REPO / "tests" / "cases",
        change=_set(),
        insists=[
            _item("PPI-amoxicillin-clarithromycin triple therapy", "amoxicillin", "clarithromycin"),
            _item("Augmentin-based eradication", "Augmentin", role="alternative", rank=1),
        ],
        forbidden={"amoxicillin"},
        names=("amoxicillin", "augmentin"),
        safe=("bismuth",),
    ),
    "creatinine-clearance-25": Hard(
        case="pub-lung-02",
        change=_set(labs__creatinine_mg_dl=3.3),
        insists=[
            _item("Cisplatin-pemetrexed", "Platinol", "Alimta"),
            _item("Alimta maintenance", role="alternative"),
            _item("Pemetrexed with a platinum", role="alternative"),
        ],
        forbidden={"cisplatin", "pemetrexed"},
        names=("cisplatin", "platinol", "pemetrexed", "alimta"),
        safe=("pembrolizumab", "atezolizumab", "cemiplimab", "carboplatin"),
    ),
    # Issue 11 (clinB): a drug the disease progressed on, or that the patient did not
    # tolerate, is not offered again in the same setting, whatever the LLM proposes.
    "progressed-on-a-cdk46-inhibitor": Hard(
        case="pub-breast-02",
        change=_set(
            diagnosis__setting="progressive",
            diagnosis__prior_therapies=[
                {"line": 1, "regimen": "letrozole + palbociclib", "stop_reason": "progression"}
            ],
        ),
        insists=[
            _item("Ibrance with fulvestrant", "Ibrance", "fulvestrant"),
            _item("Switch to Kisqali with letrozole", "Kisqali", role="alternative", rank=1),
            _item("Verzenio 150 mg twice daily", role="alternative", rank=2),
        ],
        forbidden={"palbociclib", "ribociclib", "abemaciclib", "letrozole"},
        names=("ibrance", "kisqali", "verzenio", "palbociclib", "ribociclib", "abemaciclib"),
        safe=("everolimus", "fulvestrant", "elacestrant", "capivasertib", "paclitaxel"),
    ),
    "sorafenib-stopped-for-intolerance": Hard(
        case="pub-hcc-03",
        change=_set(
            diagnosis__setting="progressive",
            diagnosis__prior_therapies=[
                {
                    "line": 1,
                    "regimen": "sorafenib 400 mg twice daily, stopped after 6 weeks for "
                    "grade 3 hand-foot skin reaction",
                }
            ],
        ),
        insists=[
            _item("Nexavar again at a reduced dose", "Nexavar"),
            _item("Stivarga (regorafenib) 160 mg days 1-21", "Stivarga", role="alternative"),
        ],
        forbidden={"sorafenib", "regorafenib"},
        names=("nexavar", "sorafenib", "stivarga", "regorafenib"),
        safe=("cabozantinib", "ramucirumab", "lenvatinib"),
    ),
}


def _insisting_responder(insists: list[dict[str, Any]]) -> Callable[[StubRequest], StubReply]:
    """Every member proposes the forbidden items (citing whatever therapy units it was given),
    every review and vote agrees, and the Coordinator writes them into its draft."""

    def respond(request: StubRequest) -> StubReply:
        schema = str((request.json_schema or {}).get("title", ""))
        data = request_payload(request)
        cited = [
            e["unit_id"]
            for e in data.get("evidence", [])
            if e.get("applies") is True and (e.get("action") or {}).get("type") == "therapy"
        ]
        items = [{**item, "evidence": cited[:1]} for item in insists]
        if schema == "RoleReport":
            body: dict[str, Any] = {
                "conclusion": "Give it.",
                "claims": [],
                "intent": "curative",
                "components": items,
                "confidence": 0.99,
            }
        elif schema == "CrossReview":
            body = {"agree": True, "critique": "Looks right."}
        elif schema == "CrossReviews":
            review = {"agree": True, "critique": "Looks right."}
            body = {"reviews": dict.fromkeys(data.get("reports") or {}, review)}
        elif schema == "Synthesis":
            body = {
                "residual": {
                    "consistency": "all agree",
                    "conflict": "none",
                    "independence": "-",
                    "integration": "-",
                },
                "draft": {"summary": "As proposed.", "intent": "curative", "components": items},
                "confidence": 0.99,
            }
        else:
            body = {"agree": True, "advice": ""}
        return StubReply(content=json.dumps(body))

    return respond


def _run(case: dict[str, Any], stub: StubLLM, retriever: BundleRetriever) -> Plan:
    settings = LLMSettings(
        base_url=stub.base_url, api_key="sk-stub", model="stub-model", backoff_base_s=0.01
    )

    async def run() -> Plan:
        async with LLMClient(settings, Budget(tokens=10_000_000, cost_usd=100.0)) as client:
            return await deliberation(
                case, retriever=retriever, store=MemoryStore(), provider=LLMProvider(client)
            ).run()

    return run_coroutine(run)


def _gives(component: Any) -> set[str]:
    """What an item gives, read from its agents and its description alike."""
    return set(lexicon.given(component.agents, component.description).drugs)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HARD))
def test_llm_insisting_on_forbidden_drugs_in_every_role_never_gets_them_into_the_plan(
    name: str, retriever: BundleRetriever
) -> None:
    # given a hard case and an LLM that proposes the forbidden drugs in every role, by brand
    # names, class phrases, regimens and in descriptions with no agents listed
    hard = HARD[name]
    case, _ = load_case(hard.folder / f"{hard.case}.json")
    hard.change(case)
    with StubLLM(_insisting_responder(hard.insists)) as stub:
        plan = _run(case, stub, retriever)
    # then the plan is the LLM's ...
    assert plan.engine == "llm:stub-model"
    components = plan.recommendation.components
    # ... but no component of any role gives a forbidden drug, by any name
    for component in components:
        assert not _gives(component) & hard.forbidden, (component.role, component.description)
        listed = " ".join(component.agents).casefold()
        assert not [n for n in hard.names if n in listed], component.agents
    # and the plan still recommends the next safe pathway the knowledge base offers, saying so
    option = next(c for c in components if c.role == "primary" and not c.adjunct)
    words = json.dumps(option.model_dump()).casefold()
    assert any(term in words for term in hard.safe), option.description
    assert plan.rejected_options
    assert any("knowledge base" in c.resolution for c in plan.conflicts)


def test_llm_insisting_on_bevacizumab_with_untreated_varices_gets_a_safe_pathway_first(
    retriever: BundleRetriever,
) -> None:
    # given untreated large varices and an LLM that insists on atezolizumab with Avastin
    case, _ = load_case(PUBLIC_CASES / "pub-hcc-03.json")
    assert case["organ_function"]["varices"] == "large_untreated"
    insists = [
        _item("Tecentriq + Avastin (IMbrave150)", "Tecentriq", "Avastin"),
        _item("Anti-VEGF antibody with a checkpoint inhibitor", role="alternative"),
    ]
    with StubLLM(_insisting_responder(insists)) as stub:
        plan = _run(case, stub, retriever)
    components = plan.recommendation.components
    primary = [c for c in components if c.role == "primary"]
    # then no primary item gives bevacizumab: a safe option of the knowledge base leads
    assert primary
    assert all("bevacizumab" not in _gives(c) for c in primary)
    assert any({"durvalumab", "lenvatinib", "sorafenib"} & _gives(c) for c in primary)
    # and bevacizumab stays at most an alternative that says it waits for the varices
    for component in components:
        if "bevacizumab" in _gives(component):
            assert component.role == "alternative"
            assert "varice" in component.when.casefold()


@pytest.mark.parametrize("name", list(HARD))
def test_guideline_engine_plans_no_forbidden_drug_on_the_hard_cases(
    name: str, retriever: BundleRetriever
) -> None:
    # given the same hard cases, deliberated by the guideline engine
    hard = HARD[name]
    case, _ = load_case(hard.folder / f"{hard.case}.json")
    hard.change(case)
    plan = run_coroutine(lambda: deliberation(case, retriever=retriever).run())
    # then no component gives a forbidden drug, and a safe option leads
    for component in plan.recommendation.components:
        assert not _gives(component) & hard.forbidden, (component.role, component.description)
    option = next(
        c for c in plan.recommendation.components if c.role == "primary" and not c.adjunct
    )
    assert any(term in json.dumps(option.model_dump()).casefold() for term in hard.safe)
