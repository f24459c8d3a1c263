"""The statistics of a rating study, as pure functions of numbers (no Django): mean with CI,
ICC(2,1), Mann–Whitney U with rank-biserial r, Kruskal–Wallis, Spearman, Benjamini–Hochberg,
median and IQR, preference rate, Bang's blinding index.

Every function takes plain sequences and returns a small frozen dataclass (or None where the
data cannot support the figure, e.g. fewer than two values), never NaN: a page shows "not
enough data" rather than a number that means nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

CONFIDENCE = 0.95


@cache
def _stats() -> Any:  # scipy ships no types
    """scipy.stats, imported when a figure is first computed: it takes seconds and tens of MB,
    and every process that imports this module (a consultation records vetted judgements
    through it) would otherwise pay that at start-up."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class MeanCI:
    n: int
    mean: float
    low: float | None  # None with a single value: no interval
    high: float | None


def mean_ci(values: Sequence[float], *, confidence: float = CONFIDENCE) -> MeanCI | None:
    """Mean with a t-based confidence interval (Student's t on n - 1 degrees of freedom)."""
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return None
    mean = float(data.mean())
    if n < 2:
        return MeanCI(n, mean, None, None)
    sem = float(data.std(ddof=1)) / math.sqrt(n)
    half = float(_stats().t.ppf((1 + confidence) / 2, n - 1)) * sem
    return MeanCI(n, mean, mean - half, mean + half)


def rate_at_least(values: Sequence[float], threshold: float) -> float | None:
    """The share of values >= threshold (EvoMDT's "high-score rate", threshold 4)."""
    if not values:
        return None
    return sum(1 for v in values if v >= threshold) / len(values)


@dataclass(frozen=True)
class Proportion:
    k: int
    n: int
    rate: float
    low: float
    high: float


def proportion_ci(k: int, n: int, *, confidence: float = CONFIDENCE) -> Proportion | None:
    """A proportion with its Wilson score interval (good at small n and near 0 or 1)."""
    if n == 0:
        return None
    z = float(_stats().norm.ppf((1 + confidence) / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Proportion(k, n, p, max(0.0, centre - half), min(1.0, centre + half))


# --- inter-rater reliability ---------------------------------------------------------------


@dataclass(frozen=True)
class ICC:
    icc: float
    low: float | None  # None when every rater gave every target the same score (no error)
    high: float | None
    f: float
    df1: int
    df2: int
    p: float
    n: int  # targets
    k: int  # raters


def icc_2_1(matrix: Sequence[Sequence[float]], *, confidence: float = CONFIDENCE) -> ICC | None:
    """ICC(2,1): two-way random effects, absolute agreement, single rater (Shrout & Fleiss
    1979, ICC(2,1); McGraw & Wong 1996, ICC(A,1)), with McGraw & Wong's confidence interval.

    ``matrix`` has one row per target (a rated plan) and one column per rater, complete. None
    when there are fewer than two targets or raters, or no variance at all to apportion.
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2 or np.isnan(x).any():
        return None
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * float(((x.mean(axis=1) - grand) ** 2).sum())
    ss_cols = n * float(((x.mean(axis=0) - grand) ** 2).sum())
    ss_total = float(((x - grand) ** 2).sum())
    ss_error = ss_total - ss_rows - ss_cols
    df_rows, df_cols, df_error = n - 1, k - 1, (n - 1) * (k - 1)
    msr, msc, mse = ss_rows / df_rows, ss_cols / df_cols, ss_error / df_error
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    if denominator <= 0 or msr <= 0:
        # No variance between targets (identical scores everywhere): agreement is undefined.
        return None
    icc = (msr - mse) / denominator
    if mse <= 0:
        # No residual at all: the raters agree exactly, up to a constant offset between them
        # (which absolute agreement counts). F is infinite and the interval degenerate.
        return ICC(float(icc), None, None, math.inf, df_rows, df_error, 0.0, n, k)
    f = msr / mse
    p = float(_stats().f.sf(f, df_rows, df_error))
    # McGraw & Wong (1996), case 2A: Satterthwaite's degrees of freedom for the denominator.
    alpha = 1 - confidence
    a = k * icc / (n * (1 - icc))
    b = 1 + k * icc * (n - 1) / (n * (1 - icc))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / df_cols + (b * mse) ** 2 / df_error)
    f_lower = float(_stats().f.ppf(1 - alpha / 2, df_rows, v))
    f_upper = float(_stats().f.ppf(1 - alpha / 2, v, df_rows))
    low = n * (msr - f_lower * mse) / (f_lower * (k * msc + (k * n - k - n) * mse) + n * msr)
    high = n * (f_upper * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_upper * msr)
    return ICC(float(icc), float(low), float(high), float(f), df_rows, df_error, p, n, k)


# --- comparisons ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample
    p: float
    r: float  # rank-biserial: > 0 when the first sample tends to be larger
    n1: int
    n2: int


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> MannWhitney | None:
    """Two-sided Mann–Whitney U (SciPy: exact for small samples without ties, otherwise the
    normal approximation with tie and continuity corrections) and the rank-biserial
    correlation r = 2U/(n1·n2) - 1 (Kerby's simple difference formula)."""
    if len(x) < 1 or len(y) < 1:
        return None
    if len(set(x) | set(y)) == 1:
        # Every value the same: no ranks to compare.
        return MannWhitney(len(x) * len(y) / 2, 1.0, 0.0, len(x), len(y))
    result = _stats().mannwhitneyu(x, y, alternative="two-sided")
    u = float(result.statistic)
    return MannWhitney(u, float(result.pvalue), 2 * u / (len(x) * len(y)) - 1, len(x), len(y))


@dataclass(frozen=True)
class KruskalWallis:
    h: float
    p: float
    groups: int
    n: int


def kruskal_wallis(groups: Sequence[Sequence[float]]) -> KruskalWallis | None:
    """Kruskal–Wallis H across the groups that have data (at least two such groups)."""
    present = [list(g) for g in groups if len(g) > 0]
    if len(present) < 2:
        return None
    n = sum(len(g) for g in present)
    if len({v for g in present for v in g}) == 1:
        return KruskalWallis(0.0, 1.0, len(present), n)
    result = _stats().kruskal(*present)
    return KruskalWallis(float(result.statistic), float(result.pvalue), len(present), n)


@dataclass(frozen=True)
class Correlation:
    rho: float | None  # None where a variable is constant
    p: float | None
    n: int


def spearman_matrix(columns: Sequence[Sequence[float]]) -> list[list[Correlation]]:
    """Spearman's rho and its p value for every pair of columns (paired observations)."""
    size = len(columns)
    out: list[list[Correlation]] = []
    for i in range(size):
        row = []
        for j in range(size):
            x, y = columns[i], columns[j]
            n = min(len(x), len(y))
            if n < 3 or len(set(x)) < 2 or len(set(y)) < 2:
                row.append(Correlation(None, None, n))
            elif i == j:
                row.append(Correlation(1.0, None, n))
            else:
                result = _stats().spearmanr(x, y)
                row.append(Correlation(float(result.statistic), float(result.pvalue), n))
        out.append(row)
    return out


def bh_qvalues(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p values (q values), in the order given; None stays None
    and is not counted among the tests. q_(i) = min over j >= i of p_(j)·m/j, capped at 1."""
    indexed = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    m = len(indexed)
    out: list[float | None] = [None] * len(pvalues)
    running = 1.0
    for rank, (p, i) in reversed(list(enumerate(sorted(indexed), start=1))):
        running = min(running, p * m / rank)
        out[i] = running
    return out


@dataclass(frozen=True)
class MedianIQR:
    n: int
    median: float
    q1: float
    q3: float


def median_iqr(values: Sequence[float]) -> MedianIQR | None:
    if not values:
        return None
    q1, median, q3 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return MedianIQR(len(values), float(median), float(q1), float(q3))


# --- blinding ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlindingIndex:
    index: float
    low: float
    high: float
    correct: int
    incorrect: int
    dont_know: int

    @property
    def n(self) -> int:
        return self.correct + self.incorrect + self.dont_know

    @property
    def verdict(self) -> str:
        """Bang et al.: an interval wholly above 0 means more correct guesses than chance
        (blinding failed); wholly below 0, more wrong guesses than chance (raters guessed the
        opposite); otherwise consistent with blinding."""
        if self.low > 0:
            return "failed"
        if self.high < 0:
            return "opposite"
        return "maintained"


def bang_index(
    *, correct: int, incorrect: int, dont_know: int, confidence: float = CONFIDENCE
) -> BlindingIndex | None:
    """Bang's blinding index (Bang, Ni & Davis, Control Clin Trials 2004;25:143-156):
    BI = (2·P(correct | guessed) - 1)·P(guessed) = (correct - incorrect)/n, from -1 to 1,
    0 = guesses no better than chance, 1 = every guess right. Its variance follows from the
    multinomial: Var(BI) = (p_c + p_i - (p_c - p_i)^2)/n."""
    n = correct + incorrect + dont_know
    if n == 0:
        return None
    pc, pi = correct / n, incorrect / n
    index = pc - pi
    se = math.sqrt(max(0.0, pc + pi - index * index) / n)
    z = float(_stats().norm.ppf((1 + confidence) / 2))
    return BlindingIndex(
        index, max(-1.0, index - z * se), min(1.0, index + z * se), correct, incorrect, dont_know
    )
