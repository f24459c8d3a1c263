"""The study statistics against reference implementations and hand-worked examples."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from consult.rating.statistics import (
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

# Shrout & Fleiss (1979), Table 2: six targets scored by four judges. Their worked example
# gives ICC(2,1) = .29; psych::ICC and pingouin give F(5, 15) = 11.03 and a 95% CI of
# 0.02 to 0.76 for it.
SHROUT_FLEISS = [
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
]

# Likert scores of a small study, fixed: 12 plans (targets) by 3 raters, one dimension.
LIKERT = [
    [4, 4, 5],
    [3, 3, 4],
    [5, 4, 5],
    [2, 3, 2],
    [4, 5, 4],
    [3, 2, 3],
    [1, 2, 2],
    [5, 5, 5],
    [3, 4, 3],
    [4, 3, 4],
    [2, 2, 3],
    [4, 4, 4],
]


def _pingouin_icc2(matrix: list[list[int]]) -> tuple[float, list[float], float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pandas as pd
        import pingouin as pg

        rows = [(i, j, v) for i, row in enumerate(matrix) for j, v in enumerate(row)]
        frame = pd.DataFrame(rows, columns=["target", "rater", "score"])
        table = pg.intraclass_corr(frame, targets="target", raters="rater", ratings="score")
    row = table.set_index("Type").loc["ICC(A,1)"]
    return float(row["ICC"]), [float(v) for v in row["CI95"]], float(row["F"])


def test_icc_2_1_reproduces_shrout_and_fleiss_worked_example() -> None:
    result = icc_2_1(SHROUT_FLEISS)
    assert result is not None
    assert round(result.icc, 2) == 0.29
    assert round(result.f, 2) == 11.03
    assert (result.df1, result.df2) == (5, 15)
    assert (round(result.low, 2), round(result.high, 2)) == (0.02, 0.76)


@pytest.mark.parametrize("matrix", [SHROUT_FLEISS, LIKERT], ids=["shrout-fleiss", "likert"])
def test_icc_2_1_equals_pingouin_icc2(matrix: list[list[int]]) -> None:
    # given pingouin's two-way random, absolute agreement, single rater ICC
    icc, ci, f = _pingouin_icc2(matrix)
    # when ours is computed on the same matrix
    result = icc_2_1(matrix)
    # then the coefficient and F agree exactly, the interval to pingouin's two decimals
    assert result is not None
    assert result.icc == pytest.approx(icc, abs=1e-12)
    assert result.f == pytest.approx(f, abs=1e-9)
    assert [round(result.low, 2), round(result.high, 2)] == pytest.approx(ci, abs=1e-9)


def test_icc_of_raters_in_exact_agreement_is_one_without_an_interval() -> None:
    result = icc_2_1([[1, 1], [3, 3], [5, 5]])
    assert result is not None
    assert result.icc == 1.0
    assert (result.low, result.high, result.p) == (None, None, 0.0)


def test_icc_is_not_computed_without_variance_or_enough_data() -> None:
    assert icc_2_1([[3, 3], [3, 3], [3, 3]]) is None
    assert icc_2_1([[1, 2, 3]]) is None  # one target
    assert icc_2_1([[1], [2], [3]]) is None  # one rater


def test_mann_whitney_equals_scipy_and_r_follows_u() -> None:
    system = [4, 5, 3, 4, 4, 5, 2, 4, 5, 3]
    comparator = [3, 3, 2, 4, 3, 2, 3, 1, 4]
    reference = stats.mannwhitneyu(system, comparator, alternative="two-sided")
    result = mann_whitney(system, comparator)
    assert result is not None
    assert result.u == reference.statistic
    assert result.p == pytest.approx(reference.pvalue, abs=1e-15)
    # rank-biserial r by hand: the share of pairs the system wins minus the share it loses
    wins = sum(1 for a in system for b in comparator if a > b)
    losses = sum(1 for a in system for b in comparator if a < b)
    assert result.r == pytest.approx((wins - losses) / (len(system) * len(comparator)))
    assert result.r > 0


def test_mann_whitney_of_identical_samples_is_no_difference() -> None:
    result = mann_whitney([3, 3, 3], [3, 3])
    assert result is not None
    assert (result.p, result.r) == (1.0, 0.0)


def test_kruskal_wallis_equals_scipy_and_skips_empty_groups() -> None:
    groups = [[3.5, 4.0, 3.2, 4.1], [2.8, 3.0, 3.3], [], [4.4, 4.6, 3.9, 4.2, 4.0]]
    reference = stats.kruskal(*[g for g in groups if g])
    result = kruskal_wallis(groups)
    assert result is not None
    assert result.h == pytest.approx(reference.statistic)
    assert result.p == pytest.approx(reference.pvalue)
    assert result.groups == 3
    assert kruskal_wallis([[1, 2], []]) is None


def test_spearman_matrix_equals_scipy_pairwise() -> None:
    rng = np.random.default_rng(7)
    columns = [list(rng.integers(1, 6, size=30)) for _ in range(4)]
    matrix = spearman_matrix(columns)
    for i in range(4):
        for j in range(4):
            if i == j:
                assert matrix[i][j].rho == 1.0
                continue
            reference = stats.spearmanr(columns[i], columns[j])
            assert matrix[i][j].rho == pytest.approx(reference.statistic)
            assert matrix[i][j].p == pytest.approx(reference.pvalue)


def test_spearman_of_a_constant_column_is_undefined_not_nan() -> None:
    matrix = spearman_matrix([[1, 2, 3, 4], [3, 3, 3, 3]])
    assert matrix[0][1].rho is None
    assert matrix[0][1].p is None


def test_bh_qvalues_equal_statsmodels_multipletests() -> None:
    from statsmodels.stats.multitest import multipletests

    # Benjamini & Hochberg (1995)'s own example of 15 p values, shuffled
    pvalues = [0.0459, 0.0001, 0.3240, 0.0004, 0.0019, 0.7590, 0.0095, 0.0201, 0.0278,
               0.0298, 0.0344, 0.4262, 0.5719, 0.6528, 1.0]  # fmt: skip
    reference = multipletests(pvalues, method="fdr_bh")[1]
    assert bh_qvalues(pvalues) == pytest.approx(list(reference), abs=1e-15)
    # and the four smallest are the discoveries at q < 0.05, as in the paper
    assert sum(1 for q in bh_qvalues(pvalues) if q is not None and q < 0.05) == 4


def test_bh_qvalues_leave_missing_tests_out_of_the_count() -> None:
    from statsmodels.stats.multitest import multipletests

    reference = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    assert bh_qvalues([0.01, None, 0.04, 0.03]) == pytest.approx(
        [reference[0], None, reference[1], reference[2]]
    )


def test_mean_ci_is_the_t_interval() -> None:
    values = [3, 4, 4, 5, 2, 4, 3]
    result = mean_ci(values)
    assert result is not None
    low, high = stats.t.interval(
        0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values)
    )
    assert (result.mean, result.low, result.high) == pytest.approx((np.mean(values), low, high))
    single = mean_ci([4])
    assert single is not None
    assert single.low is None
    assert mean_ci([]) is None


def test_rate_median_and_proportion() -> None:
    assert rate_at_least([1, 4, 5, 3], 4) == 0.5
    result = median_iqr([10.0, 20.0, 30.0, 40.0])
    assert result is not None
    assert (result.median, result.q1, result.q3) == (25.0, 17.5, 32.5)
    wilson = proportion_ci(8, 10)
    assert wilson is not None
    # Wilson interval for 8/10 at 95%: 0.490 to 0.943 (Newcombe 1998, Table I method 3)
    assert (round(wilson.low, 3), round(wilson.high, 3)) == (0.49, 0.943)


def test_bang_index_by_hand() -> None:
    # 20 packets: 12 right, 4 wrong, 4 "cannot tell": BI = (12 - 4)/20 = 0.4
    result = bang_index(correct=12, incorrect=4, dont_know=4)
    assert result is not None
    assert result.index == pytest.approx(0.4)
    se = math.sqrt((0.6 + 0.2 - 0.4**2) / 20)
    assert result.low == pytest.approx(0.4 - 1.959963984540054 * se)
    assert result.verdict == "failed"  # the interval lies above 0
    chance = bang_index(correct=5, incorrect=5, dont_know=10)
    assert chance is not None
    assert chance.index == 0.0
    assert chance.verdict == "maintained"
    assert bang_index(correct=0, incorrect=0, dont_know=0) is None
