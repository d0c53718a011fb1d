"""Statistics over per-iteration times (pure)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class IterStats:
    mean: float
    p50: float
    p95: float
    min: float
    max: float


def percentile_index(n: int, percentile: int) -> int:
    """Nearest-rank index, as nccl-tests' per-iteration report computes it."""
    return min(n - 1, (n * percentile + 99) // 100 - 1)


def iter_stats(times: Sequence[float], loop_total: float | None = None) -> IterStats:
    """Stats of per-iteration times; ``mean`` is loop_total / n when the loop was timed whole."""
    ordered = sorted(times)
    n = len(ordered)
    mean = (loop_total if loop_total is not None else sum(ordered)) / n
    return IterStats(mean=mean, p50=ordered[n // 2], p95=ordered[percentile_index(n, 95)],
                     min=ordered[0], max=ordered[-1])


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


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), q in [0, 1]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("quantile of no values")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


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
    from scipy.stats import binom  # type: ignore[import-untyped]

    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median_ci of no values")
    median = statistics.median(ordered)
    j = int(binom.ppf((1 - confidence) / 2, n, 0.5))   # P(X <= j - 1) < alpha / 2
    j = max(1, min(j, (n + 1) // 2))
    coverage = 1 - 2 * float(binom.cdf(j - 1, n, 0.5))
    return MedianCI(median, ordered[j - 1], ordered[n - j], coverage)


def late_rank_p(hits: int, trials: int, ranks: int) -> float:
    """p-value that the rank picked as most often late (``hits`` of ``trials``) is late more
    often than chance 1/``ranks``: one-sided binomial test, Bonferroni-corrected for the
    ``ranks`` ranks it was picked from after looking (bench --per-rank, trace's straggler)."""
    from scipy.stats import binomtest  # type: ignore[import-untyped]

    return min(1.0, ranks * float(binomtest(hits, trials, 1 / ranks,
                                            alternative="greater").pvalue))


def min_late_trials(ranks: int, alpha: float) -> int:
    """Fewest trials in which :func:`late_rank_p` can fall below ``alpha`` at all (one rank
    late in every trial: p = ranks * (1/ranks)^trials); fewer cannot name a late rank."""
    if ranks < 2 or not 0 < alpha < 1:
        raise ValueError(f"min_late_trials needs ranks >= 2 and 0 < alpha < 1, got {ranks}, "
                         f"{alpha}")
    trials = 1
    while late_rank_p(trials, trials, ranks) >= alpha:
        trials += 1
    return trials


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
    from scipy.stats import theilslopes  # type: ignore[import-untyped]

    if len(set(x)) < 2 or len(x) != len(y):
        raise ValueError("theil_sen needs as many y as x and at least two distinct x")
    fit = theilslopes(y, x, alpha=confidence)
    return SlopeCI(float(fit[0]), float(fit[2]), float(fit[3]), confidence)   # slope, lo, hi
