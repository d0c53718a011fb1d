"""The collectives table of a rank (pure): calls grouped by collective, dtype, size and process
group, with kernel-time statistics and nccl-tests' algbw / busbw."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from collscope.collectives.table import COLLECTIVES, bandwidths
from collscope.records.trace import TraceCollectiveRecord
from collscope.stats.summary import iter_stats
from collscope.trace.calls import CommCall
from collscope.trace.rank import RankTrace

GroupKey = tuple[str, str | None, int | None, str]


def _common(values: Iterable[str | None]) -> str | None:
    distinct = {v for v in values if v}
    return "/".join(sorted(distinct)) if distinct else None


def window_calls(trace: RankTrace) -> list[CommCall]:
    """The calls of the analysed steps (all calls when the trace has no steps)."""
    if not trace.steps:
        return list(trace.calls)
    numbers = {s.step for s in trace.steps}
    return [c for c in trace.calls if c.step in numbers]


def rank_window_calls(trace: RankTrace) -> list[CommCall]:
    """The calls of the rank figures' window (``RankTrace.window``): the selected steps, else
    everything issued before the last ProfilerStep, else the whole trace."""
    return [c for c in trace.calls if c.in_window]


def collective_rows(trace: RankTrace) -> list[TraceCollectiveRecord]:
    """One record per (collective, dtype, size, group) of the analysed window, the largest
    kernel time first."""
    calls = window_calls(trace)
    steps = len(trace.steps)
    step_ms = sum(s.step_ms for s in trace.steps)
    groups: dict[GroupKey, list[CommCall]] = defaultdict(list)
    for call in calls:
        groups[(call.collective, call.dtype, call.size_bytes, call.group)].append(call)
    rows = []
    for (collective, dtype, size, group), members in groups.items():
        stats = iter_stats([c.dur_us for c in members])
        group_size = next((c.group_size for c in members if c.group_size), None)
        algbw = busbw = None
        if size is not None and group_size and collective in COLLECTIVES:
            algbw, busbw = bandwidths(size, stats.p50, collective, group_size)
        total_ms = sum(c.dur_us for c in members) / 1e3
        rows.append(TraceCollectiveRecord(
            rank=trace.rank, collective=collective, dtype=dtype, size_bytes=size, group=group,
            group_size=group_size, calls=len(members),
            calls_per_step=len(members) / steps if steps else None,
            kernel_us_p50=stats.p50, kernel_us_p95=stats.p95, kernel_ms_total=total_ms,
            algbw_gbs=algbw, busbw_gbs=busbw,
            step_share_percent=100.0 * total_ms / step_ms if step_ms > 0 else None,
            algorithm=_common(c.algorithm for c in members),
            protocol=_common(c.protocol for c in members), timing=trace.timing))
    rows.sort(key=lambda r: -r.kernel_ms_total)
    return rows


def pooled_rows(result: Any) -> list[TraceCollectiveRecord]:
    """The table over all ranks at once (rank -1): every rank's calls of its window, calls per
    step averaged over the ranks' steps; the baseline applied when there is one."""
    traces = result.traces
    pooled = replace(traces[0], rank=-1,
                     calls=[c for t in traces for c in window_calls(t)],
                     steps=[s for t in traces for s in t.steps])
    rows = collective_rows(pooled)
    if result.baseline is not None:
        for row in rows:
            result.baseline.apply(row)
    return rows
