"""Which ratings the board may learn from: vetted judgements only (issue 25).

A rating is vetted when it was not submitted too fast (under 30 s) or an administrator cleared
it, and its rater agrees with the other raters of the study. A rater's agreement with another
is the ICC(2,1) of their scores over the plans both rated (every dimension of both arms of each
shared packet a target), measured once they share ``MIN_SHARED_PACKETS`` packets; a rater's
agreement is the best of these (one rater far from everyone drags down the mean of the others,
but not the agreement of the two who agree). Under 0.5 is poor (Koo & Li 2016). Until it can
be measured the rating waits: a lone rater's judgement is not vetted."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

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


def _pairwise(
    mine: dict[int, dict[tuple[str, str], int]], theirs: dict[int, dict[tuple[str, str], int]]
) -> float | None:
    shared = [p for p in mine if p in theirs]
    if len(shared) < MIN_SHARED_PACKETS:
        return None
    rows = [
        [float(mine[p][t]), float(theirs[p][t])]
        for p in shared
        for t in sorted(mine[p])
        if t in theirs[p]
    ]
    icc = icc_2_1(rows)
    return icc.icc if icc is not None else None


def rater_agreement(
    scores: dict[int, dict[int, dict[tuple[str, str], int]]],
) -> dict[int, Agreement]:
    """``scores``: rater -> packet -> (position, dimension) -> score. Each rater's best
    agreement with another rater over the packets they share."""
    out = {}
    for rater, mine in scores.items():
        measured = [
            value
            for other, theirs in scores.items()
            if other != rater and (value := _pairwise(mine, theirs)) is not None
        ]
        shared = max(
            (sum(1 for p in mine if p in theirs) for o, theirs in scores.items() if o != rater),
            default=0,
        )
        out[rater] = Agreement(rater, max(measured) if measured else None, shared)
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
