"""The index lesion may be a distant recurrence or metastasis, outside the organ of origin.

Intake refused such cases: the HCC liver-burden checks (number of liver nodules = number of
index lesions; index lesion no larger than the largest liver nodule) assumed the index lesion
is always a liver nodule. They must still catch a miscounted or mismeasured liver lesion.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from consult.casefile.validate import case_warnings, validate_case
from tests.paths import PUBLIC_CASES

TODAY = date(2026, 6, 1)


def _public(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PUBLIC_CASES / name).read_text(encoding="utf-8"))
    data.pop("expected", None)
    return data


def _errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e.path, e.message) for e in validate_case(data, filename="x", today=TODAY)]


def hcc_adrenal_recurrence() -> dict[str, Any]:
    """HCC resected two years ago; now a solitary right adrenal metastasis, liver clear."""
    data = _public("pub-hcc-01.json")
    data["case_id"] = "hcc-adrenal-recurrence"
    data["question"] = "Adrenalectomy, SBRT or systemic therapy for an isolated adrenal recurrence?"
    data["diagnosis"].update(
        setting="recurrent",
        prior_therapies=[
            {
                "line": 1,
                "regimen": "laparoscopic resection of segment VI",
                "end_date": "2024-03-12",
                "best_response": "CR",
                "months_to_relapse": 22,
            }
        ],
    )
    data["index_lesion"].update(
        site="right adrenal gland",
        size_mm=34,
        count=1,
        description="solitary 34 mm enhancing right adrenal mass; no intrahepatic recurrence",
    )
    data["staging"].update(
        t=None,
        n="N0",
        m="M1",
        tnm_edition=8,
        nodules_count=0,
        largest_nodule_mm=None,
        extrahepatic_spread=True,
    )
    return data


def test_hcc_with_an_adrenal_recurrence_and_no_liver_lesion_is_accepted() -> None:
    assert _errors(hcc_adrenal_recurrence()) == []


def test_hcc_lung_metastasis_larger_than_the_remaining_liver_nodule_is_accepted() -> None:
    # given a progressing HCC whose index lesion is a 26 mm lung metastasis, with one 12 mm
    # nodule still in the liver
    data = hcc_adrenal_recurrence()
    data["diagnosis"]["setting"] = "progressive"
    data["index_lesion"].update(site="left lower lobe of the lung", size_mm=26, count=2)
    data["staging"].update(nodules_count=1, largest_nodule_mm=12)
    assert _errors(data) == []


def test_hcc_distant_index_lesion_counts_with_extrahepatic_spread_alone() -> None:
    # TNM not given (as in many HCC reports): extrahepatic spread = true is enough
    data = hcc_adrenal_recurrence()
    data["diagnosis"]["setting"] = "newly_diagnosed"
    data["diagnosis"]["prior_therapies"] = []
    data["index_lesion"]["site"] = "T11 vertebral body"
    data["staging"].update(n=None, m=None, tnm_edition=None)
    assert _errors(data) == []


@pytest.mark.parametrize(
    "site",
    ["liver segment VIII", "segment VII", "right lobe", "caudate lobe", "hepatic dome"],
)
def test_a_liver_index_lesion_is_still_checked_against_the_liver_nodules(site: str) -> None:
    # even when the disease has spread, an index lesion in the liver must match the burden
    data = hcc_adrenal_recurrence()
    data["index_lesion"].update(site=site, size_mm=45, count=4)
    data["staging"].update(nodules_count=2, largest_nodule_mm=30)
    paths = [path for path, _ in _errors(data)]
    assert paths == ["$.staging.nodules_count", "$.staging.largest_nodule_mm"]


def test_a_node_at_the_liver_hilum_is_not_a_liver_lesion() -> None:
    data = hcc_adrenal_recurrence()
    data["index_lesion"]["site"] = "hepatic hilar lymph node"
    data["staging"].update(n="N1", m="M0", nodules_count=1, largest_nodule_mm=15)
    data["index_lesion"]["size_mm"] = 22
    assert _errors(data) == []


def test_a_portal_vein_thrombus_as_index_lesion_is_not_compared_with_the_nodules() -> None:
    data = _public("pub-hcc-03.json")
    data["index_lesion"].update(site="right portal vein (tumour thrombus)", size_mm=70, count=1)
    data["staging"].update(macrovascular_invasion=True, nodules_count=2, largest_nodule_mm=60)
    assert _errors(data) == []
    # without macrovascular invasion recorded, the message says what to record
    data["staging"]["macrovascular_invasion"] = None
    messages = [message for _, message in _errors(data)]
    assert len(messages) == 2
    assert all("macrovascular invasion for a tumour thrombus" in m for m in messages)


def test_extrahepatic_site_without_any_recorded_spread_is_still_an_error_with_advice() -> None:
    # a newly diagnosed HCC with no extrahepatic disease recorded: the index lesion is taken
    # to be in the liver, and the message says how to record a lesion outside it
    data = hcc_adrenal_recurrence()
    data["diagnosis"].update(setting="newly_diagnosed", prior_therapies=[])
    data["staging"].update(n=None, m=None, tnm_edition=None, extrahepatic_spread=None)
    [(path, message)] = _errors(data)
    assert path == "$.staging.nodules_count"
    assert "(0) differs" in message
    assert "is not a liver nodule" in message
    assert "extrahepatic spread" in message


def test_extrahepatic_spread_false_keeps_the_index_lesion_in_the_liver() -> None:
    data = hcc_adrenal_recurrence()
    data["staging"].update(n=None, m=None, tnm_edition=None, extrahepatic_spread=False)
    assert [path for path, _ in _errors(data)] == ["$.staging.nodules_count"]


def test_original_fixture_mismatches_are_still_errors() -> None:
    data = _public("pub-hcc-02.json")
    data["staging"]["nodules_count"] = 2
    assert [p for p, _ in _errors(data)] == ["$.staging.nodules_count"]
    data = _public("pub-hcc-02.json")
    data["staging"]["largest_nodule_mm"] = 30
    assert [p for p, _ in _errors(data)] == ["$.staging.largest_nodule_mm"]


# --------------------------------------------------------------------------- other cancers


def breast_liver_recurrence() -> dict[str, Any]:
    """HR+/HER2- breast cancer treated 2021; now one of three liver metastases is the question."""
    data = _public("pub-breast-01.json")
    data["case_id"] = "breast-liver-recurrence"
    data["question"] = "Ablation of the dominant liver metastasis with endocrine therapy?"
    data["diagnosis"]["setting"] = "recurrent"
    data["index_lesion"].update(
        site="liver segment IVa",
        size_mm=24,
        count=1,
        laterality=None,
        description="dominant of three liver metastases, largest 24 mm",
    )
    data["staging"].update(m="M1")
    return data


def test_breast_cancer_with_a_liver_index_lesion_is_accepted() -> None:
    assert _errors(breast_liver_recurrence()) == []


def test_breast_liver_burden_recorded_is_only_a_warning() -> None:
    # liver-nodule fields are HCC staging inputs; for breast cancer they are not cross-checked
    data = breast_liver_recurrence()
    data["staging"].update(nodules_count=3, largest_nodule_mm=30)
    assert _errors(data) == []
    warned = {w.path for w in case_warnings(data, filename="x", today=TODAY)}
    assert {"$.staging.nodules_count", "$.staging.largest_nodule_mm"} <= warned


def test_breast_cancer_with_a_brain_index_lesion_is_accepted() -> None:
    data = breast_liver_recurrence()
    data["diagnosis"]["setting"] = "progressive"
    data["index_lesion"].update(site="right frontal lobe (brain)", size_mm=18, laterality="right")
    data["staging"]["brain_metastases_count"] = 1
    assert _errors(data) == []


@pytest.mark.parametrize(
    ("site", "brain"), [("left adrenal gland", 0), ("left cerebellar hemisphere", 1)]
)
def test_lung_cancer_with_a_distant_index_lesion_is_accepted(site: str, brain: int) -> None:
    data = _public("pub-lung-02.json")
    data["index_lesion"].update(site=site, size_mm=21, count=1)
    data["staging"].update(m="M1b" if brain == 0 else "M1c", brain_metastases_count=brain)
    assert _errors(data) == []


def test_recurrence_coded_m0_with_brain_metastases_asks_for_the_current_m() -> None:
    # the stage at first diagnosis is a common slip in a recurrence: the message says so
    data = breast_liver_recurrence()
    data["index_lesion"]["site"] = "left parietal lobe (brain)"
    data["staging"].update(m="M0", brain_metastases_count=1)
    [(path, message)] = _errors(data)
    assert path == "$.staging.brain_metastases_count"
    assert "current M category" in message
