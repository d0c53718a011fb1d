"""Charts of `collscope trace` records: step breakdown bars, busbw against the baseline per
collective, and the rank x call lateness heat map; and the trace's headline (its findings and
each rank's exposed communication). Pure: records -> chart specs."""

from __future__ import annotations

import statistics
from collections import defaultdict

from collscope.records.finding import FindingRecord
from collscope.records.load import Input, Run
from collscope.records.trace import TraceCollectiveRecord, TraceRankRecord, TraceStepRecord
from collscope.report.charts import (
    PALETTE,
    BarChart,
    Chart,
    Headline,
    HeatMap,
    LineChart,
    Series,
    as_number,
    format_number,
    slug,
)

MAX_STEP_BARS = 32
MAX_HEAT_CALLS = 120


def step_chart(run: Run) -> BarChart | None:
    steps = [r for r in run.of(TraceStepRecord) if as_number(r.step_ms) is not None]
    if not steps:
        return None
    steps = steps[:MAX_STEP_BARS]
    compute_only, overlapped, exposed, idle = [], [], [], []
    for r in steps:
        comm = as_number(r.comm_ms) or 0.0
        hidden_exposed = min(max(as_number(r.exposed_comm_ms) or 0.0, 0.0), comm)
        hidden = comm - hidden_exposed
        compute_only.append(max(0.0, (as_number(r.compute_ms) or 0.0) - hidden))
        overlapped.append(hidden)
        exposed.append(hidden_exposed)
        idle.append(max(0.0, as_number(r.idle_ms) or 0.0))
    return BarChart(
        f"trace_steps_{slug(run.label)}", f"{run.label}: where each step's time goes",
        "milliseconds", [f"rank {r.rank} step {r.step}" for r in steps],
        [("compute only", PALETTE[0], compute_only),
         ("comm hidden under compute", PALETTE[2], overlapped),
         ("exposed communication", PALETTE[3], exposed), ("idle", PALETTE[7], idle)],
        note="from the profiler trace: kernel-time unions per step (CPU spans for gloo); "
             "idle = step time - busy time")


def efficiency_charts(run: Run) -> list[LineChart]:
    """Per collective: the job's busbw per size (mean over ranks) and the baseline's busbw at
    the same sizes (what the cluster measured)."""
    by_collective: dict[str, dict[int, tuple[list[float], list[float]]]] = defaultdict(dict)
    for r in run.of(TraceCollectiveRecord):
        size, busbw = as_number(r.size_bytes), as_number(r.busbw_gbs)
        base = as_number(r.baseline_busbw_gbs)
        if size is None or busbw is None or base is None or size <= 0 or busbw <= 0:
            continue
        ours, theirs = by_collective[str(r.collective)].setdefault(int(size), ([], []))
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
    ranks = sorted((r for r in run.of(TraceRankRecord) if r.late_by_call),
                   key=lambda r: r.rank)
    if len(ranks) < 2:
        return None
    matched = max(len(r.late_by_call) for r in ranks)
    calls = min(MAX_HEAT_CALLS, matched)
    values: list[list[float | None]] = [
        [(as_number(v) if i < len(r.late_by_call) else None)
         for i, v in enumerate((r.late_by_call + [None] * calls)[:calls])] for r in ranks]
    clock = (run.context.get("extra") or {}).get("clock_alignment") or {}
    clocks = (f"clocks aligned to rank {clock.get('reference_rank')}'s"
              if clock.get("applied") else "the traces' clocks")
    return HeatMap(
        f"trace_lateness_{slug(run.label)}", f"{run.label}: how late each rank started each "
        "collective", "rank", "matched call", [f"rank {r.rank}" for r in ranks],
        [str(i) for i in range(calls)], values, unit="ms", bad="high",
        note=f"start of the call on this rank minus the earliest rank's start ({clocks}); "
             "the red cells are the ranks the others waited for"
             + (f"; the first {calls} of {matched} matched calls" if matched > calls else ""))


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


def trace_headline(run: Run) -> Headline | None:
    """The trace's findings, biggest time at stake first, and each rank's exposed
    communication and overlap (the figures its findings come from)."""
    ranks = sorted(run.of(TraceRankRecord), key=lambda r: r.rank)
    if not ranks and not run.trace:
        return None
    found = sorted(run.of(FindingRecord), key=lambda f: -(as_number(f.at_stake_ms) or 0))
    warned = [f for f in found if f.level == "warn"]
    if warned:
        top = warned[0]
        stake = as_number(top.at_stake_ms)
        text = (f"{run.label}: {len(warned)} finding(s); first: {top.title}"
                + (f" (at stake {format_number(stake)} ms per step)" if stake else ""))
    else:
        text = f"{run.label}: no finding"
    details = [f"[{f.level}] {f.title}" + (
        f"; decided by: {f.test}" if f.test else "") for f in found]
    exposed = [as_number(r.exposed_comm_ms) for r in ranks]
    overlap = [as_number(r.overlap_percent) for r in ranks]
    if ranks and all(v is not None for v in exposed):
        details.append(f"exposed communication per rank: {_spread(exposed)} ms"
                       + (f", overlapped {_spread(overlap)}%"
                          if all(v is not None for v in overlap) else ""))
    late = [r for r in ranks if (as_number(r.late_calls) or 0) > 0]
    details += [f"rank {r.rank} started {r.late_calls} call(s) last; the others "
                f"waited {format_number(as_number(r.wait_caused_ms) or 0.0)} ms for it"
                for r in late]
    return Headline(text, "warn" if warned else "pass", details)


def _spread(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    lo, hi = min(known), max(known)
    return format_number(lo) if lo == hi else f"{format_number(lo)} to {format_number(hi)}"
