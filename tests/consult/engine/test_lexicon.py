"""Drug recognition for the safety gate, the consensus and the grounding check: brand names,
regimens and class phrases count as giving the drug; negated and contrastive mentions do not."""

from __future__ import annotations

from typing import Any

import pytest

from clinical import lexicon
from clinical.rules import SafetyAction
from consult.engine.grounding import supports
from consult.engine.matching import agents_overlap, drug_key, substitution, targets
from consult.engine.schemas import ProposedComponent
from tests.consult.engine.support import evidence_unit

ICI_RULE = [
    "pembrolizumab",
    "nivolumab",
    "atezolizumab",
    "durvalumab",
    "ipilimumab",
    "anti-PD-1",
    "anti-PD-L1",
]
ANTHRACYCLINES = ["doxorubicin", "epirubicin", "daunorubicin", "idarubicin", "mitoxantrone"]


def _item(description: str, *agents: str, **fields: Any) -> ProposedComponent:
    fields.setdefault("modality", "systemic")
    return ProposedComponent(description=description, agents=list(agents), **fields)


@pytest.mark.parametrize(
    ("agents", "description", "drug"),
    [
        (["Keytruda"], "Keytruda 200 mg every 3 weeks", "pembrolizumab"),
        ([], "Herceptin + Perjeta + docetaxel", "trastuzumab"),
        ([], "Herceptin + Perjeta + docetaxel", "pertuzumab"),
        (["Kadcyla"], "T-DM1 for residual disease", "trastuzumab emtansine"),
        (["Enhertu"], "", "trastuzumab deruxtecan"),
        ([], "Adriamycin-cyclophosphamide", "doxorubicin"),
        ([], "Avastin with Tecentriq", "bevacizumab"),
        ([], "R-CHOP-21 x6", "doxorubicin"),
        ([], "R-CHOP-21 x6", "vincristine"),
        ([], "Dose-dense AC followed by weekly paclitaxel", "doxorubicin"),
        ([], "TCHP x6 then surgery", "carboplatin"),
        ([], "Nivolumab-ipilimumab with chemotherapy (CheckMate 9LA)", "pemetrexed"),
        ([], "Docetaxel with or without nintedanib", "nintedanib"),
        (["nab-paclitaxel"], "", "paclitaxel"),  # a rule on paclitaxel concerns it
        (["HD-MTX"], "", "methotrexate"),
    ],
)
def test_lexicon_recognises_brand_regimen_and_combined_names(
    agents: list[str], description: str, drug: str
) -> None:
    assert drug in lexicon.given(agents, description).drugs


@pytest.mark.parametrize(
    ("description", "drug"),
    [
        ("PD-1 checkpoint inhibitor immunotherapy", "pembrolizumab"),
        ("Checkpoint inhibitor", "atezolizumab"),
        ("Immunotherapy", "nivolumab"),
        ("An anthracycline-based regimen", "epirubicin"),
        ("Platinum doublet", "cisplatin"),
        ("Dual HER2 blockade", "pertuzumab"),
        ("Anti-VEGF antibody", "bevacizumab"),
    ],
)
def test_a_class_phrase_with_no_member_named_stands_for_every_member(
    description: str, drug: str
) -> None:
    assert lexicon.given([], description).gives(drug)


@pytest.mark.parametrize(
    ("description", "drug"),
    [
        ("R-CEOP (etoposide in place of doxorubicin)", "doxorubicin"),
        ("Anthracycline-free docetaxel-carboplatin", "doxorubicin"),
        ("Atezolizumab without bevacizumab", "bevacizumab"),
        ("Carboplatin-paclitaxel, no anthracycline", "epirubicin"),
        ("Carboplatin-pemetrexed instead of pembrolizumab", "pembrolizumab"),
        ("Avoid checkpoint inhibitors; carboplatin-paclitaxel", "pembrolizumab"),
        ("Docetaxel after progression on pembrolizumab", "pembrolizumab"),
        ("R-CHOP without vincristine", "vincristine"),
        ("Cisplatin-ineligible: carboplatin-gemcitabine", "cisplatin"),
        ("Trastuzumab deferred until after delivery", "trastuzumab"),
        ("Weekly paclitaxel now; HER2-directed antibodies added once LVEF >=50%", "trastuzumab"),
        ("Carboplatin-pemetrexed for PD-L1-negative disease", "atezolizumab"),
    ],
)
def test_a_negated_or_contrastive_mention_does_not_give_the_drug(
    description: str, drug: str
) -> None:
    assert not lexicon.given([], description).gives(drug)


def test_a_list_after_a_comma_is_given_even_after_a_negation() -> None:
    # "no anthracycline" does not reach over the comma: the HER2 drugs after it are given
    found = lexicon.given([], "no anthracycline, trastuzumab + pertuzumab + docetaxel")
    assert {"trastuzumab", "pertuzumab", "docetaxel"} <= found.drugs
    assert "doxorubicin" not in found.drugs


def test_care_that_goes_alongside_counts_only_its_listed_agents() -> None:
    prophylaxis = _item(
        "Entecavir from before the first anti-CD20 antibody until 18 months after",
        "entecavir",
        modality="antiviral",
    )
    assert agents_overlap(["rituximab", "obinutuzumab"], prophylaxis) == []


def test_a_checkpoint_inhibitor_rule_targets_brand_and_description_only_items() -> None:
    assert agents_overlap(ICI_RULE, _item("Keytruda 200 mg", "Keytruda")) == [
        "pembrolizumab",
        "anti-PD-1",
    ]
    assert "pembrolizumab" in agents_overlap(
        ICI_RULE, _item("PD-1 checkpoint inhibitor immunotherapy")
    )
    # and rituximab, an immunotherapy that is no checkpoint inhibitor, is not targeted
    assert agents_overlap(ICI_RULE, _item("Rituximab immunotherapy", "rituximab")) == []


def _rule(**action: Any) -> SafetyAction:
    return SafetyAction.model_validate(
        {"gate": "g", "severity": "major", "effect": "remove", "advice": "Do not give.", **action}
    )


def test_an_anthracycline_rule_spares_the_regimen_that_replaces_it() -> None:
    cardiac = _item(
        "R-CEOP-21 (etoposide in place of doxorubicin)",
        "rituximab",
        "cyclophosphamide",
        "etoposide",
        "vincristine",
    )
    assert targets(_rule(agents=ANTHRACYCLINES), cardiac) == []
    assert targets(_rule(agents=ANTHRACYCLINES), _item("R-CHOP")) == ["doxorubicin"]


def test_a_rule_on_systemic_therapy_concerns_the_drugs_of_chemoradiation() -> None:
    chemoradiation = _item(
        "60 Gy with weekly carboplatin-paclitaxel", "carboplatin", modality="radiotherapy"
    )
    assert targets(_rule(modalities=["systemic"]), chemoradiation) == ["systemic"]
    surgery = _item("Lobectomy", modality="surgery")
    assert targets(_rule(modalities=["systemic"]), surgery) == []


def test_a_phrase_the_lexicon_does_not_know_is_matched_by_its_words_unless_negated() -> None:
    assert agents_overlap(["full dose"], _item("R-CHOP-21 x6, full dose")) == ["full dose"]
    assert agents_overlap(["full dose"], _item("R-mini-CHOP, not at full dose")) == []


def test_brand_and_generic_wordings_are_one_plan_item() -> None:
    assert drug_key(_item("Keytruda", "Keytruda")) == drug_key(
        _item("Pembrolizumab", "pembrolizumab")
    )


def test_an_omitted_agent_leaves_the_regimen_in_place_without_it() -> None:
    rchop = _item(
        "R-CHOP", "rituximab", "cyclophosphamide", "doxorubicin", "vincristine", "prednisone"
    )
    omit = _rule(agents=["vincristine"], severity="critical", omit=True)
    assert substitution(rchop, ["vincristine"], omit) == ["vincristine"]
    # without omit and without a partner the whole regimen goes
    assert substitution(rchop, ["vincristine"]) is None


# --- grounding ----------------------------------------------------------------------------------


def _therapy(unit_id: str, applies: bool = True, **action: Any) -> Any:
    return evidence_unit(
        unit_id,
        kind="therapy_step",
        content={"action": {"type": "therapy", "intent": "palliative", **action}},
        applies=applies,
    )


PEMBROLIZUMAB_UNIT = _therapy(
    "lung.tx.pembro", modality="systemic", description="Pembrolizumab", agents=["pembrolizumab"]
)
RESECTION_UNIT = _therapy("hcc.tx.resection", modality="surgery", description="Resection")


def test_supports_accepts_a_unit_that_gives_the_items_drug_by_any_name() -> None:
    assert supports(PEMBROLIZUMAB_UNIT, _item("Keytruda", "Keytruda"))
    assert supports(PEMBROLIZUMAB_UNIT, _item("PD-1 checkpoint inhibitor immunotherapy"))
    assert supports(RESECTION_UNIT, _item("Segmentectomy VI", modality="surgery"))


def test_supports_rejects_a_citation_whose_unit_does_not_apply_to_the_item() -> None:
    # a unit about another drug
    assert not supports(PEMBROLIZUMAB_UNIT, _item("Osimertinib 80 mg", "osimertinib"))
    # a procedure unit for a drug, and a unit about another procedure
    assert not supports(RESECTION_UNIT, _item("Sorafenib", "sorafenib"))
    assert not supports(RESECTION_UNIT, _item("TACE", modality="locoregional"))
    # a unit whose context does not hold for the patient
    not_for_this_patient = _therapy(
        "lung.tx.other", applies=False, modality="systemic", agents=["pembrolizumab"]
    )
    assert not supports(not_for_this_patient, _item("Pembrolizumab", "pembrolizumab"))
    # a contraindication is no evidence for giving the drug
    rule = evidence_unit(
        "x.ci", kind="contraindication", content={"action": {"type": "safety"}}, applies=True
    )
    assert not supports(rule, _item("Pembrolizumab", "pembrolizumab"))
