"""Hypothesis tests behind decisions: binomial (late rank) and rank tests (p-values)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Alternative = Literal["greater", "less"]


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


def signed_rank_p(differences: Sequence[float], alternative: Alternative = "greater") -> float:
    """Wilcoxon signed-rank test that the differences lie above (below) 0; zeros are dropped
    first, and with none left there is no evidence (p = 1)."""
    from scipy.stats import wilcoxon  # type: ignore[import-untyped]

    nonzero = [d for d in differences if d != 0]
    return float(wilcoxon(nonzero, alternative=alternative).pvalue) if nonzero else 1.0


def rank_sum_p(x: Sequence[float], y: Sequence[float], alternative: Alternative) -> float:
    """Mann-Whitney U test that ``x`` tends to be greater (less) than ``y``."""
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    return float(mannwhitneyu(x, y, alternative=alternative).pvalue)
