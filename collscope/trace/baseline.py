"""The cluster's measured curve: `collscope bench --json` records and nccl-tests / rccl-tests
logs (read by collscope.records.load), and a trace's collectives held against it."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass

from collscope.collectives.table import bus_factor
from collscope.records.bench import BenchResult
from collscope.records.trace import TraceCollectiveRecord
from collscope.trace.events import TraceInputError


@dataclass
class Curve:
    """Best busbw per size of one collective at one rank count (and where it came from)."""

    sizes: list[int]
    busbw_gbs: list[float]
    dtypes: set[str]


class Baseline:
    def __init__(self, results: list[BenchResult], sources: list[str]):
        self.sources = sources
        points: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
        dtypes: dict[tuple[str, int], set[str]] = defaultdict(set)
        for r in results:
            if r.size_bytes > 0 and r.busbw_gbs > 0 and math.isfinite(r.busbw_gbs):
                best = points[(r.collective, r.world_size)]
                best[r.size_bytes] = max(best.get(r.size_bytes, 0.0), r.busbw_gbs)
                dtypes[(r.collective, r.world_size)].add(r.dtype)
        self.curves = {key: Curve(sorted(sizes), [sizes[s] for s in sorted(sizes)],
                                  dtypes[key]) for key, sizes in points.items()}

    def rank_counts(self, collective: str) -> list[int]:
        return sorted(n for c, n in self.curves if c == collective)

    def busbw_at(self, collective: str, ranks: int, size: int) -> tuple[float | None, str]:
        """Baseline busbw at ``size`` bytes (linear in log-size between the two measured sizes
        around it; the nearest end outside them), and how it was found."""
        curve = self.curves.get((collective, ranks))
        if curve is None:
            counts = self.rank_counts(collective)
            return None, (f"baseline has no {ranks}-rank {collective}"
                          + (f" (it has {', '.join(map(str, counts))} ranks)" if counts else ""))
        sizes, values = curve.sizes, curve.busbw_gbs
        index = bisect.bisect_left(sizes, size)
        if index < len(sizes) and sizes[index] == size:
            return values[index], f"measured at this size ({ranks} ranks)"
        if index == 0 or index == len(sizes):
            nearest = 0 if index == 0 else len(sizes) - 1
            return values[nearest], (f"outside the baseline's sizes: its nearest size "
                                     f"{sizes[nearest]} B ({ranks} ranks)")
        low, high = sizes[index - 1], sizes[index]
        weight = (math.log(size) - math.log(low)) / (math.log(high) - math.log(low))
        value = values[index - 1] + weight * (values[index] - values[index - 1])
        return value, f"interpolated in log-size between {low} and {high} B ({ranks} ranks)"

    def apply(self, row: TraceCollectiveRecord) -> None:
        """Fill the row's baseline, efficiency and the step time running at baseline saves."""
        if row.busbw_gbs is None or row.size_bytes is None or not row.group_size:
            row.baseline = "no size or group size in the trace: no efficiency"
            return
        value, how = self.busbw_at(row.collective, row.group_size, row.size_bytes)
        row.baseline = how
        if value is None or value <= 0:
            return
        row.baseline_busbw_gbs = value
        row.efficiency = row.busbw_gbs / value
        baseline_us = row.size_bytes / (value / bus_factor(row.collective, row.group_size)
                                        * 1e3)
        if row.calls_per_step is not None:
            row.saving_ms_per_step = max(0.0, row.calls_per_step
                                         * (row.kernel_us_p50 - baseline_us) / 1e3)


def load_baseline(paths: list[str]) -> Baseline:
    """Bench JSONL and nccl-tests logs, any mix; a file with no results is bad input."""
    from collscope.records.load import InputError, load_input

    results: list[BenchResult] = []
    for path in paths:
        try:
            source = load_input(path)
        except InputError as error:
            raise TraceInputError(f"--baseline: {error}") from None
        if not source.results:
            raise TraceInputError(f"--baseline: {path}: no collective results in it; expected "
                                  "collscope bench --json output or an nccl-tests log")
        results.extend(source.results)
    return Baseline(results, paths)
