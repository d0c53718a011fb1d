"""Statistics over per-iteration times (pure)."""

from __future__ import annotations

import math
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
