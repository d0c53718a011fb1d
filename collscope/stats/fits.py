"""Slopes of y against x: robust (Theil-Sen, with its CI) and least squares (with its test)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SlopeCI:
    """A robust slope of y against x and its confidence interval."""

    slope: float
    low: float
    high: float
    confidence: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def theil_sen(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> SlopeCI:
    """Theil-Sen slope (the median of the pairwise slopes: robust to ~29% outliers) with its
    distribution-free CI (``scipy.stats.theilslopes``: Kendall's-tau ranks of the pairwise
    slopes). O(n^2) pairs: callers subsample long series. Needs two distinct x."""
    from scipy.stats import theilslopes

    if len(set(x)) < 2 or len(x) != len(y):
        raise ValueError("theil_sen needs as many y as x and at least two distinct x")
    fit = theilslopes(y, x, alpha=confidence)
    return SlopeCI(float(fit[0]), float(fit[2]), float(fit[3]), confidence)   # slope, lo, hi


def rising_slope(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(least-squares slope of y on x, one-sided t-test p that it is > 0), by
    ``scipy.stats.linregress``; (nan, 1) when there are fewer than 3 points or no slope."""
    from scipy.stats import linregress

    if len(x) < 3:
        return math.nan, 1.0
    result = linregress(x, y, alternative="greater")
    slope, p = float(result.slope), float(result.pvalue)
    return (slope, 1.0) if math.isnan(slope) or math.isnan(p) else (slope, p)
