"""The one statistics layer: every estimate and test behind a collscope figure or decision.

- ``summary``: quantiles, nccl-tests' nearest-rank percentiles, per-iteration stats, IQR, MAD.
- ``intervals``: confidence intervals (distribution-free median CIs, the t-interval of a mean).
- ``significance``: the binomial and rank tests (late rank, Wilcoxon signed-rank,
  Mann-Whitney U).
- ``fits``: slopes (Theil-Sen with its CI, least squares with its one-sided t-test).

Pure functions over plain sequences; scipy (a dependency) is imported where it is used so
commands that never test anything start without it.
"""
