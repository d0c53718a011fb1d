"""Significance per size: is a configuration faster than the defaults beyond the noise?

Pure. Every trial measures every size once (bench's mean time per operation over its timed
loop). Within one round a configuration and the baseline ran back to back, so their times are
paired: the round's speed-up is ``baseline time / configuration time``. Over the rounds, the
speed-up's confidence interval is a Student t-interval on the mean of the log speed-ups
(scipy.stats.t), exponentiated: a ratio interval that is symmetric in log space, so 2x faster
and 2x slower are equally far from 1. A configuration is *faster* at a size when the whole
interval lies above 1 + ``min_gain`` (default 2%: a gain too small to be worth a change of
settings, and a margin against the few percent of intervals that miss by chance), *slower* when
it lies wholly below 1, otherwise *within noise*.

A sweep makes m = configurations x sizes comparisons with the baseline and names a winner
wherever one of them is "faster", so uncorrected 95% intervals would crown a configuration that
only got lucky (a null sweep of 10 configurations x 11 sizes names one about half the time).
Every interval is therefore computed at confidence 1 - (1 - c)/m (Bonferroni): with probability
at least c none of the m intervals misses, whatever the dependence between them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from collscope.collectives.table import bandwidths
from collscope.records.tune import TrialStatus, TuneVerdict
from collscope.stats.intervals import mean_ci_halfwidth
from collscope.tune.space import Config

CI_METHOD = ("t-interval on the mean log speed-up over paired rounds (scipy.stats.t); "
             "speed-up = baseline time / configuration time in the same round")

CORRECTION = "Bonferroni over the m = configurations x sizes comparisons of the sweep"

TIME_METHOD = "median over trials of bench's mean time per op (in place)"

Point = tuple[str, str, int]              # collective, dtype, size_bytes


@dataclass(frozen=True)
class Measurement:
    """One size of one trial, from bench's result record."""

    collective: str
    dtype: str
    size_bytes: int
    time_us: float
    world_size: int

    @property
    def point(self) -> Point:
        return (self.collective, self.dtype, self.size_bytes)


@dataclass
class Trial:
    """One bench job of one configuration."""

    index: int
    stage: int
    round: int
    position: int                 # place in its round
    config: Config
    status: Literal["pending"] | TrialStatus = "pending"
    reason: str = ""
    wall_s: float = 0.0
    file: str = ""
    measurements: list[Measurement] = field(default_factory=list)
    context: dict = field(default_factory=dict)   # the bench run record

    @property
    def pair_key(self) -> tuple[int, int]:
        return (self.stage, self.round)


@dataclass(frozen=True)
class Interval:
    ratio: float          # exp(mean log speed-up)
    low: float | None     # None with fewer than 2 rounds
    high: float | None
    rounds: int
    confidence: float = 0.95    # this interval's own level (Bonferroni-corrected in a sweep)


@dataclass
class Row:
    """One configuration at one size: its numbers, its speed-up over the baseline, the verdict."""

    config: Config
    collective: str
    dtype: str
    size_bytes: int
    world_size: int
    trials: int
    time_us: float        # median over its trials of bench's mean time per op
    algbw_gbs: float
    busbw_gbs: float
    interval: Interval | None       # None for the baseline
    verdict: TuneVerdict            # never "failed": failed configurations have no rows
    winner: bool = False

    @property
    def point(self) -> Point:
        return (self.collective, self.dtype, self.size_bytes)


def speedup_interval(pairs: Sequence[tuple[float, float]], confidence: float = 0.95,
                     ) -> Interval:
    """``pairs`` of (baseline time, configuration time), one per round."""
    logs = [math.log(base / time) for base, time in pairs]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n < 2:
        return Interval(math.exp(mean), None, None, n)
    half = mean_ci_halfwidth(logs, confidence)
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, confidence)


def corrected_confidence(confidence: float, comparisons: int) -> float:
    """Each interval's level so that all ``comparisons`` hold together with ``confidence``."""
    return 1 - (1 - confidence) / max(1, comparisons)


def comparisons(rows: Sequence[Row]) -> int:
    """m: the (configuration, size) comparisons with the baseline that ``rows`` judged."""
    return sum(1 for row in rows if row.interval is not None)


def significance(rows: Sequence[Row], confidence: float) -> str:
    """How sure the verdicts of ``rows`` are, for the printed report and the hand-over."""
    m = comparisons(rows)
    return (f"{confidence:.0%} family-wise, each interval at "
            f"{corrected_confidence(confidence, m) * 100:.6g}% ({CORRECTION}: m = {m})")


def verdict_of(interval: Interval, min_gain: float = 0.0) -> TuneVerdict:
    if interval.low is None or interval.high is None:
        return "too few rounds"
    if interval.low > 1.0 + min_gain:
        return "faster"
    if interval.high < 1.0:
        return "slower"
    return "within noise"


def analyse(trials: Sequence[Trial], baseline: Config, confidence: float = 0.95,
            min_gain: float = 0.0) -> list[Row]:
    """Rows for every configuration that ran without failing, per size, winners marked; the
    intervals at ``confidence`` family-wise over all of them (:data:`CORRECTION`)."""
    times: dict[Config, dict[Point, dict[tuple[int, int], float]]] = defaultdict(
        lambda: defaultdict(dict))
    world: dict[Point, int] = {}
    for trial in trials:
        if trial.status != "ok":
            continue
        for m in trial.measurements:
            if m.time_us > 0:
                times[trial.config][m.point][trial.pair_key] = m.time_us
                world[m.point] = m.world_size
    failed = {t.config for t in trials if t.status == "failed"}
    base_times = times.get(baseline, {})
    judged: list[tuple[Config, Point, dict[tuple[int, int], float],
                      list[tuple[float, float]]]] = []
    for config, by_point in times.items():
        if config in failed:
            continue
        for point, by_round in sorted(by_point.items()):
            pairs = [(base_times[point][key], t) for key, t in by_round.items()
                     if key in base_times.get(point, {})]
            if config == baseline or pairs:
                judged.append((config, point, by_round, pairs))
    level = corrected_confidence(confidence, sum(1 for c, *_ in judged if c != baseline))
    rows: list[Row] = []
    for config, point, by_round, pairs in judged:
        collective, dtype, size = point
        median = statistics.median(by_round.values())
        algbw, busbw = bandwidths(size, median, collective, world[point])
        interval = None
        verdict: TuneVerdict = "baseline"
        if config != baseline:
            interval = speedup_interval(pairs, level)
            verdict = verdict_of(interval, min_gain)
        rows.append(Row(config, collective, dtype, size, world[point], len(by_round),
                        median, algbw, busbw, interval, verdict))
    mark_winners(rows)
    return rows


def mark_winners(rows: Sequence[Row]) -> None:
    """Per size, the significantly faster configuration with the largest speed-up wins; where
    none is significantly faster, the baseline does."""
    by_point: dict[Point, list[Row]] = defaultdict(list)
    for row in rows:
        by_point[row.point].append(row)
    for group in by_point.values():
        faster = [r for r in group if r.verdict == "faster" and r.interval is not None]
        if faster:
            max(faster, key=lambda r: r.interval.ratio if r.interval else 0.0).winner = True
        else:
            for row in group:
                row.winner = row.verdict == "baseline"


def winners(rows: Sequence[Row]) -> dict[Point, Row]:
    return {row.point: row for row in rows if row.winner}


def score(rows: Sequence[Row], config: Config) -> float | None:
    """Geometric mean speed-up of ``config`` over the baseline across all its sizes."""
    ratios = [r.interval.ratio for r in rows if r.config == config and r.interval is not None]
    if not ratios:
        return 1.0 if any(r.config == config for r in rows) else None
    return math.exp(statistics.fmean(math.log(x) for x in ratios))


@dataclass(frozen=True)
class SizeRange:
    collective: str
    dtype: str
    sizes: tuple[int, ...]           # measured sizes in the range
    winner: Row                      # the winner at the range's largest size (same config)

    @property
    def config(self) -> Config:
        return self.winner.config


def winner_ranges(rows: Sequence[Row]) -> list[SizeRange]:
    """Consecutive sizes with the same winning configuration, per collective and dtype."""
    ranges: list[SizeRange] = []
    ordered = sorted(winners(rows).values(), key=lambda r: r.point)
    for row in ordered:
        last = ranges[-1] if ranges else None
        if (last and (last.collective, last.dtype) == (row.collective, row.dtype)
                and last.config == row.config):
            ranges[-1] = SizeRange(row.collective, row.dtype, (*last.sizes, row.size_bytes), row)
        else:
            ranges.append(SizeRange(row.collective, row.dtype, (row.size_bytes,), row))
    return ranges
