"""Run-to-run spread of one group: tail runs set apart, the typical spread of the rest (pure).

Repeated runs of one layout mostly agree; now and then one is much slower (a busy fabric, a
throttled GPU, a neighbour's job). Folding that run into one band makes the band say nothing
("0.4x-10x"); dropping it silently hides a risk. So the spread has two parts:

- **Tail runs.** A run's slowdown is the median, over its rows, of ``time / median time of
  the runs`` at the same size and placement (itself included: with three runs, the median of
  the other two would be their midpoint, and a fast run would make a typical one look slow).
  A run is a tail run when its log slowdown exceeds ``TAIL_LIMIT`` robust standard
  deviations of all rows' log ratios (1.4826 x MAD) and 10 %, worst first, each flagged run
  leaving the medians, and at most
  ``(runs - 1) // 2`` of them: a majority of the runs stays typical, so two runs that disagree
  mark neither (the band then covers both). Only slower runs are tail runs: interference
  slows a collective down, nothing speeds one up beyond what the system does.
- **Typical spread.** Of the remaining rows grouped by size and placement over distinct runs:
  the 5th and 95th percentiles of ``log(time / median of its group)``. Where no size was
  measured in more than one run, a size's in-place and out-of-place rows are pooled instead
  (and the method says so): that compares placements, the only repeats one run holds.
- **Spread at a size.** A band at one size takes those percentiles over the rows of the sizes
  near it only (within a factor ``near`` of it; the nearest size's rows where none is that
  close), as the fit's misfit is taken: on a congested fabric an 8 KiB all_reduce varies by
  several times from run to run while a 1 GiB one varies by a few per cent, and the small
  sizes' spread pooled into the large ones' band would make that band say nothing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from collscope.stats.summary import quantile

TAIL_LIMIT = 3.5            # robust standard deviations of the rows' run-to-median log ratios
TAIL_FLOOR = math.log(1.10)  # a run less than 10 % slower than the others is typical
TAIL_METHOD = (f"a run is a tail run when the median over its rows of time / median of the "
               f"runs (same size and placement) exceeds {TAIL_LIMIT} x 1.4826 x MAD of all "
               "rows' log ratios and 1.10x, worst first, at most (runs - 1) // 2 of a layout's "
               "runs (a majority stays typical)")
SPREAD_ACROSS_RUNS = "run-to-run spread (same size and placement in distinct runs)"
SPREAD_POOLED = ("in-place vs out-of-place spread (no size repeated across runs: placements "
                 "pooled)")
SPREAD_NONE = "no repeated sizes"


class Row(Protocol):
    """What the spread needs of a measured row (``fit.Sample``)."""

    @property
    def size_bytes(self) -> int: ...
    @property
    def time_us(self) -> float: ...
    @property
    def run(self) -> str: ...
    @property
    def placement(self) -> str: ...


@dataclass
class TailRun:
    run: str                 # the run's label (input file, run record)
    slowdown: float          # median of time / the runs' median time, over its rows
    rows: int                # rows it measured, all left out of the fit and the band


def _by_cell(rows: Sequence[Row]) -> dict[tuple[int, str], list[Row]]:
    cells: dict[tuple[int, str], list[Row]] = defaultdict(list)
    for row in rows:
        cells[(row.size_bytes, row.placement)].append(row)
    return cells


def _run_ratios(rows: Sequence[Row], excluded: set[str]) -> dict[str, list[float]]:
    """Per run not excluded, the log ratios of its rows to the median of the not excluded
    rows of the same size and placement; rows that no other run measured are left out."""
    ratios: dict[str, list[float]] = defaultdict(list)
    for cell in _by_cell(rows).values():
        kept = [row for row in cell if row.run not in excluded]
        if len({row.run for row in kept}) < 2:
            continue
        median = quantile([row.time_us for row in kept], 0.5)
        for row in kept:
            ratios[row.run].append(math.log(row.time_us / median))
    return ratios


def tail_runs(rows: Sequence[Row]) -> list[TailRun]:
    """The tail runs of one group's rows, worst first (see the module doc)."""
    runs = {row.run for row in rows}
    everything = [r for values in _run_ratios(rows, set()).values() for r in values]
    if len(runs) < 3 or not everything:
        return []
    median = quantile(everything, 0.5)
    scale = 1.4826 * quantile([abs(r - median) for r in everything], 0.5)
    limit = max(TAIL_FLOOR, TAIL_LIMIT * scale)
    tails: list[TailRun] = []
    while len(tails) < (len(runs) - 1) // 2:
        flagged = {t.run for t in tails}
        slowdowns = {run: quantile(values, 0.5)
                     for run, values in _run_ratios(rows, flagged).items()}
        worst = max(slowdowns, key=lambda run: (slowdowns[run], run), default=None)
        if worst is None or slowdowns[worst] <= limit:
            break
        tails.append(TailRun(worst, math.exp(slowdowns[worst]),
                             sum(row.run == worst for row in rows)))
    return tails


def repeat_ratios(rows: Sequence[Row]) -> tuple[list[tuple[int, float]], str]:
    """(size, log(time / median of its repeats)) of every row that has repeats, and what the
    repeats are (SPREAD_ACROSS_RUNS, SPREAD_POOLED or SPREAD_NONE)."""
    cells = [cell for cell in _by_cell(rows).values() if len({r.run for r in cell}) > 1]
    method = SPREAD_ACROSS_RUNS
    if not cells:
        pooled: dict[int, list[Row]] = defaultdict(list)
        for row in rows:
            pooled[row.size_bytes].append(row)
        cells, method = [cell for cell in pooled.values() if len(cell) > 1], SPREAD_POOLED
    ratios = [(row.size_bytes, math.log(row.time_us / quantile([r.time_us for r in cell], 0.5)))
              for cell in cells for row in cell]
    return ratios, method if ratios else SPREAD_NONE


def _bracketing(values: Sequence[float]) -> tuple[float, float]:
    return min(quantile(values, 0.05), 0.0), max(quantile(values, 0.95), 0.0)


def typical_spread(rows: Sequence[Row]) -> tuple[float, float, str]:
    """(5th, 95th percentile of the rows' log ratios to their repeats' median, the method);
    (0, 0, SPREAD_NONE) without repeats. The bounds bracket 0."""
    ratios, method = repeat_ratios(rows)
    if not ratios:
        return 0.0, 0.0, SPREAD_NONE
    return (*_bracketing([ratio for _, ratio in ratios]), method)


def spread_at(ratios: Sequence[tuple[int, float]], size_bytes: int, near: float,
              ) -> tuple[float, float]:
    """The 5th and 95th percentile (bracketing 0) of the ratios of the sizes within a factor
    ``near`` of ``size_bytes``, or of the nearest size's where none is that close."""
    if not ratios:
        return 0.0, 0.0
    close = [ratio for size, ratio in ratios if size_bytes / near <= size <= size_bytes * near]
    if not close:
        nearest = min({size for size, _ in ratios},
                      key=lambda size: abs(math.log(size / size_bytes)))
        close = [ratio for size, ratio in ratios if size == nearest]
    return _bracketing(close)
