import pytest

from collscope.stats.summary import (
    MAD_TO_SIGMA,
    iqr,
    iter_stats,
    mad,
    percentile_index,
    quantile,
    robust_sigma,
)


def test_percentile_index_matches_nccl_tests_nearest_rank():
    assert percentile_index(20, 95) == 18
    assert percentile_index(100, 95) == 94
    assert percentile_index(1, 95) == 0


def test_iter_stats_uses_loop_total_for_mean():
    stats = iter_stats([3.0, 1.0, 2.0, 4.0], loop_total=12.0)
    assert (stats.mean, stats.p50, stats.min, stats.max) == (3.0, 3.0, 1.0, 4.0)
    assert iter_stats([1.0, 3.0]).mean == 2.0


def test_quantile_interpolates_linearly_like_numpy():
    values = [4.0, 1.0, 3.0, 2.0]
    assert quantile(values, 0.0) == 1.0 and quantile(values, 1.0) == 4.0
    assert quantile(values, 0.25) == pytest.approx(1.75)       # numpy.quantile's default
    assert quantile([7.0], 0.9) == 7.0
    with pytest.raises(ValueError, match="no values"):
        quantile([], 0.5)


def test_iqr_is_zero_below_two_values():
    assert iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0
    assert iqr([3.0]) == 0.0 and iqr([]) == 0.0


def test_mad_around_the_median_or_a_given_centre():
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert mad(values) == 1.0                     # |deviations| 2, 1, 0, 1, 97
    assert mad(values, centre=0.0) == 3.0


def test_robust_sigma_scales_the_mad_to_a_normal_sigma():
    assert robust_sigma([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(MAD_TO_SIGMA, rel=1e-4)
    assert robust_sigma([5.0]) == 0.0
