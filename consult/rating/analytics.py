"""A study's figures, as EvoMDT's Fig. 4 reports them, for the administrator: unblinded here
and nowhere else. Reads the ratings, then calls the pure functions of ``statistics``.

Families of tests adjusted together by Benjamini–Hochberg: system vs comparator per
dimension and composite (Mann–Whitney); across cancer types per arm and measure
(Kruskal–Wallis); the pairs of dimensions (Spearman); plan response times (Mann–Whitney).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from clinical.vocab import CANCER_TYPE_LABELS
from consult.rating import charts
from consult.rating.blinding import IDENTICAL, packet_texts, pair_similarity
from consult.rating.blinding_check import BlindingCheck, blinding_check
from consult.rating.models import Assignment, LLMRating, Packet, Rating, Study
from consult.rating.rubric import DIMENSION_KEYS, DIMENSION_LABELS, HIGH_SCORE
from consult.rating.statistics import (
    ICC,
    BlindingIndex,
    Correlation,
    KruskalWallis,
    MannWhitney,
    MeanCI,
    MedianIQR,
    Proportion,
    bang_index,
    bh_qvalues,
    icc_2_1,
    kruskal_wallis,
    mann_whitney,
    mean_ci,
    median_iqr,
    proportion_ci,
    rate_at_least,
    spearman_matrix,
)
from mdtboard.accounts.models import User

ARMS = ("system", "comparator")
COMPOSITE = "composite"
CANCER_LABELS: dict[str, str] = {str(c): label for c, label in CANCER_TYPE_LABELS.items()}


@dataclass
class Record:
    """One submitted rating, unblinded: its scores by arm."""

    rating_id: int
    rater_id: int
    packet_id: int
    cancer_type: str
    seconds: float
    too_fast: bool
    preference: str  # "system" | "comparator" | "none"
    guess: str  # "correct" | "incorrect" | "unsure"
    guess_position: str
    system_position: str
    scores: dict[str, dict[str, int]] = field(default_factory=dict)  # arm -> dimension -> 1..5

    def composite(self, arm: str) -> float:
        return fmean(self.scores[arm][d] for d in DIMENSION_KEYS)


def _arm(position: str, system_position: str) -> str:
    return "system" if position == system_position else "comparator"


def study_records(*, study: Study) -> list[Record]:
    ratings = (
        Rating.objects.filter(assignment__study=study)
        .select_related("assignment__packet")
        .prefetch_related("scores")
        .order_by("pk")
    )
    records = []
    for rating in ratings:
        packet = rating.assignment.packet
        sp = packet.system_position
        preference = "none" if rating.preference == "none" else _arm(rating.preference, sp)
        if rating.system_guess == "unsure":
            guess = "unsure"
        else:
            guess = "correct" if rating.system_guess == sp else "incorrect"
        record = Record(
            rating.pk,
            rating.assignment.rater_id,
            packet.pk,
            packet.cancer_type,
            rating.seconds,
            rating.too_fast,
            preference,
            guess,
            rating.system_guess,
            sp,
            {arm: {} for arm in ARMS},
        )
        for score in rating.scores.all():
            record.scores[_arm(score.position, sp)][score.dimension] = score.value
        records.append(record)
    return records


# --- the figures ------------------------------------------------------------------------------


@dataclass
class Comparison:
    key: str
    label: str
    by_arm: dict[str, MeanCI | None]
    high_rate: dict[str, float | None]
    test: MannWhitney | None
    q: float | None = None


@dataclass
class IccRow:
    key: str
    label: str
    icc: ICC | None


@dataclass
class KwRow:
    arm: str
    key: str
    label: str
    test: KruskalWallis | None
    q: float | None = None


@dataclass
class CancerRow:
    label: str
    by_arm: dict[str, MeanCI | None]


@dataclass
class RaterRow:
    rater: User
    rated: int
    too_fast: int
    time: MedianIQR | None
    by_arm: dict[str, MeanCI | None]


@dataclass
class ResponseTimes:
    by_arm: dict[str, MedianIQR | None]  # minutes to produce the plan
    test: MannWhitney | None
    q: float | None


@dataclass
class LlmRow:
    key: str
    label: str
    n: int
    difference: MeanCI | None  # LLM minus the physicians' mean, per rated plan
    icc: ICC | None  # the LLM against the physicians' mean


@dataclass
class StudyAnalytics:
    packets: int
    assignments: int
    rated: int
    too_fast: int
    comparisons: list[Comparison]
    icc: list[IccRow]
    icc_targets: int
    icc_raters: int
    kruskal: list[KwRow]
    cancers: list[CancerRow]
    raters: list[RaterRow]
    spearman: list[list[Correlation]]
    spearman_q: list[list[float | None]]
    response: ResponseTimes
    preference: Proportion | None
    no_preference: int
    blinding: BlindingIndex | None
    blinding_by_position: dict[str, BlindingIndex | None]
    # Packets whose two plans read the same (a rater cannot tell them apart, so guessing says
    # nothing about blinding): left out of Bang's index, with how many ratings that was.
    identical_packets: int
    identical_ratings: int
    llm: list[LlmRow]
    llm_count: int
    charts: dict[str, str]
    labels: list[str]

    @property
    def composite(self) -> Comparison | None:
        return next((c for c in self.comparisons if c.key == COMPOSITE), None)


def _values(records: list[Record], arm: str, key: str) -> list[float]:
    if key == COMPOSITE:
        return [r.composite(arm) for r in records]
    return [float(r.scores[arm][key]) for r in records]


def _comparisons(records: list[Record]) -> list[Comparison]:
    out = []
    for key in (*DIMENSION_KEYS, COMPOSITE):
        label = DIMENSION_LABELS.get(key, "Composite (mean of six)")
        values = {arm: _values(records, arm, key) for arm in ARMS}
        out.append(
            Comparison(
                key,
                label,
                {arm: mean_ci(values[arm]) for arm in ARMS},
                {arm: rate_at_least(values[arm], HIGH_SCORE) for arm in ARMS},
                mann_whitney(values["system"], values["comparator"]),
            )
        )
    for comparison, q in zip(
        out, bh_qvalues([c.test.p if c.test else None for c in out]), strict=True
    ):
        comparison.q = q
    return out


def _icc(records: list[Record]) -> tuple[list[IccRow], int, int]:
    """ICC(2,1) per dimension over the rated plans (packet x arm) that every rater of the
    study scored: the two-way model needs a complete targets-by-raters table."""
    raters = sorted({r.rater_id for r in records})
    by_packet: dict[int, dict[int, Record]] = defaultdict(dict)
    for r in records:
        by_packet[r.packet_id][r.rater_id] = r
    complete = [p for p, seen in sorted(by_packet.items()) if len(seen) == len(raters)]
    rows = []
    for key in DIMENSION_KEYS:
        matrix = [
            [by_packet[p][rater].scores[arm][key] for rater in raters]
            for p in complete
            for arm in ARMS
        ]
        rows.append(IccRow(key, DIMENSION_LABELS[key], icc_2_1(matrix)))
    return rows, len(complete) * 2, len(raters)


def _kruskal(records: list[Record]) -> list[KwRow]:
    cancers = sorted({r.cancer_type for r in records})
    out = []
    for arm in ARMS:
        for key in (COMPOSITE, *DIMENSION_KEYS):
            groups = [
                _values([r for r in records if r.cancer_type == c], arm, key) for c in cancers
            ]
            label = DIMENSION_LABELS.get(key, "Composite")
            out.append(KwRow(arm, key, label, kruskal_wallis(groups)))
    for row, q in zip(out, bh_qvalues([r.test.p if r.test else None for r in out]), strict=True):
        row.q = q
    return out


def _spearman(records: list[Record]) -> tuple[list[list[Correlation]], list[list[float | None]]]:
    """Between dimensions, over every rated plan (each rating's two plans)."""
    columns = [
        [float(r.scores[arm][key]) for r in records for arm in ARMS] for key in DIMENSION_KEYS
    ]
    matrix = spearman_matrix(columns)
    size = len(DIMENSION_KEYS)
    pairs = [(i, j) for i in range(size) for j in range(i + 1, size)]
    qs = bh_qvalues([matrix[i][j].p for i, j in pairs])
    q_matrix: list[list[float | None]] = [[None] * size for _ in range(size)]
    for (i, j), q in zip(pairs, qs, strict=True):
        q_matrix[i][j] = q_matrix[j][i] = q
    return matrix, q_matrix


def _response_times(study: Study) -> ResponseTimes:
    """Minutes from dossier to plan: the consultation's run for the system arm, the time the
    clinicians recorded with the comparator for the human arm (when they did)."""
    system, human = [], []
    for packet in study.packets.select_related("consultation", "comparator"):
        run = packet.consultation
        if run.started_at and run.finished_at:
            system.append((run.finished_at - run.started_at).total_seconds() / 60)
        if packet.comparator.minutes_to_write:
            human.append(float(packet.comparator.minutes_to_write))
    test = mann_whitney(system, human) if system and human else None
    return ResponseTimes(
        {"system": median_iqr(system), "comparator": median_iqr(human)},
        test,
        bh_qvalues([test.p])[0] if test else None,
    )


def _raters(records: list[Record]) -> list[RaterRow]:
    mine: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        mine[r.rater_id].append(r)
    users = User.objects.in_bulk(list(mine))
    return [
        RaterRow(
            users[rater],
            len(rs),
            sum(1 for r in rs if r.too_fast),
            median_iqr([r.seconds for r in rs]),
            {arm: mean_ci([r.composite(arm) for r in rs]) for arm in ARMS},
        )
        for rater, rs in sorted(mine.items(), key=lambda item: users[item[0]].email)
    ]


def identical_packets(*, study: Study) -> set[int]:
    """The packets whose plans read the same once blinded (similarity measured at creation,
    or now for packets made before it was)."""
    same = set()
    for packet in study.packets.select_related("plan", "comparator"):
        similarity = packet.similarity
        if similarity is None:
            similarity = pair_similarity(packet.plan.payload, packet.comparator.payload)
        if similarity >= IDENTICAL:
            same.add(packet.pk)
    return same


def study_blinding_check(*, study: Study) -> BlindingCheck | None:
    """Can surface form tell the arms apart? (consult/rating/blinding_check.py) Over every
    packet of the study, its two plans as its raters read them."""
    packets = list(study.packets.select_related("plan", "comparator").order_by("sequence"))
    pairs = packet_texts([(p.plan.payload, p.comparator.payload) for p in packets])
    texts = [text for pair in pairs for text in pair]
    is_system = [flag for _ in pairs for flag in (True, False)]
    groups = [index for index in range(len(pairs)) for _ in (0, 1)]
    return blinding_check(texts, is_system, groups)


def _blinding(records: list[Record]) -> tuple[BlindingIndex | None, dict[str, Any]]:
    def index(rs: list[Record]) -> BlindingIndex | None:
        return bang_index(
            correct=sum(1 for r in rs if r.guess == "correct"),
            incorrect=sum(1 for r in rs if r.guess == "incorrect"),
            dont_know=sum(1 for r in rs if r.guess == "unsure"),
        )

    return index(records), {
        position: index([r for r in records if r.system_position == position])
        for position in ("A", "B")
    }


def _llm(study: Study, records: list[Record]) -> tuple[list[LlmRow], int]:
    llm_ratings = list(
        LLMRating.objects.filter(study=study).select_related("packet").prefetch_related("scores")
    )
    if not llm_ratings:
        return [], 0
    physicians: dict[tuple[int, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        for arm in ARMS:
            for key, value in r.scores[arm].items():
                physicians[(r.packet_id, arm)][key].append(value)
    llm_scores: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    for lr in llm_ratings:
        for score in lr.scores.all():
            arm = _arm(score.position, lr.packet.system_position)
            llm_scores[(lr.packet_id, arm)][score.dimension] = score.value
    rows = []
    for key in DIMENSION_KEYS:
        pairs = [
            (fmean(physicians[target][key]), float(scores[key]))
            for target, scores in sorted(llm_scores.items())
            if key in scores and physicians[target].get(key)
        ]
        rows.append(
            LlmRow(
                key,
                DIMENSION_LABELS[key],
                len(pairs),
                mean_ci([llm - doc for doc, llm in pairs]),
                icc_2_1([[doc, llm] for doc, llm in pairs]),
            )
        )
    return rows, len(llm_ratings)


def _mean(value: MeanCI | None) -> float:
    return value.mean if value is not None else 0.0


def study_analytics(*, study: Study, with_charts: bool = True) -> StudyAnalytics:
    records = study_records(study=study)
    comparisons = _comparisons(records)
    icc_rows, icc_targets, icc_raters = _icc(records)
    spearman, spearman_q = _spearman(records)
    cancers = sorted({r.cancer_type for r in records})
    same = identical_packets(study=study)
    blinding, by_position = _blinding([r for r in records if r.packet_id not in same])
    llm_rows, llm_count = _llm(study, records)
    preferred = [r for r in records if r.preference != "none"]
    labels = [DIMENSION_LABELS[k] for k in DIMENSION_KEYS]
    analytics = StudyAnalytics(
        packets=Packet.objects.filter(study=study).count(),
        assignments=Assignment.objects.filter(study=study).count(),
        rated=len(records),
        too_fast=sum(1 for r in records if r.too_fast),
        comparisons=comparisons,
        icc=icc_rows,
        icc_targets=icc_targets,
        icc_raters=icc_raters,
        kruskal=_kruskal(records),
        cancers=[
            CancerRow(
                CANCER_LABELS.get(c, c),
                {
                    arm: mean_ci([r.composite(arm) for r in records if r.cancer_type == c])
                    for arm in ARMS
                },
            )
            for c in cancers
        ],
        raters=_raters(records),
        spearman=spearman,
        spearman_q=spearman_q,
        response=_response_times(study),
        preference=proportion_ci(
            sum(1 for r in preferred if r.preference == "system"), len(preferred)
        ),
        no_preference=len(records) - len(preferred),
        blinding=blinding,
        blinding_by_position=by_position,
        identical_packets=len(same),
        identical_ratings=sum(1 for r in records if r.packet_id in same),
        llm=llm_rows,
        llm_count=llm_count,
        charts={},
        labels=labels,
    )
    if with_charts and records:
        analytics.charts = {
            "radar": charts.radar(
                labels,
                {arm: [_mean(c.by_arm[arm]) for c in comparisons[:-1]] for arm in ARMS},
            ),
            "scores": charts.score_boxes(
                labels, {arm: [_values(records, arm, k) for k in DIMENSION_KEYS] for arm in ARMS}
            ),
            "heatmap": charts.heatmap(labels, spearman, spearman_q),
            "icc": charts.icc_forest(labels, [row.icc for row in icc_rows]),
            "times": charts.time_boxes(
                [str(row.rater) for row in analytics.raters],
                [
                    [r.seconds / 60 for r in records if r.rater_id == row.rater.pk]
                    for row in analytics.raters
                ],
            ),
        }
    return analytics


# --- export ---------------------------------------------------------------------------------------

CSV_HEADER = (
    "study",
    "packet",
    "cancer_type",
    "complexity",
    "block",
    "rater_kind",
    "rater",
    "rater_order",
    "opened_at",
    "submitted_at",
    "seconds",
    "too_fast",
    "position",
    "arm",
    "dimension",
    "score",
    "preference_position",
    "preference_arm",
    "system_guess_position",
    "system_guess",
    "comment",
)


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def study_ratings_rows(*, study: Study) -> Iterator[tuple[Any, ...]]:
    """One row per score: physicians' ratings, then the LLM rater's, with the arm each plan
    belonged to."""
    yield CSV_HEADER
    ratings = (
        Rating.objects.filter(assignment__study=study)
        .select_related("assignment__packet", "assignment__rater")
        .prefetch_related("scores")
        .order_by("assignment__packet__sequence", "assignment__rater__email")
    )
    for rating in ratings:
        a, packet = rating.assignment, rating.assignment.packet
        sp = packet.system_position
        for score in rating.scores.all():
            yield tuple(
                _cell(v)
                for v in (
                    study.pk,
                    packet.sequence,
                    packet.cancer_type,
                    packet.complexity,
                    f"{packet.cancer_type}/{packet.complexity}/{packet.block}",
                    "physician",
                    a.rater.email,
                    a.order,
                    a.opened_at.isoformat() if a.opened_at else "",
                    rating.submitted_at.isoformat(),
                    round(rating.seconds, 1),
                    rating.too_fast,
                    score.position,
                    _arm(score.position, sp),
                    score.dimension,
                    score.value,
                    rating.preference,
                    "none" if rating.preference == "none" else _arm(rating.preference, sp),
                    rating.system_guess,
                    "unsure"
                    if rating.system_guess == "unsure"
                    else ("correct" if rating.system_guess == sp else "incorrect"),
                    rating.comment,
                )
            )
    for lr in (
        LLMRating.objects.filter(study=study)
        .select_related("packet")
        .prefetch_related("scores")
        .order_by("packet__sequence")
    ):
        sp = lr.packet.system_position
        for llm_score in lr.scores.all():
            yield tuple(
                _cell(v)
                for v in (
                    study.pk,
                    lr.packet.sequence,
                    lr.packet.cancer_type,
                    lr.packet.complexity,
                    f"{lr.packet.cancer_type}/{lr.packet.complexity}/{lr.packet.block}",
                    "llm",
                    lr.model,
                    "",
                    "",
                    lr.created_at.isoformat(),
                    round(lr.latency_ms / 1000, 1),
                    "",
                    llm_score.position,
                    _arm(llm_score.position, sp),
                    llm_score.dimension,
                    llm_score.value,
                    lr.preference,
                    "none" if lr.preference == "none" else _arm(lr.preference, sp),
                    lr.system_guess,
                    "unsure"
                    if lr.system_guess == "unsure"
                    else ("correct" if lr.system_guess == sp else "incorrect"),
                    lr.comment,
                )
            )
