"""Stratified block randomisation: reproducible from the seed, balanced, strata respected."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from consult.rating.complexity import case_complexity
from consult.rating.randomisation import (
    Allocation,
    AllocationError,
    CaseInput,
    PacketAllocation,
    allocate,
)

CANCERS = ("hcc", "lung_adenocarcinoma", "breast", "lymphoma")


def _cases(n: int = 41) -> list[CaseInput]:
    # uneven strata on purpose: 8 strata of different sizes, none a multiple of every block
    levels = ("standard", "complex")
    return [
        CaseInput(key=100 + i, cancer_type=CANCERS[i % 4], complexity=levels[i % 3 == 0])
        for i in range(n)
    ]


def _allocate(seed: int, **overrides: object) -> Allocation:
    arguments: dict[str, object] = {
        "cases": _cases(),
        "raters": [7, 3, 5],
        "raters_per_packet": 2,
        "block_sizes": (2, 4, 6),
        "seed": seed,
    }
    arguments.update(overrides)
    return allocate(**arguments)


def test_the_same_seed_reproduces_the_allocation_and_another_seed_does_not() -> None:
    first, again, other = _allocate(20261124), _allocate(20261124), _allocate(20261125)
    assert first == again
    assert first.digest() == again.digest()
    assert first.digest() != other.digest()
    # and the order the inputs arrive in does not matter
    shuffled = _allocate(20261124, cases=list(reversed(_cases())), raters=[5, 7, 3])
    assert shuffled.digest() == first.digest()


@pytest.mark.parametrize("seed", range(25))
def test_each_complete_block_is_balanced_across_a_and_b_and_stays_in_its_stratum(
    seed: int,
) -> None:
    allocation = _allocate(seed)
    blocks: dict[tuple[str, str, int], list[PacketAllocation]] = defaultdict(list)
    for packet in allocation.packets:
        blocks[(packet.cancer_type, packet.complexity, packet.block)].append(packet)
    strata_sizes = Counter((c.cancer_type, c.complexity) for c in _cases())
    sizes_seen = set()
    for (cancer, complexity, _), members in blocks.items():
        size = members[0].block_size
        sizes_seen.add(size)
        assert size in (2, 4, 6)
        positions = Counter(m.system_position for m in members)
        if len(members) == size:
            assert positions["A"] == positions["B"] == size // 2
        else:
            # only a stratum's last block may be cut short, and it never overshoots
            last = max(b for (c, x, b) in blocks if (c, x) == (cancer, complexity))
            assert members[0].block == last
            assert abs(positions["A"] - positions["B"]) <= size // 2
    # every case is allocated exactly once, in its own stratum
    allocated = Counter((p.cancer_type, p.complexity) for p in allocation.packets)
    assert allocated == strata_sizes
    assert sorted(p.key for p in allocation.packets) == sorted(c.key for c in _cases())


def test_block_sizes_vary_within_a_study() -> None:
    sizes = {p.block_size for p in _allocate(3).packets}
    assert len(sizes) > 1


def test_every_packet_gets_the_number_of_raters_asked_for_and_loads_are_even() -> None:
    allocation = _allocate(11)
    per_packet = Counter(k for keys in allocation.orders.values() for k in keys)
    assert set(per_packet.values()) == {2}
    loads = [len(keys) for keys in allocation.orders.values()]
    assert max(loads) - min(loads) <= 1


def test_case_order_is_randomised_per_rater() -> None:
    allocation = _allocate(5, raters_per_packet=3)
    orders = list(allocation.orders.values())
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert len({tuple(o) for o in orders}) == 3


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"block_sizes": (3,)}, "Block sizes"),
        ({"raters_per_packet": 4}, "Raters per packet"),
        ({"raters": []}, "at least one rater"),
        ({"cases": []}, "at least one case"),
    ],
)
def test_impossible_designs_are_refused(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(AllocationError, match=message):
        _allocate(1, **overrides)


def test_complexity_is_read_from_the_dossier_and_missing_data_never_counts() -> None:
    fit = {
        "cancer_type": "hcc",
        "patient": {"ecog": 0, "age_years": 60, "comorbidities": ["hepatitis B"]},
        "diagnosis": {"setting": "newly_diagnosed", "prior_therapies": []},
        "organ_function": {"lvef_pct": None},
    }
    assert case_complexity(fit) == ("standard", [])
    frail = {**fit, "patient": {"ecog": 2, "age_years": 81, "comorbidities": []}}
    level, reasons = case_complexity(frail)
    assert level == "complex"
    assert reasons == ["ECOG 2 or worse", "age 75 or older"]
    assert case_complexity({"cancer_type": "lymphoma"}) == ("standard", [])
