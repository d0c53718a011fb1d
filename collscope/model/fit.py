"""Robust alpha-beta fits of one group of measurements (pure: samples in, fit out).

A group is one collective on one layout (N nodes x R ranks). Its model is
``t(S) = alpha + S x f(n) / B`` (see ``formulas``), fitted in log space: the residual of a row
is ``log(t_measured / t_model)``, so a 1 MiB row and an 8 GiB row weigh alike by their relative
error. The fit is ``scipy.optimize.least_squares`` with the ``soft_l1`` loss (quadratic within
5 %, linear beyond, so one wild row cannot drag the line), with alpha >= 0 and B > 0.

Outlier rows are found with the MAD rule on local deviations: a row's deviation is its log
residual minus the median residual of its neighbourhood (the rows of its size and of the next
smaller and larger sizes, itself included), so that a curve the two-parameter model misfits
smoothly (NCCL's LL/LL128 protocols at small sizes) is not mistaken for bad rows. A row is an
outlier when its deviation exceeds 3.5 robust standard deviations (1.4826 x the median absolute
deviation of all deviations) and 10 %, its own residual also exceeds 10 %, and no other row of
its size (the other placement, another run) agrees with it within 10 %: repeats that agree
show the system. Rows are flagged worst first, each leaving the neighbourhoods before the next
is judged. Outliers (at most a third of the rows) are reported and left out of one refit.

B is *identified* only when the data show time growing with size: the least-squares slope
of log(time) against log(size) over the fitted rows is > 0 with a one-sided t-test p < 0.01
(scipy.stats.linregress; in log space, as the fit, so relative noise weighs alike; a t-test
rather than a rank test because two sizes measured twice each can show growth far beyond
their repeat noise, which no rank test of 4 rows can), and the solver did not leave 1/B at
its lower bound. Otherwise (a sweep whose times fall or stay flat as size grows, too few
rows to tell) the solver's value is no bandwidth: the group keeps its alpha, ``busbw_gbs``
is None and ``busbw_unidentified`` says why; predictions that need that B refuse (costmodel).

Before any of that, tail runs are set apart (``spread``): a run of a layout much slower than
the other runs at the same sizes is reported as a tail run and left out of the fit and the band.

The typical band at a size is the fit's misfit there plus the typical run-to-run spread:
the misfit of a size is ``log(median inlier time of the size / model)``; its range is the 5th-95th
percentile over the fitted sizes, widened to the misfits of the fitted sizes within a factor of
``NEIGHBOURHOOD`` of the predicted size (a size near a protocol switch is misfitted more than the
group as a whole) and to 0; to that the 5th and 95th percentile of the ratios to their
repeats' median of the rows of the sizes within ``NEIGHBOURHOOD`` of the predicted size are
added (``spread.spread_at``: a small size's run-to-run spread says nothing of a large one's).
Where no size was measured in more than one run, the in-place/out-of-place spread over all
sizes stands in at every size (one run's placements say nothing of the next run).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from collscope.collectives.table import bus_factor
from collscope.model.spread import (
    SPREAD_ACROSS_RUNS,
    TAIL_METHOD,
    TailRun,
    repeat_ratios,
    spread_at,
    tail_runs,
    typical_spread,
)
from collscope.stats.fits import rising_slope
from collscope.stats.summary import MAD_TO_SIGMA, quantile

SOFT_L1_SCALE = 0.05      # log residual where the soft_l1 loss turns linear (~5 %)
MAD_LIMIT = 3.5           # robust standard deviations
OUTLIER_FLOOR = math.log(1.10)
METHOD = ("least squares on log(time) (scipy.optimize.least_squares, soft_l1 loss, f_scale "
          f"{SOFT_L1_SCALE}); outliers: |log residual - median of its size neighbourhood| > "
          f"{MAD_LIMIT} x 1.4826 x MAD and > 10 % (flagged rows leave the neighbourhoods, worst "
          "first), and |log residual| > 10 %; refitted once without them")
NEIGHBOURHOOD = 4         # fitted sizes within this factor of a size are its neighbours
BAND_METHOD = ("typical band: the fit's misfit (log of the median time of each fitted size over "
               "the model; 5th-95th percentile over the sizes, widened to the sizes within "
               f"{NEIGHBOURHOOD}x of the predicted one) plus the 5th-95th percentile of the "
               f"ratios to their repeats' median of the rows of the sizes within {NEIGHBOURHOOD}x "
               "of the predicted one (run-to-run where a size and placement was measured in "
               "more than one run; otherwise in-place and out-of-place rows pooled, over all "
               f"sizes, said per group); tail runs left out ({TAIL_METHOD}); not extrapolation "
               "error (model check measures that)")
GROWTH_ALPHA = 0.01       # slope test that time grows with size: B identified below it
GROWTH_METHOD = (f"B identified when the slope of log time against log size over the fitted "
                 f"rows is > 0 by a one-sided t-test (scipy.stats.linregress) at p < "
                 f"{GROWTH_ALPHA:g} and 1/B is not at the solver's bound")


class FitError(ValueError):
    """A group that cannot be fitted; the message says why."""


@dataclass(frozen=True)
class Sample:
    """One measured row: bytes (nccl-tests size column), mean time per op, where it came from."""

    size_bytes: int
    time_us: float
    source: str = ""
    run: str = ""                 # the run it was measured in (repeats across runs: the spread)
    placement: str = ""           # in-place / out-of-place


@dataclass
class Outlier:
    size_bytes: int
    time_us: float
    model_us: float
    error_pct: float              # (measured / model - 1) x 100
    source: str


@dataclass
class GroupFit:
    alpha_us: float
    busbw_gbs: float | None       # None: unidentified (busbw_unidentified says why)
    rows: int                     # rows the final fit used
    sizes: int                    # distinct sizes among them
    min_bytes: int
    max_bytes: int
    residual_p05: float           # log(measured / model) percentiles of the inliers
    residual_p95: float
    residual_rms: float
    max_error_pct: float          # largest |measured / model - 1| of the inliers, in %
    repeat_low: float             # 5th / 95th percentile of log(time / its repeats' median),
    repeat_high: float            # over all sizes (band_at takes the sizes near its own)
    band_low: float               # typical band over all sizes: prediction x exp(band_low) ..
    band_high: float              # x exp(band_high) (band_at: the band at one size)
    misfits: list[tuple[int, float]] = field(default_factory=list)  # (size, log median / model)
    # (size, log time / its repeats' median) of every row with repeats; a model file written
    # before these were kept has none, and its bands use repeat_low/high at every size.
    repeat_ratios: list[tuple[int, float]] = field(default_factory=list)
    runs: int = 1                 # distinct runs among the rows, tail runs included
    tails: list[TailRun] = field(default_factory=list)   # runs left out: much slower
    outliers: list[Outlier] = field(default_factory=list)
    method: str = METHOD
    spread_method: str = ""       # what repeat_low/high compare (spread.SPREAD_ACROSS_RUNS, ...)
    size_trend_slope: float | None = None  # of log time against log size (inliers)
    size_trend_p: float | None = None      # one-sided t-test p that it is > 0
    busbw_unidentified: str = ""  # why B is not identified; "" when it is

    @property
    def identified(self) -> bool:
        return self.busbw_gbs is not None and not self.busbw_unidentified

    def band_at(self, size_bytes: int) -> tuple[float, float]:
        """(low, high) log factors of the typical band at ``size_bytes``."""
        low, high = _misfit_range(self.misfits, size_bytes)
        repeat_low, repeat_high = (spread_at(self.repeat_ratios, size_bytes, NEIGHBOURHOOD)
                                   if self.repeat_ratios else (self.repeat_low, self.repeat_high))
        return low + repeat_low, high + repeat_high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupFit:
        values = dict(data)
        values["outliers"] = [Outlier(**o) for o in values.get("outliers", [])]
        values["tails"] = [TailRun(**t) for t in values.get("tails", [])]
        values["misfits"] = [(int(size), float(m)) for size, m in values.get("misfits", [])]
        values["repeat_ratios"] = [(int(size), float(r))
                                   for size, r in values.get("repeat_ratios", [])]
        return cls(**values)


def _misfit_range(misfits: Sequence[tuple[int, float]], size_bytes: int | None,
                  ) -> tuple[float, float]:
    """The misfit range at a size (None: over all sizes), bracketing 0: the 5th-95th
    percentile over every fitted size, widened to the fitted sizes within NEIGHBOURHOOD x of
    it (or the nearest fitted size where none is that close)."""
    if not misfits:
        return 0.0, 0.0
    values = [m for _, m in misfits]
    low, high = quantile(values, 0.05), quantile(values, 0.95)
    if size_bytes is not None:
        near = [m for s, m in misfits if size_bytes / NEIGHBOURHOOD <= s <= size_bytes
                * NEIGHBOURHOOD]
        if not near:
            nearest = min(misfits, key=lambda item: abs(math.log(item[0] / size_bytes)))
            near = [nearest[1]]
        low, high = min(low, *near), max(high, *near)
    return min(low, 0.0), max(high, 0.0)


def _x(samples: Sequence[Sample], factor: float) -> list[float]:
    return [s.size_bytes * factor / 1e3 for s in samples]


def _model(alpha: float, inverse_bw: float, x: Sequence[float]) -> list[float]:
    return [alpha + xi * inverse_bw for xi in x]


def _robust_fit(x: Sequence[float], t: Sequence[float]) -> tuple[float, float, bool]:
    """(alpha_us, 1/B, whether 1/B ended at its lower bound) minimising the soft_l1 loss of
    log residuals; x = S f(n) / 1e3."""
    import numpy as np
    from scipy.optimize import least_squares, nnls

    xs, ts = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
    # Start from the non-negative least-squares fit of relative errors.
    start, _ = nnls(np.column_stack([1 / ts, xs / ts]), np.ones_like(ts))
    # Scales make both unknowns ~1 for the solver (alpha ~ smallest time, 1/B ~ t/x).
    alpha_scale = float(ts.min())
    inv_scale = float(np.median(ts / xs))
    x0 = [max(start[0] / alpha_scale, 1e-6), max(start[1] / inv_scale, 1e-6)]

    def residuals(p: Any) -> Any:
        return np.log(p[0] * alpha_scale + xs * p[1] * inv_scale) - np.log(ts)

    solution = least_squares(residuals, x0, bounds=([0.0, 1e-12], [np.inf, np.inf]),
                             loss="soft_l1", f_scale=SOFT_L1_SCALE, xtol=1e-14, ftol=1e-14,
                             gtol=1e-14, max_nfev=2000)
    # active_mask -1: the lower bound holds 1/B (any smaller would fit as well or better).
    return (float(solution.x[0] * alpha_scale), float(solution.x[1] * inv_scale),
            bool(solution.active_mask[1] == -1))


def _size_trend(rows: Sequence[Sample]) -> tuple[float, float]:
    """(slope of log time against log size, its one-sided t-test p that it is > 0)."""
    return rising_slope([math.log(s.size_bytes) for s in rows],
                        [math.log(s.time_us) for s in rows])


def _unidentified(slope: float, p: float, rows: int, at_bound: bool) -> str:
    """Why the rows do not identify B, or "" when they do."""
    if math.isnan(slope):
        return (f"{rows} rows: too few to test that time grows with size (the slope test "
                "needs >= 3)")
    test = (f"slope of log time against log size {slope:+.3g} over {rows} rows, one-sided "
            f"t-test p={p:.2g}")
    if slope <= 0:
        return f"time does not grow with size ({test})"
    if p >= GROWTH_ALPHA:
        return f"time does not grow with size beyond chance ({test} >= {GROWTH_ALPHA:g})"
    if at_bound:
        return "1/B is at the solver's bound (the fit has no use for a size term)"
    return ""


def fit_group(samples: Sequence[Sample], collective: str, world_size: int) -> GroupFit:
    """The robust alpha-beta fit of one group; FitError when it has no usable rows."""
    rows = [s for s in samples if s.size_bytes > 0 and s.time_us > 0 and math.isfinite(s.time_us)]
    if not rows:
        raise FitError("no rows with a size > 0 and a time > 0")
    factor = bus_factor(collective, world_size)
    runs = len({s.run for s in rows})
    tails = tail_runs(rows)
    rows = [s for s in rows if s.run not in {t.run for t in tails}]
    if len({s.size_bytes for s in rows}) < 2:
        raise FitError(f"one size only ({rows[0].size_bytes} bytes): alpha and B need two")
    # One pass: flag against the robust fit of all rows, then refit the rest. (Repeating it
    # would shrink the scale each round and peel off the model's own smooth misfit.)
    alpha, inverse, at_bound = _robust_fit(_x(rows, factor), [s.time_us for s in rows])
    model = _model(alpha, inverse, _x(rows, factor))
    residuals = [math.log(s.time_us / m) for s, m in zip(rows, model)]
    flagged = _flag_outliers(rows, residuals)
    inliers = [s for i, s in enumerate(rows) if i not in set(flagged)]
    if len({s.size_bytes for s in inliers}) < 2:
        inliers, flagged = list(rows), []
    if flagged:
        alpha, inverse, at_bound = _robust_fit(_x(inliers, factor),
                                               [s.time_us for s in inliers])
    model = _model(alpha, inverse, _x(inliers, factor))
    residuals = [math.log(s.time_us / m) for s, m in zip(inliers, model)]
    repeat_low, repeat_high, spread_method = typical_spread(inliers)
    misfits = _misfits(inliers, alpha, inverse, factor)
    misfit_low, misfit_high = _misfit_range(misfits, None)
    # Outliers against the final line, so their errors are what the reader checks by hand.
    outliers = []
    for i in sorted(flagged, key=lambda i: rows[i].size_bytes):
        row = rows[i]
        expected = _model(alpha, inverse, _x([row], factor))[0]
        outliers.append(Outlier(row.size_bytes, row.time_us, expected,
                                (row.time_us / expected - 1) * 100, row.source))
    slope, trend_p = _size_trend(inliers)
    why = _unidentified(slope, trend_p, len(inliers), at_bound)
    return GroupFit(
        alpha_us=alpha, busbw_gbs=None if why else 1.0 / inverse, rows=len(inliers),
        sizes=len({s.size_bytes for s in inliers}),
        min_bytes=min(s.size_bytes for s in inliers), max_bytes=max(s.size_bytes for s in inliers),
        residual_p05=quantile(residuals, 0.05), residual_p95=quantile(residuals, 0.95),
        residual_rms=math.sqrt(sum(r * r for r in residuals) / len(residuals)),
        max_error_pct=max(abs(math.expm1(r)) for r in residuals) * 100,
        repeat_low=repeat_low, repeat_high=repeat_high, band_low=misfit_low + repeat_low,
        band_high=misfit_high + repeat_high, misfits=misfits, runs=runs, tails=tails,
        outliers=outliers, spread_method=spread_method,
        repeat_ratios=_per_size_spread(inliers, spread_method),
        size_trend_slope=None if math.isnan(slope) else slope,
        size_trend_p=trend_p, busbw_unidentified=why)


def _per_size_spread(inliers: Sequence[Sample], spread_method: str) -> list[tuple[int, float]]:
    """The rows' ratios to their repeats' median, for bands per size: only where those are
    repeats across runs. Placements of one run are no run-to-run spread (at 1 GiB in-place and
    out-of-place agree within 0.1 %, whatever the next run does): there the spread over all
    sizes stands in at every size."""
    if spread_method != SPREAD_ACROSS_RUNS:
        return []
    return [(size, round(ratio, 6)) for size, ratio in repeat_ratios(inliers)[0]]


def _confirmed(rows: Sequence[Sample], index: int) -> bool:
    """Whether another row of the same size (the other placement, another run) agrees with
    this one within 10 %: two measurements that agree show the system, not a glitch."""
    row = rows[index]
    return any(j != index and other.size_bytes == row.size_bytes
               and abs(math.log(other.time_us / row.time_us)) <= OUTLIER_FLOOR
               for j, other in enumerate(rows))


def _flag_outliers(rows: Sequence[Sample], residuals: Sequence[float]) -> list[int]:
    """Indices of the outlier rows, worst first. One at a time: the row that deviates most from
    its neighbourhood, among those past the MAD limit and the floor whose own residual from the
    fit is also past the floor (a row 5 % off the fit is no outlier, whatever its neighbours
    do) and that no repeat confirms; then the deviations again with it out of every
    neighbourhood, so one wild row does not make its sane neighbours look wild. The MAD scale
    is that of all rows (recomputing it would shrink it each round)."""
    sizes = [s.size_bytes for s in rows]
    scale = MAD_TO_SIGMA * quantile([abs(d) for d in _local_deviations(sizes, residuals)], 0.5)
    flagged: list[int] = []
    while len(flagged) < len(rows) // 3:
        deviations = _local_deviations(sizes, residuals, set(flagged))
        candidates = [i for i, d in enumerate(deviations)
                      if i not in flagged and abs(d) > MAD_LIMIT * scale
                      and abs(d) > OUTLIER_FLOOR and abs(residuals[i]) > OUTLIER_FLOOR
                      and not _confirmed(rows, i)]
        if not candidates:
            break
        flagged.append(max(candidates, key=lambda i: abs(deviations[i])))
    return flagged


def _local_deviations(sizes: Sequence[int], residuals: Sequence[float],
                      excluded: set[int] | frozenset[int] = frozenset()) -> list[float]:
    """Each residual minus the median residual of its neighbourhood: the rows of its own size
    and of the next smaller and larger sizes measured (itself included, ``excluded`` rows left
    out). A row the model misfits together with its neighbours (a protocol change at small
    sizes) deviates little; a row that disagrees with its neighbours deviates much."""
    distinct = sorted(set(sizes))
    position = {size: i for i, size in enumerate(distinct)}
    by_position: dict[int, list[float]] = defaultdict(list)
    for i, (size, r) in enumerate(zip(sizes, residuals)):
        if i not in excluded:
            by_position[position[size]].append(r)
    deviations = []
    for size, r in zip(sizes, residuals):
        p = position[size]
        window = [v for q in (p - 1, p, p + 1) for v in by_position.get(q, [])] or [r]
        deviations.append(r - quantile(window, 0.5))
    return deviations


def _misfits(rows: Sequence[Sample], alpha: float, inverse: float, factor: float,
             ) -> list[tuple[int, float]]:
    """(size, log(median time of the size's rows / model)) per size: the fit's own error,
    with the run-to-run and placement noise of a size's repeats taken out by the median."""
    by_size: dict[int, list[float]] = defaultdict(list)
    for s in rows:
        by_size[s.size_bytes].append(s.time_us)
    return [(size, math.log(quantile(times, 0.5) / (alpha + size * factor / 1e3 * inverse)))
            for size, times in sorted(by_size.items())]
