import math

import pytest

from collscope.bench.stats import iter_stats, median_ci_halfwidth, percentile_index


def test_percentile_index_matches_nccl_tests_nearest_rank():
    assert percentile_index(20, 95) == 18
    assert percentile_index(100, 95) == 94
    assert percentile_index(1, 95) == 0


def test_iter_stats_uses_loop_total_for_mean():
    stats = iter_stats([3.0, 1.0, 2.0, 4.0], loop_total=12.0)
    assert (stats.mean, stats.p50, stats.min, stats.max) == (3.0, 3.0, 1.0, 4.0)
    assert iter_stats([1.0, 3.0]).mean == 2.0


def test_median_ci_shrinks_with_samples_and_spread():
    assert median_ci_halfwidth([1.0] * 5) == math.inf
    tight = median_ci_halfwidth([1.0 + 0.001 * (i % 7) for i in range(200)])
    loose = median_ci_halfwidth([1.0 + 0.5 * (i % 7) for i in range(200)])
    assert tight < 0.01 < loose
    assert median_ci_halfwidth([2.0] * 50) == 0.0


def test_late_rank_p_is_a_bonferroni_corrected_one_sided_binomial_test():
    from collscope.bench.stats import late_rank_p

    assert late_rank_p(10, 10, 2) == pytest.approx(2 * 0.5 ** 10)      # 2 x P(X >= 10)
    assert late_rank_p(4, 4, 4) == pytest.approx(4 * 0.25 ** 4)
    assert late_rank_p(5, 10, 2) == 1.0                                # capped: 2 x 0.62


def test_theil_sen_slope_and_ci_with_outliers():
    from collscope.bench.stats import theil_sen

    x = [float(i) for i in range(50)]
    y = [2.0 * xi + 1.0 + (0.1 if i % 2 else -0.1) for i, xi in enumerate(x)]
    y[7], y[30] = 1e6, -1e6                        # two wild ends do not move it
    fit = theil_sen(x, y)
    assert abs(fit.slope - 2.0) < 0.01 and fit.low <= fit.slope <= fit.high
    assert fit.excludes_zero and fit.confidence == 0.95
    flat = theil_sen(x, [0.1 if i % 2 else -0.1 for i in range(50)])
    assert not flat.excludes_zero
    with pytest.raises(ValueError, match="two distinct x"):
        theil_sen([1.0, 1.0, 1.0], [0.0, 1.0, 2.0])
