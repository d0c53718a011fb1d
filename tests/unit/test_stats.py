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
