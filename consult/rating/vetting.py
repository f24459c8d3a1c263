"""Which ratings the board may learn from: vetted judgements only (issue 25).

A rating is vetted when it was not submitted too fast (under 30 s) or an administrator cleared
it, and its rater's agreement with the other raters of the study is measured and not poor.
Agreement is the ICC(2,1) of the rater's scores against the mean of the others' scores over
the plans they both rated, every dimension of both arms of each shared packet a target (Koo &
Li 2016: below 0.5 is poor). It needs at least ``MIN_SHARED_PACKETS`` packets rated by the
rater and another; until then the rating waits (a lone rater's judgement is not vetted)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean

from consult.rating.models import Rating, Study
from consult.rating.statistics import icc_2_1

MIN_SHARED_PACKETS = 2
POOR_AGREEMENT = 0.5


@dataclass(frozen=True)
class Agreement:
    rater_id: int
    icc: float | None  # None: not measurable yet
    packets: int  # packets rated by this rater and at least one other

    @property
    def poor(self) -> bool:
        return self.icc is not None and self.icc < POOR_AGREEMENT


@dataclass(frozen=True)
class Vetting:
    rating_id: int
    rater_id: int
    vetted: bool
    reason: str  # why not, in words ("" when vetted)


def _timely(rating: Rating) -> bool:
    return not rating.too_fast or hasattr(rating, "clearance")


def rater_agreement(
    scores: dict[int, dict[int, dict[tuple[str, str], int]]],
) -> dict[int, Agreement]:
    """``scores``: rater -> packet -> (position, dimension) -> score. Each rater's agreement
    with the mean of the others, over the packets they share."""
    out = {}
    for rater, packets in scores.items():
        pairs: list[list[float]] = []
        shared = 0
        for packet, mine in packets.items():
            others = [s[packet] for r, s in scores.items() if r != rater and packet in s]
            if not others:
                continue
            shared += 1
            for target, value in sorted(mine.items()):
                theirs = [o[target] for o in others if target in o]
                if theirs:
                    pairs.append([float(value), fmean(theirs)])
        icc = icc_2_1(pairs) if shared >= MIN_SHARED_PACKETS else None
        out[rater] = Agreement(rater, icc.icc if icc is not None else None, shared)
    return out


def study_vetting(*, study: Study) -> dict[int, Vetting]:
    """Every submitted rating of the study, vetted or not, with the reason."""
    ratings = list(
        Rating.objects.filter(assignment__study=study)
        .select_related("assignment", "clearance")
        .prefetch_related("scores")
    )
    scores: dict[int, dict[int, dict[tuple[str, str], int]]] = defaultdict(dict)
    for rating in ratings:
        if _timely(rating):
            scores[rating.assignment.rater_id][rating.assignment.packet_id] = {
                (s.position, s.dimension): s.value for s in rating.scores.all()
            }
    agreement = rater_agreement(scores)
    out = {}
    for rating in ratings:
        rater = rating.assignment.rater_id
        reason = ""
        if not _timely(rating):
            reason = (
                f"flagged for review: submitted in {rating.seconds:.0f} s, not yet cleared by "
                "an administrator"
            )
        elif agreement[rater].icc is None:
            reason = (
                "the rater's agreement with the other raters cannot be measured yet (fewer "
                f"than {MIN_SHARED_PACKETS} packets rated by another rater too)"
            )
        elif agreement[rater].poor:
            reason = (
                f"the rater's agreement with the other raters is poor (ICC "
                f"{agreement[rater].icc:.2f}, under {POOR_AGREEMENT})"
            )
        out[rating.pk] = Vetting(rating.pk, rater, not reason, reason)
    return out
