"""Hypothesis tests behind decisions: binomial (late rank) and rank tests (p-values).

The binomial and Mann-Whitney tests are written out in pure Python (the same p-values as
scipy.stats.binomtest and mannwhitneyu with their defaults; tests/unit/stats compares them)
because they also run inside the user's job, in watch's agent on rank 0, where importing
scipy.stats would cost ~0.7 s of CPU and ~60 MB of memory. The Wilcoxon test runs only in
collscope's own processes and keeps scipy's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Alternative = Literal["greater", "less"]


def late_rank_p(hits: int, trials: int, ranks: int) -> float:
    """p-value that the rank picked as most often late (``hits`` of ``trials``) is late more
    often than chance 1/``ranks``: one-sided binomial test, Bonferroni-corrected for the
    ``ranks`` ranks it was picked from after looking (bench --per-rank, trace's straggler)."""
    return min(1.0, ranks * binomial_tail(hits, trials, 1 / ranks))


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): the terms summed in log space (no overflow at large
    n), largest first."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p >= 1.0:
        return 1.0
    if p <= 0.0:
        return 0.0
    logs = [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
            + j * math.log(p) + (n - j) * math.log1p(-p) for j in range(k, n + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * math.fsum(math.exp(v - top) for v in logs))


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


def signed_rank_p(differences: Sequence[float], alternative: Alternative = "greater") -> float:
    """Wilcoxon signed-rank test that the differences lie above (below) 0; zeros are dropped
    first, and with none left there is no evidence (p = 1)."""
    from scipy.stats import wilcoxon

    nonzero = [d for d in differences if d != 0]
    return float(wilcoxon(nonzero, alternative=alternative).pvalue) if nonzero else 1.0


def rank_sum_p(x: Sequence[float], y: Sequence[float], alternative: Alternative) -> float:
    """Mann-Whitney U test that ``x`` tends to be greater (less) than ``y``, as scipy's
    default: the exact null distribution of U when a sample has at most 8 values and there
    are no ties, else the normal approximation with tie and continuity corrections."""
    n1, n2 = len(x), len(y)
    ranks, ties = _average_ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = u1 if alternative == "greater" else n1 * n2 - u1
    if (n1 > 8 and n2 > 8) or any(t > 1 for t in ties):
        n = n1 + n2
        tie_term = sum(t ** 3 - t for t in ties)
        spread = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        if spread == 0:
            return 1.0                  # every value equal: no evidence either way
        return min(1.0, 0.5 * math.erfc((u - n1 * n2 / 2 - 0.5) / spread / math.sqrt(2)))
    return min(1.0, _u_at_least(round(u), n1, n2))


def _average_ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """1-based ranks, tied values sharing their average rank; and the size of each tie group."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    groups = []
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2 + 1
        groups.append(end - start + 1)
        start = end + 1
    return ranks, groups


def _u_at_least(u: int, n1: int, n2: int) -> float:
    """P(U >= u) under the null: the counts of U are the coefficients of the Gaussian
    binomial [n1 + n2 choose n1](q) = prod_i (1 - q^(n2 + i)) / (1 - q^i), built exactly in
    integers."""
    counts = [1] + [0] * (n1 * n2)
    for i in range(1, n1 + 1):
        for k in range(len(counts) - 1, n2 + i - 1, -1):
            counts[k] -= counts[k - n2 - i]
        for k in range(i, len(counts)):
            counts[k] += counts[k - i]
    return sum(counts[max(u, 0):]) / math.comb(n1 + n2, n1)
