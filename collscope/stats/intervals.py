"""Confidence intervals: of a median (distribution-free) and of a mean (Student's t)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def median_ci_halfwidth(times: Sequence[float], z: float = 1.96) -> float:
    """Relative half-width of the distribution-free 95% confidence interval of the median.

    The interval runs between the order statistics n/2 -+ z*sqrt(n)/2 (the binomial
    approximation), so it needs no assumption about the shape of the timing distribution.
    Returns inf when there are too few samples to bound the median.
    """
    ordered = sorted(times)
    n = len(ordered)
    if n < 6:
        return math.inf
    spread = z * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - spread))
    high = min(n - 1, math.ceil(n / 2 + spread))
    median = ordered[n // 2]
    if median <= 0:
        return math.inf
    return (ordered[high] - ordered[low]) / (2 * median)


@dataclass(frozen=True)
class MedianCI:
    """A distribution-free confidence interval of a median, and the coverage it achieves."""

    median: float
    low: float
    high: float
    confidence: float   # the interval's exact coverage (>= the requested one when n allows)

    def label(self) -> str:
        """e.g. '95% CI 1.20..1.45' (the achieved coverage, rounded down)."""
        return f"{math.floor(self.confidence * 100):.0f}% CI {self.low:.2f}..{self.high:.2f}"


def median_ci(values: Sequence[float], confidence: float = 0.95) -> MedianCI:
    """Exact order-statistic interval [x_(j), x_(n+1-j)] of the median (binomial, no
    assumption about the distribution), with the largest j whose coverage
    1 - 2 P(Binom(n, 1/2) <= j - 1) is at least ``confidence``. With too few values for that
    coverage the interval is [min, max] and ``confidence`` says what it covers."""
    from scipy.stats import binom

    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median_ci of no values")
    median = statistics.median(ordered)
    j = int(binom.ppf((1 - confidence) / 2, n, 0.5))   # P(X <= j - 1) < alpha / 2
    j = max(1, min(j, (n + 1) // 2))
    coverage = 1 - 2 * float(binom.cdf(j - 1, n, 0.5))
    return MedianCI(median, ordered[j - 1], ordered[n - j], coverage)


def mean_ci_halfwidth(values: Sequence[float], confidence: float) -> float:
    """Half-width of the two-sided Student's t interval of the mean of ``values`` (n >= 2):
    t_{(1+confidence)/2, n-1} x s / sqrt(n)."""
    from scipy import stats

    n = len(values)
    if n < 2:
        raise ValueError(f"a t-interval needs at least 2 values, got {n}")
    return (float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * statistics.stdev(values)
            / math.sqrt(n))
