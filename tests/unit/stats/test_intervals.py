import math

import pytest

from collscope.stats.intervals import mean_ci_halfwidth, median_ci, median_ci_halfwidth


def test_median_ci_shrinks_with_samples_and_spread():
    assert median_ci_halfwidth([1.0] * 5) == math.inf
    tight = median_ci_halfwidth([1.0 + 0.001 * (i % 7) for i in range(200)])
    loose = median_ci_halfwidth([1.0 + 0.5 * (i % 7) for i in range(200)])
    assert tight < 0.01 < loose
    assert median_ci_halfwidth([2.0] * 50) == 0.0


def test_median_ci_is_the_exact_order_statistic_interval():
    ci = median_ci([float(v) for v in range(1, 11)])      # n = 10: [x_(2), x_(9)]
    assert (ci.median, ci.low, ci.high) == (5.5, 2.0, 9.0)
    assert ci.confidence == pytest.approx(1 - 2 * 11 / 1024)   # 1 - 2 P(Binom(10, .5) <= 1)
    assert ci.label() == "97% CI 2.00..9.00"


def test_median_ci_with_too_few_values_covers_min_to_max_and_says_so():
    ci = median_ci([3.0, 1.0, 2.0])
    assert (ci.low, ci.high) == (1.0, 3.0) and ci.confidence == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no values"):
        median_ci([])


def test_mean_ci_halfwidth_is_students_t():
    # t(0.975, 4) = 2.776445, s = sqrt(2.5), n = 5
    assert mean_ci_halfwidth([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == pytest.approx(
        2.776445 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        mean_ci_halfwidth([1.0], 0.95)
