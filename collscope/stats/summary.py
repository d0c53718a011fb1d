"""Summaries of a sample: quantiles, percentiles, spread (pure)."""

from __future__ import annotations

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


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), q in [0, 1]."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("quantile of no values")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def iqr(values: Sequence[float]) -> float:
    """Interquartile range (linear-interpolation quartiles); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    return quantile(values, 0.75) - quantile(values, 0.25)


def mad(values: Sequence[float], centre: float | None = None) -> float:
    """Median absolute deviation from ``centre`` (the median when not given), unscaled."""
    if centre is None:
        centre = statistics.median(values)
    return statistics.median(abs(v - centre) for v in values)


# MAD x this estimates a normal's sigma: 1 / its 75th percentile (1.482602...), to 4 decimals
# as the model's outlier rule and trace's edge weights state it.
MAD_TO_SIGMA = 1.4826


def robust_sigma(values: Sequence[float]) -> float:
    """MAD scaled to a normal's sigma by the exact factor (``scipy.stats.median_abs_deviation``,
    scale="normal"); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    from scipy.stats import median_abs_deviation

    return float(median_abs_deviation(values, scale="normal"))
