import math

import pytest

from collscope.stats.fits import rising_slope, theil_sen


def test_theil_sen_slope_and_ci_with_outliers():
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


def test_rising_slope_tests_a_positive_least_squares_slope():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    slope, p = rising_slope(x, [2.1, 3.9, 6.2, 7.8, 10.1])
    assert slope == pytest.approx(1.99) and p < 1e-3
    slope, p = rising_slope(x, [5.0, 4.0, 3.0, 2.0, 1.0])
    assert slope == pytest.approx(-1.0) and p > 0.99
    slope, p = rising_slope([1.0, 2.0], [1.0, 2.0])
    assert math.isnan(slope) and p == 1.0
