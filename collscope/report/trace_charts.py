"""Charts of `collscope trace` records: step breakdown bars, busbw against the baseline per
collective, and the rank x call lateness heat map (pure: records -> chart specs)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from collscope.records.load import Input, Run
from collscope.report.charts import (
    PALETTE,
    BarChart,
    Chart,
    HeatMap,
    LineChart,
    Series,
    as_number,
    slug,
)

MAX_STEP_BARS = 32
MAX_HEAT_CALLS = 120


def _of(run: Run, kind: str) -> list[dict[str, Any]]:
    return [r for r in run.trace if r.get("kind") == kind]


def step_chart(run: Run) -> BarChart | None:
    steps = [r for r in _of(run, "trace_step") if as_number(r.get("step_ms")) is not None]
    if not steps:
        return None
    steps = steps[:MAX_STEP_BARS]
    compute_only, overlapped, exposed, idle = [], [], [], []
    for r in steps:
        comm = as_number(r.get("comm_ms")) or 0.0
        hidden_exposed = min(max(as_number(r.get("exposed_comm_ms")) or 0.0, 0.0), comm)
        hidden = comm - hidden_exposed
        compute_only.append(max(0.0, (as_number(r.get("compute_ms")) or 0.0) - hidden))
        overlapped.append(hidden)
        exposed.append(hidden_exposed)
        idle.append(max(0.0, as_number(r.get("idle_ms")) or 0.0))
    return BarChart(
        f"trace_steps_{slug(run.label)}", f"{run.label}: where each step's time goes",
        "milliseconds", [f"rank {r.get('rank')} step {r.get('step')}" for r in steps],
        [("compute only", PALETTE[0], compute_only),
         ("comm hidden under compute", PALETTE[2], overlapped),
         ("exposed communication", PALETTE[3], exposed), ("idle", PALETTE[7], idle)],
        note="from the profiler trace: kernel-time unions per step (CPU spans for gloo); "
             "idle = step time - busy time")


def efficiency_charts(run: Run) -> list[LineChart]:
    """Per collective: the job's busbw per size (mean over ranks) and the baseline's busbw at
    the same sizes (what the cluster measured)."""
    by_collective: dict[str, dict[int, tuple[list[float], list[float]]]] = defaultdict(dict)
    for r in _of(run, "trace_collective"):
        size, busbw = as_number(r.get("size_bytes")), as_number(r.get("busbw_gbs"))
        base = as_number(r.get("baseline_busbw_gbs"))
        if size is None or busbw is None or base is None or size <= 0 or busbw <= 0:
            continue
        ours, theirs = by_collective[str(r.get("collective"))].setdefault(int(size), ([], []))
        ours.append(busbw)
        theirs.append(base)
    charts = []
    for collective, sizes in sorted(by_collective.items()):
        ordered = sorted(sizes)
        job = [(float(s), statistics.mean(sizes[s][0])) for s in ordered]
        baseline = [(float(s), statistics.mean(sizes[s][1])) for s in ordered]
        tips = [f"{int(s)} B: {b:.3g} GB/s, {100 * b / c:.0f}% of the baseline's {c:.3g}"
                for (s, b), (_, c) in zip(job, baseline)]
        charts.append(LineChart(
            f"trace_efficiency_{slug(run.label)}_{slug(collective)}",
            f"{run.label}: {collective} busbw, job vs cluster baseline", "message size",
            "busbw (GB/s)",
            [Series("job (trace)", job, PALETTE[3], key="job", tips=tips),
             Series("baseline (bench)", baseline, PALETTE[0], dashed=True, marker="square",
                    key="baseline")],
            note="job: p50 kernel time per call, nccl-tests busbw, mean over ranks; baseline: "
                 "the --baseline busbw at the same size and rank count"))
    return charts


def lateness_map(run: Run) -> HeatMap | None:
    ranks = sorted((r for r in _of(run, "trace_rank") if r.get("late_by_call")),
                   key=lambda r: r.get("rank", 0))
    if len(ranks) < 2:
        return None
    calls = min(MAX_HEAT_CALLS, max(len(r["late_by_call"]) for r in ranks))
    values: list[list[float | None]] = [
        [(as_number(v) if i < len(r["late_by_call"]) else None)
         for i, v in enumerate((r["late_by_call"] + [None] * calls)[:calls])] for r in ranks]
    clock = (run.context.get("extra") or {}).get("clock_alignment") or {}
    clocks = (f"clocks aligned to rank {clock.get('reference_rank')}'s"
              if clock.get("applied") else "the traces' clocks")
    return HeatMap(
        f"trace_lateness_{slug(run.label)}", f"{run.label}: how late each rank started each "
        "collective", "rank", "matched call", [f"rank {r.get('rank')}" for r in ranks],
        [str(i) for i in range(calls)], values, unit="ms", bad="high",
        note=f"start of the call on this rank minus the earliest rank's start ({clocks}); "
             "the dark cells are the ranks the others waited for")


def trace_charts(inputs: list[Input]) -> list[Chart]:
    charts: list[Chart] = []
    for source in inputs:
        for run in source.runs:
            if not run.trace:
                continue
            bars = step_chart(run)
            heat = lateness_map(run)
            charts += [c for c in (bars, heat) if c is not None]
            charts += efficiency_charts(run)
    return charts
