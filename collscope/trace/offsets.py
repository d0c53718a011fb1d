"""Each rank's clock against the reference rank's, fitted to the ends of synchronising calls
(pure; :mod:`clock` says why the ends coincide, and decides whether to apply the result).

The model: at reference time t, rank r's clock reads t + offset_r + drift_r (t - t0), t0 the
earliest end used (on the reference's clock). Hosts disciplined by NTP drift by tens of ppm
(100 us over 10 s), so on long traces a constant offset leaves a trend in the residuals.

Direct (at least MIN_CALLS calls span every rank): per rank, the end differences
d = end_r - end_ref over those calls against x = end_ref - t0. The drift is the Theil-Sen
slope of d on x (``stats.fits.theil_sen``, its distribution-free 95% CI); the offset is the
median of d - drift x with its distribution-free CI (``stats.intervals.median_ci``): with no
drift applied, exactly the median of d, as before the drift term existed.

Chained (fewer calls span every rank: groups such as tensor-parallel pairs {0,1},{2,3} and
data-parallel groups {0,2},{1,3}): every pair of ranks sharing at least MIN_CALLS calls gives
an edge, its median end difference (and Theil-Sen slope); the offsets (and drifts) of all
ranks against the reference are the weighted least-squares solution over that graph, weights
1 / the variance of each edge's estimate (median: pi/2 (1.4826 MAD)^2 / n; slope: from its
CI's width), CIs normal from the solve (scaled up by the reduced chi-square when the edges
disagree more than their variances say). Ranks that no chain of edges links to the reference
are not estimable.

A drift is applied only when established (DRIFT_RULE): its CI excludes 0, and the bound of
the CI nearest 0, over the span of the rank's calls, moves the aligned times by more than the
rank's residual spread under the drift model. Otherwise the rank keeps the constant offset.
The spread is always that of the model applied: the median |residual| of the rank's end
differences (direct: the MAD about its offset, as before).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from collscope.stats.summary import MAD_TO_SIGMA, mad

Ends = list[dict[int, float]]     # per synchronising call: rank -> its end, own clock (us)
Pair = tuple[int, int]            # (lower rank, higher rank)

MIN_CALLS = 3                 # fewer shared synchronising calls: no estimate (a median and a
                              # MAD of 1-2 values say nothing about agreement)
CONFIDENCE = 0.95
Z = 1.959963984540054         # two-sided 95% normal quantile (chained CIs)
MEDIAN_VARIANCE = math.pi / 2 * MAD_TO_SIGMA ** 2   # var(median) ~ this x MAD^2 / n (normal jitter)
MAX_FIT_CALLS = 1000          # Theil-Sen is O(n^2): longer series are thinned evenly in time
MAD_FLOOR_US = 1e-3           # edge weights of ends that agree exactly stay finite
SLOPE_SE_FLOOR = 1e-12

DRIFT_RULE = (
    "drift: end_r - end_ref = offset + drift x (end_ref - t0), t0 the earliest end used, "
    "fitted by Theil-Sen (95% CI; chained: per pair of ranks, solved over the graph like the "
    "offsets); applied only when its CI excludes 0 and the CI's bound nearest 0 times the span "
    "of the rank's calls exceeds the rank's residual spread under the drift model; else the "
    "constant offset")


@dataclass
class RankOffset:
    rank: int
    offset_us: float              # this rank's clock minus the reference's (at origin_us when
                                  # a drift is applied)
    ci_low_us: float              # direct: distribution-free CI of the median; chained: normal
    ci_high_us: float
    ci_confidence: float
    spread_us: float              # median |residual| of its end differences, model applied
    calls: int
    drift_ppm: float | None = None            # Theil-Sen slope x 1e6; None: not estimated
    drift_ci_ppm: list[float] = field(default_factory=list)
    drift_applied: bool = False               # part of this rank's model (DRIFT_RULE)
    drift_decision: str = ""                  # why (not) applied, with the numbers
    origin_us: float = 0.0                    # t0, on the reference's clock
    span_us: float = 0.0                      # reference time between its first and last call

    def shift_us(self, at_us: float) -> float:
        """What to subtract from this rank's time ``at_us`` (its own clock) to put it on the
        reference's clock: offset + drift (t_ref - t0), solved for t_ref exactly."""
        if not self.drift_applied or self.drift_ppm is None:
            return self.offset_us
        drift = self.drift_ppm * 1e-6
        # Differences first: trace times are ~1e15 us, where float64 resolves 0.25 us.
        since_origin = (at_us - self.origin_us - self.offset_us) / (1 + drift)
        return self.offset_us + drift * since_origin


@dataclass
class Estimate:
    offsets: list[RankOffset]     # the reference and every rank linked to it; [] none
    chained: bool                 # through sub-groups (no MIN_CALLS calls span every rank)
    unreachable: list[int]        # ranks no chain of shared calls links to the reference
    calls: int                    # synchronising calls used


@dataclass
class _Edge:
    low: int
    high: int
    x: list[float]                # low rank's end, aligned (pass 1), minus t0
    d: list[float]                # high rank's end minus low rank's

    def residuals(self, offset: dict[int, float], drift: dict[int, float]) -> list[float]:
        slope = drift[self.high] - drift[self.low]
        base = offset[self.high] - offset[self.low]
        return [d - base - slope * x for x, d in zip(self.x, self.d)]


def estimate(ends: Ends, ranks: list[int]) -> Estimate:
    """Offsets (and drifts where established) of ``ranks`` against the lowest of them."""
    if not ranks:
        return Estimate([], False, [], 0)
    ranks = sorted(ranks)
    reference = ranks[0]
    full = [c for c in ends if all(r in c for r in ranks)]
    chained = len(full) < MIN_CALLS and len(ranks) > 1
    used = [c for c in ends if len(c) >= 2] if chained else full
    pairs: dict[Pair, list[tuple[float, float]]] = {}
    for call in used:
        members = sorted(call) if chained else [reference]
        for i in members:
            for j in (sorted(call) if chained else ranks[1:]):
                if j > i:
                    pairs.setdefault((i, j), []).append((call[i], call[j]))
    pairs = {p: e for p, e in pairs.items() if len(e) >= MIN_CALLS}
    reach = _component(reference, list(pairs))
    linked = [r for r in ranks if r in reach]
    unreachable = [r for r in ranks if r not in reach]
    if len(used) < MIN_CALLS or len(linked) < 2:
        return Estimate([], chained, unreachable, len(used))
    pairs = {p: e for p, e in pairs.items() if p[0] in reach}
    # Pass 1: constant offsets, to put each edge's x on the reference's clock.
    constant = _solve_offsets({p: [b - a for a, b in e] for p, e in pairs.items()}, linked,
                              chained)
    origin = min(a - constant[i][0] for (i, _), e in pairs.items() for a, _ in e)
    edges = [_Edge(i, j, [a - constant[i][0] - origin for a, _ in e], [b - a for a, b in e])
             for (i, j), e in pairs.items()]
    slopes = _solve_slopes(edges, linked, chained)
    candidates = {r: s[0] for r, s in slopes.items() if s[1] > 0 or s[2] < 0}
    tried = _Model(edges, linked, chained, candidates)     # every drift whose CI excludes 0
    applied = {r: b for r, b in candidates.items() if tried.established(r, slopes[r])}
    model = tried if applied == candidates else _Model(edges, linked, chained, applied)
    calls = {r: sum(1 for c in used if r in c and any(q in c for q in linked if q != r))
             for r in linked}
    offsets = []
    for r in linked:
        value, low, high, confidence = model.offsets[r]
        slope = slopes.get(r)
        offsets.append(RankOffset(
            r, value, low, high, confidence, model.spread(r), calls[r],
            None if slope is None else slope[0] * 1e6,
            [] if slope is None else [slope[1] * 1e6, slope[2] * 1e6], r in applied,
            _drift_decision(r, slope, tried, r in applied), origin, model.span(r)))
    return Estimate(offsets, chained, unreachable, len(used))


class _Model:
    """Offsets given each rank's drift (0 where not applied); their spreads and spans."""

    def __init__(self, edges: list[_Edge], ranks: list[int], chained: bool,
                 drifts: dict[int, float]) -> None:
        self.edges, self.reference, self.chained = edges, ranks[0], chained
        self.drift = {r: drifts.get(r, 0.0) for r in ranks}
        corrected = {(e.low, e.high): [d - (self.drift[e.high] - self.drift[e.low]) * x
                                       for x, d in zip(e.x, e.d)] for e in edges}
        self.offsets = _solve_offsets(corrected, ranks, chained)
        self.offset = {r: v[0] for r, v in self.offsets.items()}

    def spread(self, rank: int) -> float:
        """Median |residual| of the rank's end differences under this model (direct: the
        MAD about its offset; the reference's ends against themselves: 0)."""
        if rank == self.reference and not self.chained:
            return 0.0
        return statistics.median(abs(v) for e in self.edges if rank in (e.low, e.high)
                                 for v in e.residuals(self.offset, self.drift))

    def span(self, rank: int) -> float:
        xs = [x for e in self.edges if rank in (e.low, e.high) for x in e.x]
        return max(xs) - min(xs)

    def established(self, rank: int, slope: tuple[float, float, float]) -> bool:
        """DRIFT_RULE's second half (the first: the CI excludes 0)."""
        return min(abs(slope[1]), abs(slope[2])) * self.span(rank) > self.spread(rank)


def _drift_decision(rank: int, slope: tuple[float, float, float] | None, tried: _Model,
                    applied: bool) -> str:
    """Why the rank's drift is (not) applied, with the numbers DRIFT_RULE judged (the
    spread under the model with every drift whose CI excludes 0)."""
    if slope is None:
        return (f"not estimated: fewer than {MIN_CALLS} calls at distinct times"
                if rank != tried.reference else "reference")
    _, low, high = slope
    if not (low > 0 or high < 0):
        return (f"not applied: its {CONFIDENCE:.0%} CI {low * 1e6:+.3g}..{high * 1e6:+.3g} "
                "ppm includes 0")
    span, spread = tried.span(rank), tried.spread(rank)
    moved = min(abs(low), abs(high)) * span
    verdict, relation = ("applied", ">") if applied else ("not applied", "<=")
    return (f"{verdict}: CI {low * 1e6:+.3g}..{high * 1e6:+.3g} ppm excludes 0, and its bound "
            f"nearest 0 over the {span / 1e6:.3g} s spanned moves the aligned times by "
            f"{moved:.3g} us {relation} the residual spread {spread:.3g} us")


def _component(start: int, pairs: list[Pair]) -> set[int]:
    """Ranks linked to ``start`` through pairs that share enough calls."""
    neighbours: dict[int, set[int]] = {}
    for i, j in pairs:
        neighbours.setdefault(i, set()).add(j)
        neighbours.setdefault(j, set()).add(i)
    seen, todo = {start}, [start]
    while todo:
        for other in neighbours.get(todo.pop(), set()) - seen:
            seen.add(other)
            todo.append(other)
    return seen


def _solve_offsets(diffs: dict[Pair, list[float]], ranks: list[int], chained: bool,
                   ) -> dict[int, tuple[float, float, float, float]]:
    """Per rank (offset, CI low, CI high, confidence) from each pair's end differences:
    direct, the median of the rank's differences against the reference and its
    distribution-free CI; chained, the graph solve of the pairs' medians."""
    from collscope.stats.intervals import median_ci

    reference = ranks[0]
    if not chained:
        result = {}
        for r in ranks:
            ci = median_ci(diffs[(reference, r)] if r != reference else
                           [0.0] * len(next(iter(diffs.values()))))
            result[r] = (ci.median, ci.low, ci.high, ci.confidence)
        return result
    edges = []
    for (i, j), d in diffs.items():
        centre = statistics.median(d)
        spread = mad(d, centre)
        edges.append((i, j, centre,
                      math.sqrt(MEDIAN_VARIANCE * max(spread, MAD_FLOOR_US) ** 2 / len(d))))
    return {r: (v, v - Z * se, v + Z * se, CONFIDENCE)
            for r, (v, se) in solve_graph(edges, ranks).items()}


def _solve_slopes(edges: list[_Edge], ranks: list[int], chained: bool,
                  ) -> dict[int, tuple[float, float, float]]:
    """Per rank (drift, CI low, CI high), unitless; ranks without one left out."""
    from collscope.stats.fits import theil_sen

    fits: dict[Pair, tuple[float, float, float]] = {}
    for e in edges:
        order = sorted(range(len(e.x)), key=lambda k: e.x[k])
        if len(order) > MAX_FIT_CALLS:
            step = (len(order) - 1) / (MAX_FIT_CALLS - 1)
            order = [order[round(k * step)] for k in range(MAX_FIT_CALLS)]
        xs, ds = [e.x[k] for k in order], [e.d[k] for k in order]
        if len(set(xs)) >= 2:
            fit = theil_sen(xs, ds, CONFIDENCE)
            fits[(e.low, e.high)] = (fit.slope, fit.low, fit.high)
    reference = ranks[0]
    if not chained:
        return {r: fits[(reference, r)] for r in ranks[1:] if (reference, r) in fits}
    linked = _component(reference, list(fits))
    graph = [(i, j, s, max((high - low) / (2 * Z), SLOPE_SE_FLOOR))
             for (i, j), (s, low, high) in fits.items() if i in linked]
    solved = solve_graph(graph, [r for r in ranks if r in linked]) if len(linked) > 1 else {}
    return {r: (v, v - Z * se, v + Z * se) for r, (v, se) in solved.items() if r != reference}


def solve_graph(edges: list[tuple[int, int, float, float]], ranks: list[int],
                ) -> dict[int, tuple[float, float]]:
    """Per rank (value, standard error), ``ranks[0]`` fixed at 0, minimising
    sum ((value_j - value_i - measured) / se)^2 over the edges (i, j, measured, se) of a
    connected graph; the errors scaled by sqrt(reduced chi-square) when that exceeds 1."""
    import numpy as np

    unknown = {r: k for k, r in enumerate(ranks[1:])}
    design = np.zeros((len(edges), len(unknown)))
    measured = np.zeros(len(edges))
    for row, (i, j, value, se) in enumerate(edges):
        if j in unknown:
            design[row, unknown[j]] += 1 / se
        if i in unknown:
            design[row, unknown[i]] -= 1 / se
        measured[row] = value / se
    solution, *_ = np.linalg.lstsq(design, measured, rcond=None)
    covariance = np.linalg.pinv(design.T @ design)
    dof = len(edges) - len(unknown)
    chi2 = float(np.sum((design @ solution - measured) ** 2))
    scale = max(1.0, chi2 / dof) if dof > 0 else 1.0
    result = {ranks[0]: (0.0, 0.0)}
    for r, k in unknown.items():
        result[r] = (float(solution[k]), math.sqrt(scale * float(covariance[k, k])))
    return result
