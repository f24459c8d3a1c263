"""Stratified permuted-block randomisation of a study's packets, rater assignment and each
rater's case order: a pure function of its inputs and one seed (no Django).

Within each stratum (cancer type by complexity) the cases are shuffled, then cut into blocks
whose size is drawn, block by block, from the study's set of even sizes; each block holds
as many packets with the system plan shown as "A" as with it shown as "B". The last block of
a stratum is cut short when the stratum runs out (its first cases keep their positions from
the full permuted block), so only complete blocks are exactly balanced. Raters go to packets
by least load so far, ties drawn at random; each rater's packets are then put in a random
order of their own.

The same inputs and seed always give the same allocation, so the stored seed reproduces it;
the drawn block sizes make the block boundaries unpredictable to anyone who sees a few
allocations (the "concealed block size").
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass

ALLOWED_BLOCK_SIZES = (2, 4, 6, 8)


class AllocationError(ValueError):
    pass


@dataclass(frozen=True)
class CaseInput:
    key: int  # the consultation's id
    cancer_type: str
    complexity: str

    @property
    def stratum(self) -> tuple[str, str]:
        return (self.cancer_type, self.complexity)


@dataclass(frozen=True)
class PacketAllocation:
    key: int
    cancer_type: str
    complexity: str
    sequence: int  # 1-based, over the whole study
    block: int  # 1-based, within the stratum
    block_size: int  # the size drawn for the block (the last block may hold fewer cases)
    system_position: str  # "A" or "B"


@dataclass(frozen=True)
class Allocation:
    packets: tuple[PacketAllocation, ...]
    # rater id -> the keys of that rater's packets, in the order the rater sees them
    orders: dict[int, tuple[int, ...]]

    def digest(self) -> str:
        """A hash of the whole allocation, stored with the study to check reproduction."""
        document = {
            "packets": [asdict(p) for p in self.packets],
            "orders": {str(r): list(keys) for r, keys in sorted(self.orders.items())},
        }
        return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()


def allocate(
    *,
    cases: Sequence[CaseInput],
    raters: Sequence[int],
    raters_per_packet: int,
    block_sizes: Sequence[int],
    seed: int,
) -> Allocation:
    """The allocation of ``cases`` to A/B positions and ``raters``, from ``seed``."""
    sizes = sorted(set(block_sizes))
    if not sizes or any(s not in ALLOWED_BLOCK_SIZES for s in sizes):
        raise AllocationError(
            f"Block sizes must be chosen from {', '.join(map(str, ALLOWED_BLOCK_SIZES))}."
        )
    if not cases:
        raise AllocationError("A study needs at least one case.")
    keys = [c.key for c in cases]
    if len(set(keys)) != len(keys):
        raise AllocationError("A case appears more than once.")
    rater_ids = sorted(set(raters))
    if not rater_ids:
        raise AllocationError("A study needs at least one rater.")
    if not 1 <= raters_per_packet <= len(rater_ids):
        raise AllocationError(
            f"Raters per packet must be between 1 and the number of raters ({len(rater_ids)})."
        )
    # Mersenne Twister, seeded: reproducibility is the point, not unpredictability to an
    # attacker (raters never see any output of it but their own case order).
    rng = random.Random(seed)  # noqa: S311
    ordered = sorted(cases, key=lambda c: (c.stratum, c.key))
    strata: dict[tuple[str, str], list[CaseInput]] = {}
    for case in ordered:
        strata.setdefault(case.stratum, []).append(case)

    packets: list[PacketAllocation] = []
    for stratum in sorted(strata):
        members = list(strata[stratum])
        rng.shuffle(members)
        block = 0
        while members:
            block += 1
            size = rng.choice(sizes)
            positions = ["A"] * (size // 2) + ["B"] * (size // 2)
            rng.shuffle(positions)
            chunk, members = members[:size], members[size:]
            for case, position in zip(chunk, positions, strict=False):
                packets.append(
                    PacketAllocation(
                        key=case.key,
                        cancer_type=case.cancer_type,
                        complexity=case.complexity,
                        sequence=len(packets) + 1,
                        block=block,
                        block_size=size,
                        system_position=position,
                    )
                )

    load = dict.fromkeys(rater_ids, 0)
    given: dict[int, list[int]] = {r: [] for r in rater_ids}
    for packet in packets:
        ties = {r: rng.random() for r in rater_ids}
        chosen = sorted(rater_ids, key=lambda r: (load[r], ties[r]))[:raters_per_packet]
        for rater in chosen:
            load[rater] += 1
            given[rater].append(packet.key)
    orders: dict[int, tuple[int, ...]] = {}
    for rater in rater_ids:
        mine = list(given[rater])
        rng.shuffle(mine)
        orders[rater] = tuple(mine)
    return Allocation(tuple(packets), orders)
