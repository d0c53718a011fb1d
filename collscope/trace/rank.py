"""One rank's trace: its communication calls, its steps and its overlap (pure over events).

GPU traces: every communication kernel is one call; its launch (the runtime event with the
same correlation id) finds the record_param_comms op and the ``nccl:*`` / ``c10d::*`` spans
around it on the launching thread, which name and size the collective where the kernel's own
args do not. CPU-only traces (gloo): the backend's ``gloo:*`` spans are the calls, timed by
their CPU span, and compute is the time covered by other threads' CPU ops.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from collscope.records.trace import TraceStepRecord
from collscope.trace import intervals as iv
from collscope.trace.calls import (
    CommCall,
    Spans,
    cpu_call,
    metadata_call,
    name_by_issuing_op,
    to_int,
)
from collscope.trace.collect import CpuEvents, RankEvents
from collscope.trace.events import TraceDoc, TraceInputError


@dataclass
class RankTrace:
    path: str
    rank: int
    world_size: int | None
    backend: str | None
    job: tuple[Any, ...]              # what every rank of one job shares
    timing: str                       # "gpu kernels" or "cpu spans"
    calls: list[CommCall]
    steps: list[TraceStepRecord]      # its own records (the --json trace_step records)
    window: str                       # which part of the trace the rank figures cover
    comm_ms: float
    compute_ms: float
    exposed_comm_ms: float
    overlap_percent: float | None
    shared_stream_comm_ms: float      # comm kernel time on streams that also run compute
    first_ts: float
    last_ts: float
    pg_sizes: dict[str, int] = field(default_factory=dict)
    host: str | None = None
    # Where compute runs, the whole trace (disjoint, sorted): which part of given calls runs
    # with no compute (the small-all-reduce finding's share of the exposed time).
    compute_busy: list[iv.Interval] = field(default_factory=list)


def _pg_sizes(info: dict[str, Any]) -> dict[str, int]:
    sizes = {}
    for pg in info.get("pg_config") or []:
        if isinstance(pg, dict) and to_int(pg.get("pg_size")):
            sizes[str(pg.get("pg_name"))] = int(pg["pg_size"])
    return sizes


def _job_key(info: dict[str, Any]) -> tuple[Any, ...]:
    groups = tuple(sorted((str(pg.get("pg_name")), tuple(pg.get("ranks") or ()))
                          for pg in info.get("pg_config") or [] if isinstance(pg, dict)))
    return (info.get("world_size"), info.get("backend"), groups)


@dataclass
class StepSpan:
    number: int
    start: float
    end: float


def profiler_steps(collected: RankEvents) -> list[StepSpan]:
    return sorted((StepSpan(*step) for step in collected.steps), key=lambda s: s.start)


def _count(steps: int) -> str:
    return f"{steps} step" + ("" if steps == 1 else "s")


def select_steps(steps: list[StepSpan], selection: tuple[int | None, int | None] | None,
                 ) -> tuple[list[StepSpan], str]:
    """The steps the figures cover, and how they were chosen. Default: every step but the last
    when there are two or more (HTA's window: the profiler often cuts the last one short)."""
    if selection is not None:
        low, high = selection
        chosen = [s for s in steps if (low is None or s.number >= low)
                  and (high is None or s.number < high)]
        return chosen, f"ProfilerSteps {low if low is not None else ''}:" \
                       f"{high if high is not None else ''} ({_count(len(chosen))})"
    if len(steps) >= 2:
        return steps[:-1], (f"everything issued before the last ProfilerStep "
                            f"(#{steps[-1].number}; as HolisticTraceAnalysis), "
                            f"{_count(len(steps) - 1)}")
    return steps, "the whole trace (fewer than 2 ProfilerSteps)"


def _breakdown(rank: int, number: int, start: float, end: float, comm: list[iv.Interval],
               compute: list[iv.Interval], busy: list[iv.Interval]) -> TraceStepRecord:
    """Step ``number`` of ``rank`` (-1: the whole trace) from what ran in it."""
    comm_u, compute_u = iv.union(comm), iv.union(compute)
    overlapped = iv.total(iv.intersection(comm_u, compute_u))
    comm_total = iv.total(comm_u)
    step_ms = (end - start) / 1e3
    return TraceStepRecord(
        rank=rank, step=number, step_ms=step_ms, compute_ms=iv.total(compute_u) / 1e3,
        comm_ms=comm_total / 1e3, exposed_comm_ms=(comm_total - overlapped) / 1e3,
        overlap_percent=100.0 * overlapped / comm_total if comm_total > 0 else None,
        idle_ms=max(0.0, step_ms - iv.total(iv.union(busy)) / 1e3))


@dataclass
class _Part:
    """What one kind of trace (GPU or CPU) yields for the rank figures."""

    calls: list[CommCall]
    steps: list[TraceStepRecord]
    comm: list[iv.Interval]          # inside the window
    compute: list[iv.Interval]
    busy: list[iv.Interval]
    shared_stream_comm_ms: float = 0.0
    compute_all: list[iv.Interval] = field(default_factory=list)   # union, whole trace


def _gpu_part(collected: RankEvents, all_steps: list[StepSpan], steps: list[StepSpan],
              selected: bool, rank: int, world_size: int | None,
              pg_sizes: dict[str, int]) -> _Part:
    launches = collected.launches
    spans = Spans(collected.comm_annotations)
    window_end = all_steps[-1].start if not selected and len(all_steps) >= 2 else None
    step_of = _StepIndex(steps).of
    calls: list[CommCall] = []
    launched_at: list[float | None] = []       # per call, its launch (the window's clock)
    items: list[tuple[float | None, str, iv.Interval]] = []   # (launch ts, kind, interval)
    for kernel in collected.kernels:
        launch = launches.get(kernel.launch_key)
        launched = launch[0] if launch is not None else None
        items.append((launched, kernel.kind, (kernel.start, kernel.end)))
        if kernel.event is not None:
            around = spans.around(launch[1], launch[2], launch[0]) if launch else []
            call = metadata_call(kernel.event, around, world_size, pg_sizes)
            call.step = step_of(launched)
            calls.append(call)
            launched_at.append(launched)

    def inside(launched: float | None) -> bool:
        if selected:
            return step_of(launched) is not None
        return window_end is None or (launched is not None and launched < window_end)

    for call, launched in zip(calls, launched_at):
        call.in_window = inside(launched)

    part = _Part(calls, [], [], [], [])
    for launched, kind, interval in items:
        if inside(launched):
            {"comm": part.comm, "compute": part.compute}.get(kind, part.busy).append(interval)
    # Per step, what the GPU ran during the step's span: each kind's union clipped to it. Not
    # the kernels launched in the step: the GPU runs behind the CPU, and a step's kernels can
    # run long after its span (the ns_resolution fixture's step 101: 93.7 ms of compute
    # launched in a 35.1 ms step), which made compute exceed the step and idle meaningless.
    by_kind: dict[str, list[iv.Interval]] = defaultdict(list)
    for _, kind, interval in items:
        by_kind[kind].append(interval)
    clip = {kind: iv.clipper(iv.union(intervals)) for kind, intervals in by_kind.items()}
    for step in steps:
        kinds = {kind: cut(step.start, step.end) for kind, cut in clip.items()}
        busy = [i for intervals in kinds.values() for i in intervals]
        part.steps.append(_breakdown(rank, step.number, step.start, step.end,
                                     kinds.get("comm", []), kinds.get("compute", []), busy))
    part.compute_all = iv.union(by_kind["compute"])
    shared = {s for s, kinds in collected.stream_kinds.items() if {"comm", "compute"} <= kinds}
    part.shared_stream_comm_ms = sum(c.dur_us for c in calls if c.stream in shared) / 1e3
    return part


def _cpu_part(cpu: CpuEvents, all_steps: list[StepSpan], steps: list[StepSpan],
              selected: bool, rank: int, world_size: int | None,
              pg_sizes: dict[str, int]) -> _Part:
    comm_spans = sorted(cpu.comm_spans, key=lambda e: e.ts)
    comm_threads = {(e.pid, e.tid) for e in comm_spans}
    # The ops that hand work to the backend (and may block on it) are not compute.
    issue = cpu.issue.result()
    compute = iv.difference(iv.union(
        interval for thread, busy in cpu.busy_by_thread.items()
        if thread not in comm_threads for interval in busy.result()), issue)
    step_of = _StepIndex(steps).of
    calls = [cpu_call(e, world_size, pg_sizes) for e in comm_spans]
    name_by_issuing_op(calls, [e for e in cpu.c10d_ops if (e.pid, e.tid) not in comm_threads])
    for call in calls:
        call.step = step_of(call.start_us)
    comm = iv.union((c.start_us, c.start_us + c.dur_us) for c in calls)
    part = _Part(calls, [], comm, compute, [], compute_all=compute)
    # The same window as on GPUs: the selected steps, else everything before the last step.
    window = ((steps[0].start, steps[-1].end) if selected and steps else
              (-math.inf, all_steps[-1].start) if len(all_steps) >= 2 else None)
    if window is not None:
        part.comm, part.compute = iv.clip(comm, *window), iv.clip(compute, *window)
        for call in calls:
            call.in_window = window[0] <= call.start_us < window[1]
    for s in steps:
        step_comm, step_compute = iv.clip(comm, s.start, s.end), iv.clip(compute, s.start, s.end)
        part.steps.append(_breakdown(rank, s.number, s.start, s.end, step_comm, step_compute,
                                     step_comm + step_compute))
    return part


class _StepIndex:
    """Which step a time falls in (steps are disjoint and sorted), by bisection: traces hold
    hundreds of thousands of kernels."""

    def __init__(self, steps: list[StepSpan]):
        self.steps = steps
        self.starts = [s.start for s in steps]

    def of(self, ts: float | None) -> int | None:
        if ts is None:
            return None
        index = bisect.bisect_right(self.starts, ts) - 1
        if index >= 0 and ts < self.steps[index].end:
            return self.steps[index].number
        return None


def analyse_doc(doc: TraceDoc, path: str, rank_hint: int | None,
                selection: tuple[int | None, int | None] | None = None) -> RankTrace:
    """Everything collscope reads from one rank's trace, decoded whole."""
    collected = RankEvents()
    collected.add(doc.traceEvents)
    return analyse_events(collected, doc, path, rank_hint, selection)


def analyse_events(collected: RankEvents, doc: TraceDoc, path: str, rank_hint: int | None,
                   selection: tuple[int | None, int | None] | None = None) -> RankTrace:
    """Everything collscope reads from one rank's trace: its events as collected, the rest of
    the file from ``doc`` (its events are not read here)."""
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    rank = to_int(info.get("rank"))
    rank = rank if rank is not None else (rank_hint if rank_hint is not None else 0)
    world_size = to_int(info.get("world_size"))
    pg_sizes = _pg_sizes(info)
    all_steps = profiler_steps(collected)
    steps, window = select_steps(all_steps, selection)
    if selection is not None and not steps:
        have = (f"it has ProfilerSteps {all_steps[0].number} to {all_steps[-1].number}"
                if all_steps else "it has no ProfilerStep spans")
        raise TraceInputError(f"--steps: {selection[0] if selection[0] is not None else ''}:"
                              f"{selection[1] if selection[1] is not None else ''} selects no "
                              f"step of {path} ({have})")
    on_gpu = collected.on_gpu
    part = (_cpu_part(collected.cpu, all_steps, steps, selection is not None, rank, world_size,
                      pg_sizes) if collected.cpu is not None
            else _gpu_part(collected, all_steps, steps, selection is not None, rank, world_size,
                           pg_sizes))
    first_ts = collected.first_ts if collected.first_ts is not None else 0.0
    last_ts = collected.last_ts if collected.last_ts is not None else 0.0
    whole = _breakdown(rank, -1, first_ts, last_ts, part.comm, part.compute,
                       part.comm + part.compute + part.busy)
    return RankTrace(
        path=path, rank=rank, world_size=world_size,
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        job=_job_key(info), timing="gpu kernels" if on_gpu else "cpu spans",
        calls=part.calls, steps=part.steps, window=window, comm_ms=whole.comm_ms,
        compute_ms=whole.compute_ms, exposed_comm_ms=whole.exposed_comm_ms,
        overlap_percent=whole.overlap_percent,
        shared_stream_comm_ms=part.shared_stream_comm_ms, first_ts=first_ts, last_ts=last_ts,
        pg_sizes=pg_sizes, host=doc.host_name if isinstance(doc.host_name, str) else None,
        compute_busy=part.compute_all)
