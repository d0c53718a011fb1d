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

from collscope.trace import intervals as iv
from collscope.trace.events import Event, TraceDoc, TraceInputError
from collscope.trace.kernels import (
    DTYPE_SIZES,
    canonical_trace_dtype,
    collective_from_annotation,
    decode_kernel,
    is_comm_annotation,
    kernel_kind,
)

RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "hip_runtime", "runtime", "driver"}


@dataclass
class CommCall:
    """One collective call on one rank (times in microseconds on the trace's clock)."""

    collective: str                   # nccl-tests name, or "unknown"
    dtype: str | None
    size_bytes: int | None            # nccl-tests' size convention; None: not in the trace
    group: str                        # process group name ("" unknown)
    group_size: int | None
    seq: int | None
    start_us: float
    dur_us: float
    algorithm: str | None = None
    protocol: str | None = None
    kernel: str = ""
    stream: int | None = None
    step: int | None = None           # ProfilerStep number it was issued in


@dataclass
class StepBreakdown:
    step: int                         # N of ProfilerStep#N; -1: the whole trace
    step_ms: float
    compute_ms: float
    comm_ms: float
    exposed_comm_ms: float
    overlap_percent: float | None
    idle_ms: float


@dataclass
class RankTrace:
    path: str
    rank: int
    world_size: int | None
    backend: str | None
    job: tuple[Any, ...]              # what every rank of one job shares
    timing: str                       # "gpu kernels" or "cpu spans"
    calls: list[CommCall]
    steps: list[StepBreakdown]
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


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _numel(dims: Any) -> int | None:
    """Elements of a shape [a, b] or of a tensor list [[a, b], [c]]."""
    if not isinstance(dims, list) or not dims:
        return None
    if all(isinstance(d, int) for d in dims):
        return math.prod(dims)
    sizes = [_numel(d) for d in dims if isinstance(d, list)]
    known = [s for s in sizes if s is not None]
    return sum(known) if known else None


def _largest_input(args: Any) -> int | None:
    """Elements of the largest tensor (or tensor list) among an op's recorded inputs."""
    dims = args.input_dims if args is not None else None
    if not isinstance(dims, list):
        return None
    sizes = [_numel(d) for d in dims]
    known = [s for s in sizes if s]
    return max(known) if known else None


def size_bytes(in_nelems: int | None, out_nelems: int | None, dtype: str | None) -> int | None:
    """nccl-tests' size column: the larger of input and output, which is the whole gathered
    or scattered buffer for all_gather / reduce_scatter / alltoall and the message otherwise."""
    element = DTYPE_SIZES.get(dtype or "")
    counts = [n for n in (in_nelems, out_nelems) if n is not None]
    if element is None or not counts:
        return None
    return max(counts) * element


class _Spans:
    """Communication spans per thread, to find the ones around a kernel's launch."""

    def __init__(self, events: list[Event]):
        self.by_thread: dict[tuple[Any, Any], list[Event]] = defaultdict(list)
        for event in events:
            self.by_thread[(event.pid, event.tid)].append(event)
        self.starts: dict[tuple[Any, Any], list[float]] = {}
        for key, spans in self.by_thread.items():
            spans.sort(key=lambda e: e.ts)
            self.starts[key] = [e.ts for e in spans]

    def around(self, pid: Any, tid: Any, ts: float, lookback: int = 16) -> list[Event]:
        spans = self.by_thread.get((pid, tid))
        if not spans:
            return []
        index = bisect.bisect_right(self.starts[(pid, tid)], ts)
        return [e for e in spans[max(0, index - lookback):index]
                if e.ts <= ts <= e.ts + (e.dur or 0)][::-1]


def _metadata_call(kernel: Event, spans: list[Event], fallback_group_size: int | None,
                   pg_sizes: dict[str, int]) -> CommCall:
    """A call from a comm kernel and the CPU spans around its launch (innermost first)."""
    info = decode_kernel(kernel.name)
    rpcs = [s.args for s in spans if s.name == "record_param_comms" and s.args is not None
            and s.args.collective]
    sources = [a for a in [kernel.args, *rpcs] if a is not None]
    names = [a.collective for a in sources if isinstance(a.collective, str) and a.collective]
    names += [s.name for s in spans if is_comm_annotation(s.name)]
    collective = next((c for c in map(collective_from_annotation, names) if c), None)
    collective = collective or info.collective or "unknown"
    dtype = next((d for d in (canonical_trace_dtype(a.dtype) for a in sources) if d), None)
    in_n = next((n for n in (_int(a.in_nelems) for a in sources) if n is not None), None)
    out_n = next((n for n in (_int(a.out_nelems) for a in sources) if n is not None), None)
    if in_n is None and out_n is None:
        # Older traces: no element counts, but shapes of the c10d op when shapes were recorded.
        in_n = next((n for n in (_largest_input(s.args) for s in spans
                                 if s.name.startswith("c10d::")) if n), None)
    dtype = dtype or info.dtype
    group = next((str(a.group_name) for a in sources if a.group_name is not None), "")
    group_size = next((g for g in (_int(a.group_size) for a in sources) if g), None)
    group_size = group_size or pg_sizes.get(group) or (fallback_group_size if not group
                                                       and len(pg_sizes) <= 1 else None)
    seq = next((s for s in (_int(a.seq) for a in sources) if s is not None), None)
    args = kernel.args
    return CommCall(collective=collective, dtype=dtype,
                    size_bytes=size_bytes(in_n, out_n, dtype),
                    group=group, group_size=group_size, seq=seq, start_us=kernel.ts,
                    dur_us=kernel.dur or 0.0, algorithm=info.algorithm, protocol=info.protocol,
                    kernel=kernel.name.split("(", 1)[0],
                    stream=_int(args.stream) if args is not None else None)


def _cpu_call(span: Event, world_size: int | None, pg_sizes: dict[str, int]) -> CommCall:
    collective = collective_from_annotation(span.name) or "unknown"
    args = span.args
    types = args.input_type if args is not None and isinstance(args.input_type, list) else []
    dtype = canonical_trace_dtype(types[0]) if types else None
    numel = _numel(args.input_dims[0]) if args is not None and isinstance(
        args.input_dims, list) and args.input_dims else None
    group_size = next(iter(pg_sizes.values())) if len(pg_sizes) == 1 else world_size
    if collective == "all_gather" and numel is not None and group_size:
        numel *= group_size  # the span records the rank's input; nccl-tests counts the whole
    return CommCall(collective=collective, dtype=dtype,
                    size_bytes=size_bytes(numel, None, dtype),
                    group="", group_size=group_size, seq=None, start_us=span.ts,
                    dur_us=span.dur or 0.0, kernel=span.name)


def _pg_sizes(info: dict[str, Any]) -> dict[str, int]:
    sizes = {}
    for pg in info.get("pg_config") or []:
        if isinstance(pg, dict) and _int(pg.get("pg_size")):
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


def profiler_steps(events: list[Event]) -> list[StepSpan]:
    steps = []
    for event in events:
        # CPU-side spans only: Kineto may mirror them on the GPU timeline
        # (gpu_user_annotation), which would count every step twice.
        if event.cat in ("user_annotation", "cpu_op") and event.name.startswith(
                "ProfilerStep#"):
            number = _int(event.name.removeprefix("ProfilerStep#"))
            if number is not None:
                steps.append(StepSpan(number, event.ts, event.ts + (event.dur or 0.0)))
    return sorted(steps, key=lambda s: s.start)


def select_steps(steps: list[StepSpan], selection: tuple[int | None, int | None] | None,
                 ) -> tuple[list[StepSpan], str]:
    """The steps the figures cover, and how they were chosen. Default: every step but the last
    when there are two or more (HTA's window: the profiler often cuts the last one short)."""
    if selection is not None:
        low, high = selection
        chosen = [s for s in steps if (low is None or s.number >= low)
                  and (high is None or s.number < high)]
        return chosen, f"ProfilerSteps {low if low is not None else ''}:" \
                       f"{high if high is not None else ''} ({len(chosen)} steps)"
    if len(steps) >= 2:
        return steps[:-1], (f"everything issued before the last ProfilerStep "
                            f"(#{steps[-1].number}; as HolisticTraceAnalysis), "
                            f"{len(steps) - 1} steps")
    return steps, "the whole trace (fewer than 2 ProfilerSteps)"


def _breakdown(number: int, start: float, end: float, comm: list[iv.Interval],
               compute: list[iv.Interval], busy: list[iv.Interval]) -> StepBreakdown:
    comm_u, compute_u = iv.union(comm), iv.union(compute)
    overlapped = iv.total(iv.intersection(comm_u, compute_u))
    comm_total = iv.total(comm_u)
    step_ms = (end - start) / 1e3
    return StepBreakdown(
        step=number, step_ms=step_ms, compute_ms=iv.total(compute_u) / 1e3,
        comm_ms=comm_total / 1e3, exposed_comm_ms=(comm_total - overlapped) / 1e3,
        overlap_percent=100.0 * overlapped / comm_total if comm_total > 0 else None,
        idle_ms=max(0.0, step_ms - iv.total(iv.union(busy)) / 1e3))


@dataclass
class _Part:
    """What one kind of trace (GPU or CPU) yields for the rank figures."""

    calls: list[CommCall]
    steps: list[StepBreakdown]
    comm: list[iv.Interval]          # inside the window
    compute: list[iv.Interval]
    busy: list[iv.Interval]
    shared_stream_comm_ms: float = 0.0


def _gpu_part(events: list[Event], all_steps: list[StepSpan], steps: list[StepSpan],
              selected: bool, world_size: int | None, pg_sizes: dict[str, int]) -> _Part:
    launches = {_int(e.args.correlation): e for e in events
                if e.cat in RUNTIME_CATS and e.args is not None}
    spans = _Spans([e for e in events if e.cat in ("cpu_op", "user_annotation")
                    and (e.name == "record_param_comms" or is_comm_annotation(e.name))])
    window_end = all_steps[-1].start if not selected and len(all_steps) >= 2 else None
    calls: list[CommCall] = []
    stream_kinds: dict[Any, set[str]] = defaultdict(set)
    items: list[tuple[float | None, str, iv.Interval]] = []   # (launch ts, kind, interval)
    for event in events:
        if event.cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        launch = launches.get(_int(event.args.correlation)) if event.args else None
        launched = launch.ts if launch is not None else None
        kind = kernel_kind(event.name) if event.cat == "kernel" else "memory"
        stream_kinds[_int(event.args.stream) if event.args else None].add(kind)
        items.append((launched, kind, (event.ts, event.ts + (event.dur or 0.0))))
        if kind == "comm":
            around = spans.around(launch.pid, launch.tid, launch.ts) if launch else []
            call = _metadata_call(event, around, world_size, pg_sizes)
            call.step = _step_of(steps, launched)
            calls.append(call)

    def inside(launched: float | None) -> bool:
        if selected:
            return _step_of(steps, launched) is not None
        return window_end is None or (launched is not None and launched < window_end)

    part = _Part(calls, [], [], [], [])
    for launched, kind, interval in items:
        if inside(launched):
            {"comm": part.comm, "compute": part.compute}.get(kind, part.busy).append(interval)
    by_step: dict[int, dict[str, list[iv.Interval]]] = defaultdict(lambda: defaultdict(list))
    for launched, kind, interval in items:
        number = _step_of(steps, launched)
        if number is not None:
            by_step[number][kind].append(interval)
    for step in steps:
        kinds = by_step[step.number]
        busy = [i for intervals in kinds.values() for i in intervals]
        part.steps.append(_breakdown(step.number, step.start, step.end, kinds["comm"],
                                     kinds["compute"], busy))
    shared = {s for s, kinds in stream_kinds.items() if {"comm", "compute"} <= kinds}
    part.shared_stream_comm_ms = sum(c.dur_us for c in calls if c.stream in shared) / 1e3
    return part


# What a backend runs for a c10d op when it has no collective of that name (gloo reduces and
# scatters with an all-reduce of the whole buffer, which is also nccl-tests' size).
_RUNS_AS = {"reduce_scatter": "all_reduce"}


def _name_by_issuing_op(calls: list[CommCall], ops: list[Event]) -> None:
    """Name each backend span after the c10d op that issued it (the earliest unused one of a
    matching collective that started before it): FSDP's reduce_scatter runs on gloo as a
    gloo:all_reduce span."""
    pending = sorted(((e.ts, collective_from_annotation(e.name)) for e in ops),
                     key=lambda item: item[0])
    used = [False] * len(pending)
    for call in sorted(calls, key=lambda c: c.start_us):
        for index, (ts, collective) in enumerate(pending):
            if ts > call.start_us:
                break
            if not used[index] and collective and call.collective in (
                    collective, _RUNS_AS.get(collective)):
                used[index] = True
                call.collective = collective
                break


def _cpu_part(events: list[Event], all_steps: list[StepSpan], steps: list[StepSpan],
              selected: bool, world_size: int | None, pg_sizes: dict[str, int]) -> _Part:
    comm_spans = sorted((e for e in events if e.cat in ("user_annotation", "cpu_op")
                         and e.name.startswith(("gloo:", "mpi:", "ucc:", "nccl:", "rccl:"))
                         and is_comm_annotation(e.name)), key=lambda e: e.ts)
    comm_threads = {(e.pid, e.tid) for e in comm_spans}
    # The ops that hand work to the backend (and may block on it) are not compute.
    issue = iv.union((e.ts, e.ts + (e.dur or 0.0)) for e in events
                     if e.name == "record_param_comms" or e.name.startswith("c10d::"))
    compute = iv.difference(iv.union(
        (e.ts, e.ts + (e.dur or 0.0)) for e in events
        if e.cat == "cpu_op" and (e.pid, e.tid) not in comm_threads), issue)
    calls = [_cpu_call(e, world_size, pg_sizes) for e in comm_spans]
    _name_by_issuing_op(calls, [e for e in events if e.name.startswith("c10d::")
                                and (e.pid, e.tid) not in comm_threads])
    for call in calls:
        call.step = _step_of(steps, call.start_us)
    comm = iv.union((c.start_us, c.start_us + c.dur_us) for c in calls)
    part = _Part(calls, [], comm, compute, [])
    # The same window as on GPUs: the selected steps, else everything before the last step.
    window = ((steps[0].start, steps[-1].end) if selected and steps else
              (-math.inf, all_steps[-1].start) if len(all_steps) >= 2 else None)
    if window is not None:
        part.comm, part.compute = iv.clip(comm, *window), iv.clip(compute, *window)
    for s in steps:
        step_comm, step_compute = iv.clip(comm, s.start, s.end), iv.clip(compute, s.start, s.end)
        part.steps.append(_breakdown(s.number, s.start, s.end, step_comm, step_compute,
                                     step_comm + step_compute))
    return part


def _step_of(steps: list[StepSpan], ts: float | None) -> int | None:
    if ts is None:
        return None
    return next((s.number for s in steps if s.start <= ts < s.end), None)


def analyse_doc(doc: TraceDoc, path: str, rank_hint: int | None,
                selection: tuple[int | None, int | None] | None = None) -> RankTrace:
    """Everything collscope reads from one rank's trace."""
    info = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    rank = _int(info.get("rank"))
    rank = rank if rank is not None else (rank_hint if rank_hint is not None else 0)
    world_size = _int(info.get("world_size"))
    pg_sizes = _pg_sizes(info)
    # Complete events with a numeric time (JSON has no NaN; bool is no time).
    number = (int, float)
    events = [e for e in doc.traceEvents if e.ph == "X" and type(e.name) is str
              and type(e.ts) in number and (e.dur is None or type(e.dur) in number)]
    all_steps = profiler_steps(events)
    steps, window = select_steps(all_steps, selection)
    if selection is not None and not steps:
        have = (f"it has ProfilerSteps {all_steps[0].number} to {all_steps[-1].number}"
                if all_steps else "it has no ProfilerStep spans")
        raise TraceInputError(f"--steps: {selection[0] if selection[0] is not None else ''}:"
                              f"{selection[1] if selection[1] is not None else ''} selects no "
                              f"step of {path} ({have})")
    on_gpu = any(e.cat in ("kernel", "gpu_memcpy", "gpu_memset") for e in events)
    part = (_gpu_part(events, all_steps, steps, selection is not None, world_size, pg_sizes)
            if on_gpu else _cpu_part(events, all_steps, steps, selection is not None,
                                     world_size, pg_sizes))
    first_ts = min((e.ts for e in events), default=0.0)
    last_ts = max((e.ts + (e.dur or 0.0) for e in events), default=0.0)
    whole = _breakdown(-1, first_ts, last_ts, part.comm, part.compute,
                       part.comm + part.compute + part.busy)
    return RankTrace(
        path=path, rank=rank, world_size=world_size,
        backend=info.get("backend") if isinstance(info.get("backend"), str) else None,
        job=_job_key(info), timing="gpu kernels" if on_gpu else "cpu spans",
        calls=part.calls, steps=part.steps, window=window, comm_ms=whole.comm_ms,
        compute_ms=whole.compute_ms, exposed_comm_ms=whole.exposed_comm_ms,
        overlap_percent=whole.overlap_percent,
        shared_stream_comm_ms=part.shared_stream_comm_ms, first_ts=first_ts, last_ts=last_ts,
        pg_sizes=pg_sizes, host=doc.host_name if isinstance(doc.host_name, str) else None)
