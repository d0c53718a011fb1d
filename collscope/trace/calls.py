"""One collective call, from the events that describe it (pure): a GPU kernel and the CPU
spans around its launch, or a backend's CPU span (gloo)."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from collscope.collectives.names import (
    DTYPE_SIZES,
    canonical_trace_dtype,
    collective_from_annotation,
)
from collscope.trace.events import Event
from collscope.trace.kernels import decode_kernel, is_comm_annotation


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
    issued_us: float | None = None    # CPU-only traces: when the c10d op handed it over
    in_window: bool = True            # inside the window the rank figures cover

    @property
    def ready_us(self) -> float:
        """When this rank was ready for the call: the kernel's start on GPUs; on gloo the
        issuing op (a span starts later when it queued behind another on a worker thread)."""
        return self.issued_us if self.issued_us is not None else self.start_us


def to_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
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


class Spans:
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


def metadata_call(kernel: Event, spans: list[Event], fallback_group_size: int | None,
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
    in_n = next((n for n in (to_int(a.in_nelems) for a in sources) if n is not None), None)
    out_n = next((n for n in (to_int(a.out_nelems) for a in sources) if n is not None), None)
    if in_n is None and out_n is None:
        # Older traces: no element counts, but shapes of the c10d op when shapes were recorded.
        in_n = next((n for n in (_largest_input(s.args) for s in spans
                                 if s.name.startswith("c10d::")) if n), None)
    dtype = dtype or info.dtype
    group = next((str(a.group_name) for a in sources if a.group_name is not None), "")
    group_size = next((g for g in (to_int(a.group_size) for a in sources) if g), None)
    group_size = group_size or pg_sizes.get(group) or (fallback_group_size if not group
                                                       and len(pg_sizes) <= 1 else None)
    seq = next((s for s in (to_int(a.seq if a.seq is not None else a.seq_lower)
                            for a in sources) if s is not None), None)
    args = kernel.args
    return CommCall(collective=collective, dtype=dtype,
                    size_bytes=size_bytes(in_n, out_n, dtype),
                    group=group, group_size=group_size, seq=seq, start_us=kernel.ts,
                    dur_us=kernel.dur or 0.0, algorithm=info.algorithm, protocol=info.protocol,
                    kernel=kernel.name.split("(", 1)[0],
                    stream=to_int(args.stream) if args is not None else None)


def cpu_call(span: Event, world_size: int | None, pg_sizes: dict[str, int]) -> CommCall:
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


# What a backend runs for a c10d op when it has no collective of that name (gloo reduces and
# scatters with an all-reduce of the whole buffer, which is also nccl-tests' size).
_RUNS_AS = {"reduce_scatter": "all_reduce"}


def name_by_issuing_op(calls: list[CommCall], ops: list[Event]) -> None:
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
                call.issued_us = ts
                break
