"""Clinical rules that read structured facts, through the whole guideline engine over the seed
knowledge base: the gestational age decides what a pregnant patient is given, and the LVEF
band decides whether HER2-directed therapy is given, supervised or deferred."""

from __future__ import annotations

import json
from typing import Any

from clinical.rules import Bundle
from consult.evaluation import plan_offline
from tests.paths import PUBLIC_CASES


def _public(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLIC_CASES / name).read_text())
    data.pop("expected", None)
    return data


def _by_role(plan: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [c for c in plan["recommendation"]["components"] if c["role"] == role]


def _option(plan: dict[str, Any]) -> dict[str, Any]:
    """The recommended treatment option: the first primary step that is not an adjunct (steps
    that come before it, such as ovarian protection before chemotherapy, are adjuncts)."""
    return next(c for c in _by_role(plan, "primary") if not c["adjunct"])


def _text(value: Any) -> str:
    return json.dumps(value).casefold()


def pregnant_tnbc(weeks: int | None) -> dict[str, Any]:
    """Stage IIB triple-negative breast cancer (pub-breast-03) in a pregnant woman."""
    case = _public("pub-breast-03.json")
    case["patient"].update(pregnant=True, gestational_age_weeks=weeks)
    return case


def test_first_trimester_means_surgery_now_and_no_chemotherapy(bundle: Bundle) -> None:
    plan = plan_offline(pregnant_tnbc(10), bundle)
    primary = _by_role(plan, "primary")
    assert primary[0]["modality"] == "surgery"
    assert "from week 14" in primary[0]["description"]
    for drug in ("doxorubicin", "paclitaxel", "carboplatin", "pembrolizumab", "cyclophosphamide"):
        assert drug not in _text(plan["recommendation"]["components"]), drug
    gate = next(g for g in plan["safety"]["gates"] if g["unit"].endswith("first-trimester"))
    assert gate["status"] == "fail"


def test_from_week_14_anthracycline_chemotherapy_under_obstetric_monitoring(
    bundle: Bundle,
) -> None:
    plan = plan_offline(pregnant_tnbc(20), bundle)
    option = _option(plan)
    assert "doxorubicin" in option["description"]
    assert any("week 34-35" in c for c in option["conditions"])
    # checkpoint inhibitor and radiotherapy wait until after delivery
    assert "pembrolizumab" not in _text(plan["recommendation"]["components"])
    assert not any(c["modality"] == "radiotherapy" for c in _by_role(plan, "primary"))


def test_unknown_gestational_age_is_asked_for_never_assumed(bundle: Bundle) -> None:
    plan = plan_offline(pregnant_tnbc(None), bundle)
    unknown = [g for g in plan["safety"]["gates"] if g["status"] == "unknown"]
    assert any("patient.gestational_age_weeks" in g["needs_facts"] for g in unknown)
    assert any("patient.gestational_age_weeks" in n for n in plan["needs_data"])


def her2_with_lvef(lvef: int) -> dict[str, Any]:
    """Stage IIB HER2-positive breast cancer (pub-breast-01) with a reduced LVEF."""
    case = _public("pub-breast-01.json")
    case["organ_function"]["lvef_pct"] = lvef
    return case


def test_lvef_40_to_49_keeps_her2_therapy_under_cardio_oncology_supervision(
    bundle: Bundle,
) -> None:
    plan = plan_offline(her2_with_lvef(44), bundle)
    primary = _by_role(plan, "primary")
    her2 = next(c for c in primary if "trastuzumab" in c["agents"])
    assert any("cardio-oncology supervision" in c for c in her2["conditions"])
    assert any(
        c["modality"] == "referral" and "Cardio-oncology" in c["description"] for c in primary
    )
    assert "doxorubicin" not in _text(plan["recommendation"]["components"])


def test_lvef_below_40_defers_her2_therapy_everywhere(bundle: Bundle) -> None:
    plan = plan_offline(her2_with_lvef(35), bundle)
    components = plan["recommendation"]["components"]
    assert "trastuzumab" not in _text(components)
    assert "pertuzumab" not in _text(components)
    option = _option(plan)
    assert option["agents"] == ["paclitaxel"]
    assert "once the LVEF has recovered" in option["description"]
    assert any("LVEF <40%" in r["reason"] for r in plan["rejected_options"])
